// Command dgserver serves the batch HTTP API of the David & Goliath
// environment (docs/api.md).
//
//	dgserver                                  defaults (configs/default.yaml, embedded)
//	dgserver --addr 127.0.0.1:0               any free port; prints "listening on http://..."
//	dgserver --addr unix:/tmp/dg.sock         a Unix socket (owner-only); prints "listening on unix:/tmp/dg.sock"
//	dgserver --config configs/prod.yaml       a file; DGSERVER_* variables override it
//
// It stops gracefully on SIGTERM, SIGINT or SIGHUP (a closed terminal).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/davidgoliath/dgenv/env/games"
	"github.com/davidgoliath/dgenv/env/policy"
	"github.com/davidgoliath/dgenv/env/spiel"
	"github.com/davidgoliath/dgenv/server"
)

// extraGames register games beyond games.Default(): empty in a plain
// build; the "testgame" build tag adds the test game (testgame.go).
var extraGames []func(*spiel.Registry) error

// stopSignals end the server gracefully (drain, then exit). SIGHUP is one
// of them: a closed terminal or a supervisor's reload must never kill the
// process with requests in flight.
var stopSignals = []os.Signal{syscall.SIGTERM, os.Interrupt, syscall.SIGHUP}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Environ(), os.Stdout, os.Stderr))
}

// run starts the server and blocks until ctx ends and the server has shut
// down; it returns the exit status.
func run(ctx context.Context, args, environ []string, stdout, stderr io.Writer) int {
	cfg, err := loadConfig(args, environ)
	if errors.Is(err, pflag.ErrHelp) {
		fmt.Fprintln(stdout, err)
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "dgserver:", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	reg := games.Default()
	for _, add := range extraGames {
		if err := add(reg); err != nil {
			fmt.Fprintln(stderr, "dgserver:", err)
			return 2
		}
	}
	policies, err := loadPolicies(cfg.Policies, reg)
	if err != nil {
		fmt.Fprintln(stderr, "dgserver:", err)
		return 2
	}
	srv, err := server.New(cfg, log, server.WithGames(reg), server.WithPolicies(policies))
	if err != nil {
		fmt.Fprintln(stderr, "dgserver:", err)
		return 2
	}
	ln, where, err := listen(cfg.Addr)
	if err != nil {
		srv.Close()
		fmt.Fprintln(stderr, "dgserver:", err)
		return 1
	}
	fmt.Fprintf(stdout, "listening on %s\n", where)
	if err := srv.Serve(ctx, ln); err != nil {
		fmt.Fprintln(stderr, "dgserver:", err)
		return 1
	}
	return 0
}

// listen opens the configured address and says where it listens, as a
// client would name it: "http://host:port" or "unix:PATH". A Unix socket is
// made owner-only (0600); a socket file left by a server that is gone is
// replaced, while one that still answers, or any other file, is an error.
func listen(addr string) (net.Listener, string, error) {
	network, address := server.ListenAddr(addr)
	if network != "unix" {
		ln, err := net.Listen(network, address)
		if err != nil {
			return nil, "", err
		}
		return ln, "http://" + ln.Addr().String(), nil
	}
	if fi, err := os.Lstat(address); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, "", fmt.Errorf("addr %s: %s exists and is not a socket", addr, address)
		}
		if c, err := net.Dial("unix", address); err == nil {
			c.Close()
			return nil, "", fmt.Errorf("addr %s: another server is listening on %s", addr, address)
		}
		if err := os.Remove(address); err != nil {
			return nil, "", fmt.Errorf("addr %s: removing the stale socket: %w", addr, err)
		}
	}
	ln, err := net.Listen("unix", address)
	if err != nil {
		return nil, "", err
	}
	if err := os.Chmod(address, 0o600); err != nil {
		ln.Close()
		return nil, "", fmt.Errorf("addr %s: %w", addr, err)
	}
	return ln, "unix:" + address, nil // the listener removes the file when closed
}

// loadPolicies reads policies.dir once at start-up through an os.Root, so
// no name or link can lead outside it, checking pins. Any bad file stops
// start-up with its name.
func loadPolicies(cfg server.PoliciesConfig, reg *spiel.Registry) (map[string]*policy.Policy, error) {
	if cfg.Dir == "" {
		return nil, nil
	}
	root, err := os.OpenRoot(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("policies.dir: %w", err)
	}
	defer root.Close()
	return policy.LoadFS(reg, root.FS(), cfg.Pins)
}
