// Command dgbench measures env-steps per second and prints one line
// "steps_per_sec=<number>" (plus details on stderr-free extra fields).
//
//	dgbench -players 4 -envs 4096 -seconds 5            in-process random legal play
//	dgbench -mode http -envs 4096 -seconds 5            the same over the batch HTTP API
//	dgbench -game duel -envs 4096 -seconds 5            another game of the registry
//	dgbench -game duel -param max_rounds=50             a game's parameter (repeat -param)
//
// It reaches games only through the registry (env/games): the default game
// is the registry's, sizes come from the game (or the session's spec).
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/games"
)

type config struct {
	mode     string
	game     string // a game of games.Default(); "" is its default
	players  int    // 0: the game's default; else its "players", if it has one
	deals    int    // 0: the game's default; else its "deals", if it has one
	params   params // -param name=value, any game's
	envs     int
	seconds  float64
	workers  int
	seed     uint64
	learner  string // "all" or comma-separated seats
	opp      string
	addr     string // http mode: target server; empty starts one in-process
	token    string
	format   string
	network  string // http mode, in-process server: tcp or unix
	packing  string // http mode: none or bits
	sessions int    // http mode: sessions the envs are split over
}

// modes maps -mode values to their runners; other files add theirs in init.
var modes = map[string]func(config) error{"inproc": runInProc}

func main() {
	var c config
	flag.StringVar(&c.mode, "mode", "inproc", "what to measure: inproc (engine in this process) or http")
	reg := games.Default()
	flag.StringVar(&c.game, "game", reg.Names()[0], "the game: "+strings.Join(reg.Names(), ", ")+"; -players and -deals set the game's parameters of those names if it has them")
	flag.IntVar(&c.players, "players", 0, `players per game: the game's parameter "players", if it has one (0 = its default)`)
	flag.IntVar(&c.deals, "deals", 0, `deals per game: the game's parameter "deals", if it has one (0 = its default)`)
	flag.Var(&c.params, "param", "a game parameter name=<integer> (repeat for several), e.g. -param first_dealer=1")
	flag.IntVar(&c.envs, "envs", 4096, "games stepped at once")
	flag.Float64Var(&c.seconds, "seconds", 5, "how long to measure")
	flag.IntVar(&c.workers, "workers", 0, "goroutines stepping the batch (0 = GOMAXPROCS)")
	flag.Uint64Var(&c.seed, "seed", 1, "seed")
	flag.StringVar(&c.learner, "learner", "all", `seats the benchmark plays: "all" (self-play) or e.g. "0"`)
	flag.StringVar(&c.opp, "opponent", "random", "bot for the other seats when -learner is not all")
	flag.StringVar(&c.addr, "addr", "", `http mode: server to target (host:port or "unix:PATH"); empty starts one in this process`)
	flag.StringVar(&c.packing, "packing", "none", "none, or bits: the engine writes obs bit-packed (in http mode sent so, and unpacked by the client)")
	flag.IntVar(&c.sessions, "sessions", 1, "http mode: split -envs over this many sessions, each stepped by its own client goroutine (so they overlap)")
	flag.StringVar(&c.network, "net", "tcp", "http mode, server started in this process: tcp (loopback) or unix (a Unix socket)")
	flag.StringVar(&c.token, "token", "", "http mode: bearer token")
	flag.StringVar(&c.format, "format", "msgpack", "http mode: msgpack or json")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof)")
	flag.Parse()
	run, ok := modes[c.mode]
	if !ok {
		fmt.Fprintf(os.Stderr, "dgbench: unknown -mode %q\n", c.mode)
		os.Exit(2)
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "dgbench: -cpuprofile:", err)
			os.Exit(2)
		}
		defer f.Close()
	}
	err := run(c)
	pprof.StopCPUProfile()
	if err != nil {
		fmt.Fprintln(os.Stderr, "dgbench:", err)
		os.Exit(1)
	}
}

func (c config) seats() ([]int, error) {
	if c.learner == "all" || c.learner == "" {
		return nil, nil
	}
	var seats []int
	for _, f := range strings.Split(c.learner, ",") {
		if f == "" {
			continue
		}
		var s int
		if _, err := fmt.Sscanf(f, "%d", &s); err != nil {
			return nil, fmt.Errorf("-learner %q: %v", c.learner, err)
		}
		seats = append(seats, s)
	}
	return seats, nil
}

