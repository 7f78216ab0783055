// Command dgserver serves the batch HTTP API of the David & Goliath
// environment (docs/api.md).
//
//	dgserver                                  defaults (configs/default.yaml, embedded)
//	dgserver --addr 127.0.0.1:0               any free port; prints "listening on http://..."
//	dgserver --config configs/prod.yaml       a file; DGSERVER_* variables override it
//
// It stops gracefully on SIGTERM or SIGINT.
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

	"github.com/davidgoliath/dgenv/env/policy"
	"github.com/davidgoliath/dgenv/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
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
	policies, err := loadPolicies(cfg.Policies)
	if err != nil {
		fmt.Fprintln(stderr, "dgserver:", err)
		return 2
	}
	srv, err := server.New(cfg, log, server.WithPolicies(policies))
	if err != nil {
		fmt.Fprintln(stderr, "dgserver:", err)
		return 2
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		srv.Close()
		fmt.Fprintln(stderr, "dgserver:", err)
		return 1
	}
	fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr())
	if err := srv.Serve(ctx, ln); err != nil {
		fmt.Fprintln(stderr, "dgserver:", err)
		return 1
	}
	return 0
}

// loadPolicies reads policies.dir once at start-up through an os.Root, so
// no name or link can lead outside it, checking pins. Any bad file stops
// start-up with its name.
func loadPolicies(cfg server.PoliciesConfig) (map[string]*policy.Policy, error) {
	if cfg.Dir == "" {
		return nil, nil
	}
	root, err := os.OpenRoot(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("policies.dir: %w", err)
	}
	defer root.Close()
	return policy.LoadFS(root.FS(), cfg.Pins)
}
