// Command dgsoak is a soak test of the batch server: it starts bin/dgserver
// on loopback, runs many clients against it for a while, kills the server
// with SIGKILL half-way and starts it again on the same address, and checks
// that nothing was lost or applied twice.
//
//	dgsoak                                   16 clients for 10 minutes
//	dgsoak -duration 20s -clients 8          a short run
//	dgsoak -server bin/dgserver -seed 7      another binary, other random choices
//
// Each client loops: create a session (random players, size, deals,
// opponent; msgpack or JSON; with a request_id; one create in four first
// sent and dropped, then sent again with the same request_id), reset it, step it with
// random legal actions, and now and then send an illegal action (422, nothing
// changes), read a record, or abort a request (the connection dropped
// half-way through the body, or right after the whole request is sent so
// the answer is lost; the client then sends the same request again with the
// same seq and must get the next batch exactly once), then delete it. Every
// game that ends is checked: its record, replayed move by move with the env
// package from the dealt hands, must end with the scores the client saw
// with done. After the restart every session answers 404 and the clients
// create new ones.
//
// It prints the requests sent, the error answers by code, transport errors,
// the games replayed and the server's peak resident memory, and exits 1 if
// any check failed, any answer was a 5xx, or an error came that the client
// did not provoke.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dgsoak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	fs.StringVar(&c.server, "server", "bin/dgserver", "server binary to start (on 127.0.0.1, a free port)")
	fs.DurationVar(&c.duration, "duration", 10*time.Minute, "how long the clients run")
	fs.IntVar(&c.clients, "clients", 16, "concurrent clients")
	fs.IntVar(&c.maxEnvs, "max-envs", 32, "largest num_envs of a session (each session draws 1..max-envs)")
	fs.Float64Var(&c.restartAt, "restart-at", 0.5, "kill -9 and restart the server at this fraction of the duration (0: never)")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the clients' random choices")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if c.clients < 1 || c.maxEnvs < 1 || c.duration <= 0 || c.restartAt < 0 || c.restartAt >= 1 {
		fmt.Fprintln(stderr, "dgsoak: -clients and -max-envs must be >= 1, -duration > 0, -restart-at in [0, 1)")
		return 2
	}
	rep, err := soak(ctx, c, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "dgsoak:", err)
		return 1
	}
	rep.print(stdout)
	if !rep.ok() {
		fmt.Fprintln(stderr, "dgsoak: FAILED")
		return 1
	}
	return 0
}