// pickActions chooses a uniform legal action per env from the masks (rows
// of any game's number of actions).
func pickActions(mask []uint8, actions []int32, rng *env.RNG) {
	na := len(mask) / len(actions)
	for i := range actions {
		row := mask[i*na : (i+1)*na]
		n := 0
		for _, m := range row {
			n += int(m)
		}
		k := rng.IntN(n)
		for a, m := range row {
			if m == 1 {
				if k == 0 {
					actions[i] = int32(a)
					break
				}
				k--
			}
		}
	}
}

func runInProc(c config) error {
	seats, err := c.seats()
	if err != nil {
		return err
	}
	v, err := newVec(c, seats)
	if err != nil {
		return err
	}
	defer v.Close()
	rng := env.NewRNG(c.seed, 99)
	actions := make([]int32, c.envs)
	var steps, pickNs int64
	start := time.Now()
	deadline := start.Add(time.Duration(c.seconds * float64(time.Second)))
	var stepTime time.Duration
	for time.Now().Before(deadline) {
		t0 := time.Now()
		pickActions(v.Mask(), actions, &rng)
		t1 := time.Now()
		if err := v.Step(actions); err != nil {
			return err
		}
		stepTime += time.Since(t1)
		pickNs += t1.Sub(t0).Nanoseconds()
		steps += int64(c.envs)
	}
	el := time.Since(start).Seconds()
	fmt.Printf("steps_per_sec=%.0f engine_steps_per_sec=%.0f mode=inproc game=%s players=%d envs=%d packing=%s seconds=%.1f\n",
		float64(steps)/el, float64(steps)/stepTime.Seconds(), v.game.Type().Name, v.game.NumPlayers(), c.envs, c.packing, el)
	return nil
}

// vec is what the benchmark steps: any game's env.Vec.
type vec interface {
	Mask() []uint8
	Step(actions []int32) error
	Close()
}

// gameVec is a batch and the game it plays.
type gameVec struct {
	vec
	game env.Game
}

// params is the repeated flag -param name=value.
type params []string

func (p *params) String() string { return strings.Join(*p, ",") }

func (p *params) Set(kv string) error {
	if k, v, ok := strings.Cut(kv, "="); !ok || k == "" || v == "" {
		return fmt.Errorf("want name=<integer>, got %q", kv)
	}
	*p = append(*p, kv)
	return nil
}

// gameParams are the parameters c gives c.game's type: -players and -deals
// (when not 0) where the type has parameters of those names, then every
// -param.
func (c config) gameParams(typ *env.Type) (map[string]any, error) {
	given := map[string]any{}
	has := func(name string) bool { return slices.Contains(typ.ParamNames(), name) }
	if c.players != 0 && has("players") {
		given["players"] = c.players
	}
	if c.deals != 0 && has("deals") {
		given["deals"] = c.deals
	}
	for _, kv := range c.params {
		k, v, _ := strings.Cut(kv, "=")
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, fmt.Errorf("-param %q: want name=<integer>", kv)
		}
		given[k] = n
	}
	return given, nil
}

// newGame makes c's game through the registry: the registry's default
// game when c.game is "".
func (c config) newGame(reg *env.Registry) (env.Game, map[string]any, error) {
	typ, err := reg.Lookup(c.game)
	if err != nil {
		return nil, nil, err
	}
	given, err := c.gameParams(typ)
	if err != nil {
		return nil, nil, err
	}
	g, err := typ.New(given)
	if err != nil {
		return nil, nil, err
	}
	return g, given, nil
}

// newVec builds the batch of c.game through the registry and env.NewVec
// (the one engine of every game), with the game's registered bot as the
// opponent.
func newVec(c config, seats []int) (*gameVec, error) {
	opp := ""
	if seats != nil {
		opp = c.opp
	}
	reg := games.Default()
	g, _, err := c.newGame(reg)
	if err != nil {
		return nil, err
	}
	cfg := env.VecConfig{NumEnvs: c.envs, Seed: c.seed, LearnerSeats: seats, Opponent: opp,
		Workers: c.workers, Packed: c.packing == "bits"}
	if opp != "" {
		if cfg.Bot, err = reg.NewBot(g, opp); err != nil {
			return nil, err
		}
	}
	v, err := env.NewVec(g, cfg)
	if err != nil {
		return nil, err
	}
	return &gameVec{vec: v, game: g}, nil
}
