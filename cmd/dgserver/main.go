// Command dgserver serves the batch HTTP API of the David & Goliath
// environment (docs/api.md).
//
//	dgserver                                  defaults (configs/default.yaml, embedded)
//	dgserver --addr 127.0.0.1:0               any free port; prints "listening on http://..."
//	dgserver --addr unix:/tmp/dg.sock         a Unix socket (owner-only); prints "listening on unix:/tmp/dg.sock"
//	dgserver --config configs/prod.yaml       a file; DGSERVER_* variables override it
//	DGSERVER_TLS_CERT_FILE=c.pem DGSERVER_TLS_KEY_FILE=k.pem dgserver   HTTPS; prints "listening on https://..."
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
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/games"
	"github.com/davidgoliath/dgenv/env/policy"
	"github.com/davidgoliath/dgenv/server"
)

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
	reg := games.Default() // with -tags testgame, the test games too
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
	if limit, ok := memoryLimit(cfg, environ); ok {
		debug.SetMemoryLimit(limit)
		log.Info("soft memory limit tied to limits.memory_budget", "bytes", limit)
	}
	ln, where, err := listen(cfg.Addr)
	if err != nil {
		srv.Close()
		fmt.Fprintln(stderr, "dgserver:", err)
		return 1
	}
	if cfg.TLS.Enabled() {
		where = "https://" + strings.TrimPrefix(where, "http://")
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
// owner-only (0600) from the moment it appears at PATH (listenUnix); a
// socket file left by a server that is gone is replaced, while one that
// still answers, or any other file, is an error.
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
	ln, err := listenUnix(address)
	if err != nil {
		return nil, "", fmt.Errorf("addr %s: %w", addr, err)
	}
	return ln, "unix:" + address, nil
}

// listenUnix listens on a Unix socket at path that nobody but the owner can
// ever connect to. bind(2) creates the file with the process's umask (0777
// under umask 000), and a chmod after it leaves a window in which another
// user may connect; changing the umask is process-wide. So the socket is
// bound inside a fresh 0700 directory next to path (nobody else can reach
// it there), made 0600, and only then renamed to path. The listener
// removes path when closed.
func listenUnix(path string) (net.Listener, error) {
	tmp, err := os.MkdirTemp(filepath.Dir(path), server.SocketTempPrefix)
	if err != nil {
		return nil, fmt.Errorf("a private directory for the socket: %w", err)
	}
	defer os.Remove(tmp) // empty once the socket is renamed out of it
	bound := filepath.Join(tmp, "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: bound, Net: "unix"})
	if err != nil {
		return nil, err
	}
	ln.SetUnlinkOnClose(false) // it unlinks the path it was bound to, not path
	fail := func(err error) (net.Listener, error) {
		ln.Close()
		os.Remove(bound)
		return nil, err
	}
	if err := os.Chmod(bound, 0o600); err != nil {
		return fail(err)
	}
	if err := os.Rename(bound, path); err != nil {
		return fail(err)
	}
	return &unixListener{UnixListener: ln, path: path}, nil
}

// unixListener removes its socket file when closed.
type unixListener struct {
	*net.UnixListener
	path string
	once sync.Once
}

func (l *unixListener) Close() error {
	err := l.UnixListener.Close()
	l.once.Do(func() { os.Remove(l.path) })
	return err
}

// memoryLimit is the Go runtime's soft memory limit for cfg (after
// start-up: policies loaded): server.MemoryLimit of limits.memory_budget.
// A GOMEMLIMIT in environ is the user's choice: false, nothing to set.
func memoryLimit(cfg server.Config, environ []string) (int64, bool) {
	for _, kv := range environ {
		if strings.HasPrefix(kv, "GOMEMLIMIT=") {
			return 0, false
		}
	}
	return server.MemoryLimit(cfg.Limits.MemoryBudget), true
}

// loadPolicies reads policies.dir once at start-up through an os.Root, so
// no name or link can lead outside it, checking pins. Any bad file stops
// start-up with its name.
func loadPolicies(cfg server.PoliciesConfig, reg *env.Registry) (map[string]*policy.Policy, error) {
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
