// Command dgsoak is a soak test of the batch server: it starts bin/dgserver
// on loopback, runs many clients against it for a while, kills the server
// with SIGKILL half-way and starts it again on the same address, and checks
// that nothing was lost or applied twice.
//
//	dgsoak                                   16 clients for 10 minutes
//	dgsoak -duration 20s -clients 8          a short run
//	dgsoak -server bin/dgserver -seed 7      another binary, other random choices
//	dgsoak -game duel                        only the duel's sessions
//	dgsoak -mode churn                       memory: 16 clients create and delete the largest sessions for 2 minutes
//	dgsoak -mode lockout                     1,100 idle and 300 slow connections, then an authenticated request
//
// Each client loops: create a session (a game drawn from -game, every
// game the server knows by default; random players, size, deals,
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
	"strings"
	"syscall"
	"time"

	"github.com/davidgoliath/dgenv/env/games"
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
	gameList := fs.String("game", "", "soak: the games the sessions play, comma-separated registry names, one drawn per session (empty: every game the server knows)")
	mode := fs.String("mode", "soak", "soak; churn (memory under create/delete churn: -clients, -duration, -envs, -players, -deals, -budget); lockout (-idle, -slow, -token)")
	var ch churnConfig
	fs.IntVar(&ch.numEnvs, "envs", 65536, "churn: num_envs of every session (65536: the default max_envs_per_session)")
	fs.IntVar(&ch.players, "players", 4, "churn: players of every session")
	fs.IntVar(&ch.deals, "deals", 4, "churn: deals of every session")
	fs.Int64Var(&ch.budget, "budget", 2<<30, "churn: the server's limits.memory_budget in bytes")
	fs.StringVar(&ch.policies, "policies", "", "churn: the server's policies.dir (make run serves policies/)")
	var lo lockoutConfig
	fs.IntVar(&lo.idle, "idle", 1100, "lockout: idle connections (each asks /v1/healthz once, then sits)")
	fs.IntVar(&lo.slow, "slow", 300, "lockout: slow connections (a 60,000-byte body, a byte every -slow-every)")
	fs.DurationVar(&lo.slowEvery, "slow-every", 3*time.Second, "lockout: the slow bodies' pace")
	fs.StringVar(&lo.token, "token", "s3cret", `lockout: the server's auth_token; "" runs it without one`)
	fs.IntVar(&lo.maxConns, "max-conns", 0, "lockout: the server's http.max_conns (0: its default, 1024)")
	fs.DurationVar(&lo.wait, "wait", 5*time.Second, "lockout: how long the connections sit before the request")
	fs.DurationVar(&lo.timeout, "timeout", 60*time.Second, "lockout: how long the request may take")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	switch *mode {
	case "soak":
	case "churn":
		ch.server, ch.duration, ch.clients = c.server, c.duration, c.clients
		if !isSet(fs, "duration") {
			ch.duration = 2 * time.Minute // the figure
		}
		if ch.clients < 1 || ch.numEnvs < 1 || ch.duration <= 0 {
			fmt.Fprintln(stderr, "dgsoak: -clients and -envs must be >= 1, -duration > 0")
			return 2
		}
		rep, err := churn(ctx, ch, stderr)
		if err != nil {
			fmt.Fprintln(stderr, "dgsoak:", err)
			return 1
		}
		rep.print(stdout)
		if !rep.ok() {
			fmt.Fprintln(stderr, "dgsoak: FAILED: peak RSS above 1.25x the budget, or RSS not under 2x the baseline within 30 s of the last delete")
			return 1
		}
		return 0
	case "lockout":
		lo.server = c.server
		rep, err := lockout(ctx, lo, stderr)
		if err != nil {
			fmt.Fprintln(stderr, "dgsoak:", err)
			return 1
		}
		rep.print(stdout)
		if !rep.answered || rep.status != 200 {
			fmt.Fprintln(stderr, "dgsoak: FAILED: the authenticated request was not answered 200")
			return 1
		}
		return 0
	default:
		fmt.Fprintf(stderr, "dgsoak: unknown -mode %q (soak, churn, lockout)\n", *mode)
		return 2
	}
	if *gameList != "" {
		for _, name := range strings.Split(*gameList, ",") {
			name = strings.TrimSpace(name)
			if name == "" {
				fmt.Fprintf(stderr, "dgsoak: -game %q: an empty game name\n", *gameList)
				return 2
			}
			typ, err := games.Default().Lookup(name)
			if err != nil {
				fmt.Fprintln(stderr, "dgsoak: -game:", err)
				return 2
			}
			c.games = append(c.games, typ.Name)
		}
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

// isSet reports whether the flag was given.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
