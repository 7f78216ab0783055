// Command dgteach generates labelled training data from a teacher bot: it
// plays games at a table of bots and, at every decision with more than one
// legal action, records the acting seat's observation, its legal mask, the
// teacher's label and the action played, then the outcome for that seat.
// Everything recorded is what the acting seat may know. It reaches games
// and bots only through the registry (env/games), so it labels any game.
//
// A teacher that scores every legal action (env.ActionValuer: the card
// game's search, whose values come from worlds that resample every hidden
// hand) gives value labels:
//
//	dgteach -players 4 -table search,search,heuristic,random -games 2000 -out runs/teach4
//
// The output directory holds meta.json and shards shard-00000.npz, ... (one
// per -shard-games games, numpy's .npz format; np.load reads them), each with
//
//	obs    uint8   [n, D]   the acting seat's observation (docs/observation.md)
//	mask   uint8   [n, A]   1 where the action is legal (the card game: A = 90 cards)
//	q      float32 [n, A]   the teacher's value per legal action (0 where illegal)
//	action int16   [n]      the action the teacher chooses (argmax of q, plus the prior if any)
//	played int16   [n]      the action actually played (the table's bot, or an exploration move)
//	ret    float32 [n]      the acting seat's reward less the others' mean at the next change
//	                        of the returns (the card game: the deal's points, at its end)
//	seat   uint8   [n]      the acting seat (0..P-1)
//	valued uint8   [n, A]   with -rollout-top only: 1 where q is a value (q is 0 on the
//	                        legal actions not valued)
//
// -teacher rollout labels with the table's own values instead (rollout.go):
// each legal action played in the true state, then the deal finished by the
// bots of -rollout-table (default the table), -rollouts times. The values
// are then those of the opponents as they are, one world a label:
//
//	dgteach -players 4 -table policy:expert,search,heuristic,random -policies policies \
//	    -teacher rollout -rollout-table policy:expert,policy:expert,heuristic,random -label-seats 0 -out runs/ro
//
// -rollout-sampled plays out from worlds drawn from what the acting seat
// knows instead of the true state, and -rollout-top K -rollout-policy NAME
// values only the K legal actions NAME ranks highest (rollout.go):
//
//	dgteach -players 3 -table policy:expert-p3-c3,search,heuristic -policies policies -orders 2 \
//	    -teacher rollout -rollout-sampled -rollouts 16 -rollout-top 2 -rollout-policy expert-p3-c3 \
//	    -rollout-table policy:expert-p3,policy:expert-p3,heuristic -label-seats 0 -eps 0 -out runs/top2
//
// -label-seats labels only the decisions of some table positions (the
// others are played, not recorded). Game k rotates the table by k seats, so
// every position sits at every seat, but around the table the positions
// always follow one another in -table's order: position 0 always plays
// just before position 1. -orders 2 plays the games k mod 2P >= P in the
// reversed order (rotated), as dgeval -duplicate seats its agents, so a
// labelled position also learns the seats that follow it the other way
// round (docs/training.md, "Session 53").
//
// Shard i holds games i*G .. (i+1)*G-1; game k's chance and bots' moves come
// from -seed and k alone, so the data does not depend on -workers, and a
// decision's labels from -seed, k and the decision alone.
//
// A teacher without values (-game duel, whose bots have none: -teacher,
// default the game's "search" bot if it has one, else "heuristic") gives
// demonstrations for imitation, in the same shards: q is 1 on the
// teacher's action and 0 on the other legal ones, and ret is the acting
// seat's return of the whole game minus the others' mean (the duel: +2
// won, -2 lost, 0 drawn). meta.json's "game" names the game and its
// parameters.
//
//	dgteach -game duel -table heuristic,heuristic -teacher heuristic -eps 0.1 -games 4000 -out runs/teach-duel
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/games"
	"github.com/davidgoliath/dgenv/env/policy"
	"github.com/davidgoliath/dgenv/server/wire"
)

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

type config struct {
	game, gameParams, teacher                                string
	worldsSet                                                string // -worlds as given, "" if not
	tableSet                                                 bool   // -table was given
	players, deals, games, shardGames, worlds, workers, from int
	table                                                    []string
	eps, priorWeight                                         float64
	seed                                                     uint64
	minutes                                                  float64
	out, prior                                               string
	quiet                                                    bool
	rollouts                                                 int    // -teacher rollout: playouts per action
	rolloutWorlds                                            int    // -rollout-worlds: worlds of the rollout table's searches (0 = as registered)
	rolloutTable, labelSeats                                 string // -rollout-table, -label-seats as given
	labelAt                                                  []bool // table positions whose decisions are labelled
	orders                                                   int    // -orders: 1, or 2 (the reversed order too)
	rolloutSampled                                           bool   // -rollout-sampled
	rolloutTop                                               int    // -rollout-top
	rolloutPolicy                                            string // -rollout-policy
}

// position is the table position that plays seat in game k of p seats: the
// table rotated by k seats, or with orders 2 in the games k mod 2p >= p its
// reversed order rotated (the seat after a position's is played by the
// position before it).
func position(seat, k, p, orders int) int {
	if orders == 2 && k%(2*p) >= p {
		return ((k-seat)%p + p) % p
	}
	return (seat + k) % p
}

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("dgteach", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	var table string
	reg := games.Default()
	fs.StringVar(&c.game, "game", reg.Names()[0], "the game: "+strings.Join(reg.Names(), ", "))
	fs.StringVar(&c.gameParams, "game-params", "", "that game's parameters, comma-separated k=v (e.g. max_rounds=50); players and deals through -players and -deals")
	fs.StringVar(&c.teacher, "teacher", "", `the bot whose values (env.ActionValuer, e.g. the card game's search) or choices are the labels (default: the game's bot "search" if it has one, else "heuristic")`)
	fs.IntVar(&c.players, "players", 4, `players per game: the game's parameter "players", if it has one`)
	fs.IntVar(&c.deals, "deals", 0, `deals per game: the game's parameter "deals", if it has one (0 = its default)`)
	fs.StringVar(&table, "table", "search,search,heuristic,random", "bot per seat, comma-separated; game k rotates it by k seats (a game it does not fit, or a teacher without values: the teacher at every seat by default)")
	fs.IntVar(&c.games, "games", 1000, "games to play (rounded up to whole shards)")
	fs.IntVar(&c.shardGames, "shard-games", 20, "games per shard file")
	fs.IntVar(&c.from, "from", 0, "first shard to write (to extend a directory written with the same flags)")
	fs.Float64Var(&c.minutes, "minutes", 0, "stop starting new shards after this many minutes (0 = no limit)")
	fs.IntVar(&c.worlds, "worlds", 32, "the teacher's worlds per decision")
	fs.StringVar(&c.prior, "prior", "", "policy name (in -policies) the teacher adds as a prior (guided search)")
	fs.Float64Var(&c.priorWeight, "prior-weight", 1, "weight of the prior's logits, in points per logit")
	fs.Float64Var(&c.eps, "eps", 0.05, "chance that a move is played uniformly at random instead of by the table's bot (exploration)")
	fs.Uint64Var(&c.seed, "seed", 1, "seed: the same seed gives the same data")
	fs.IntVar(&c.workers, "workers", 0, "goroutines (0 = GOMAXPROCS); the data does not depend on it")
	fs.StringVar(&c.out, "out", "", "output directory (required)")
	policies := fs.String("policies", "", "directory of trained policies (<name>.onnx), usable in -table as \"policy:<name>\" and as -prior")
	fs.BoolVar(&c.quiet, "quiet", false, "no progress line")
	fs.IntVar(&c.rollouts, "rollouts", 4, "-teacher rollout: playouts of each legal action from the true state")
	fs.StringVar(&c.rolloutTable, "rollout-table", "", "-teacher rollout: bot per seat in its playouts, as -table (default: the table)")
	fs.IntVar(&c.rolloutWorlds, "rollout-worlds", 0, "-teacher rollout: worlds a decision of each rollout bot that samples worlds (env.Sampler: the search), a cheaper search in the playouts (0 = as registered)")
	fs.BoolVar(&c.rolloutSampled, "rollout-sampled", false, "-teacher rollout: each playout from a world drawn from what the acting seat knows (its hidden hands dealt anew), the same worlds for every action, instead of the true state")
	fs.IntVar(&c.rolloutTop, "rollout-top", 0, "-teacher rollout: value only the K legal actions -rollout-policy ranks highest (0 = every legal action); the others are written unvalued (the shards' valued array)")
	fs.StringVar(&c.rolloutPolicy, "rollout-policy", "", "-teacher rollout: the policy (in -policies) whose logits rank the actions for -rollout-top")
	fs.StringVar(&c.labelSeats, "label-seats", "", "table positions (before the rotation) whose decisions are labelled, comma-separated (default: all)")
	fs.IntVar(&c.orders, "orders", 1, "1: every game plays -table's order, rotated; 2: games k mod 2P >= P play its reversed order, rotated (each position also followed by the others the other way round)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	c.table = strings.Split(table, ",")
	fs.Visit(func(f *flag.Flag) {
		c.tableSet = c.tableSet || f.Name == "table"
		if f.Name == "worlds" {
			c.worldsSet = f.Value.String()
		}
	})
	if err := generate(c, *policies, stderr); err != nil {
		fmt.Fprintln(stderr, "dgteach:", err)
		return 1
	}
	return 0
}

// valuer scores every legal action of a state for the seat to act: an
// env.ActionValuer (which uses only what that seat knows), or the
// rolloutValuer, which plays the true state.
type valuer interface {
	ActionValues(s env.State, rng *env.RNG, legal []int, dst []float64)
}

// shardFunc writes shard i and returns its record count.
type shardFunc func(i int) (int, error)

func generate(c config, policies string, stderr io.Writer) error {
	if c.out == "" {
		return fmt.Errorf("-out is required")
	}
	if c.games < 1 || c.shardGames < 1 || c.worlds < 1 {
		return fmt.Errorf("-games, -shard-games and -worlds must be >= 1")
	}
	if c.eps < 0 || c.eps > 1 {
		return fmt.Errorf("-eps %v: must be in [0, 1]", c.eps)
	}
	if c.orders != 1 && c.orders != 2 {
		return fmt.Errorf("-orders %d: want 1 (the table's order) or 2 (and its reverse)", c.orders)
	}
	reg := games.Default()
	var loaded map[string]*policy.Policy
	if policies != "" {
		root, err := os.OpenRoot(policies)
		if err != nil {
			return err
		}
		defer root.Close()
		if loaded, err = policy.LoadFS(reg, root.FS(), nil); err != nil {
			return err
		}
		if err := policy.Register(reg, loaded); err != nil {
			return err
		}
	}
	g, err := newGame(reg, c)
	if err != nil {
		return err
	}
	if c.teacher == "" {
		c.teacher = "heuristic"
		if slices.Contains(reg.Bots(g.Type().Name), "search") {
			c.teacher = "search"
		}
	}
	if c.labelAt, err = parseSeats(c.labelSeats, g.NumPlayers()); err != nil {
		return err
	}
	var (
		meta map[string]any
		fn   shardFunc
	)
	if c.teacher == rolloutTeacher {
		v, err := newRolloutValuer(c, reg, g, loaded)
		if err != nil {
			return err
		}
		meta, fn, err = prepareValues(c, reg, g, v, loaded)
		if err != nil {
			return err
		}
		return runShards(c, meta, fn, stderr)
	}
	if c.rolloutTable != "" || c.rolloutWorlds != 0 || c.rolloutSampled || c.rolloutTop != 0 || c.rolloutPolicy != "" {
		return fmt.Errorf("-rollout-table, -rollout-worlds, -rollout-sampled, -rollout-top, -rollout-policy: only with -teacher %s", rolloutTeacher)
	}
	teacher, err := reg.NewBot(g, c.teacher)
	if err != nil {
		return fmt.Errorf("-teacher: %w", err)
	}
	if v, ok := teacher.(env.ActionValuer); ok {
		meta, fn, err = prepareValues(c, reg, g, v, loaded)
	} else {
		for _, f := range []struct{ name, set string }{{"-prior", c.prior}, {"-worlds", c.worldsSet}, {"-label-seats", c.labelSeats}} {
			if f.set != "" {
				return fmt.Errorf("%s: the teacher %s of %s scores no actions (no env.ActionValuer); it labels by its choices", f.name, c.teacher, g.Type().Name)
			}
		}
		meta, fn, err = prepareDemo(c, reg, g, teacher)
	}
	if err != nil {
		return err
	}
	return runShards(c, meta, fn, stderr)
}

// newGame makes c's game through the registry: -players and -deals where
// the game has parameters of those names, -game-params any other.
func newGame(reg *env.Registry, c config) (env.Game, error) {
	typ, err := reg.Lookup(c.game)
	if err != nil {
		return nil, fmt.Errorf("-game: %w", err)
	}
	has := func(name string) bool { return slices.Contains(typ.ParamNames(), name) }
	given := map[string]any{}
	if has("players") {
		given["players"] = c.players
	}
	if c.deals != 0 && has("deals") {
		given["deals"] = c.deals
	}
	if c.gameParams != "" {
		for _, kv := range strings.Split(c.gameParams, ",") {
			k, v, ok := strings.Cut(kv, "=")
			n, err := strconv.Atoi(v)
			if !ok || err != nil {
				return nil, fmt.Errorf("-game-params %q: want k=<integer>", kv)
			}
			if (k == "players" || k == "deals") && has(k) {
				return nil, fmt.Errorf("-game-params %q: set %s with -%s", kv, k, k)
			}
			given[k] = n
		}
	}
	return typ.New(given)
}

// prepareValues sets up labelling by a teacher's values (the card game's
// search): the table's bots and the teacher come from the registry, the
// teacher with -worlds worlds a decision when it samples worlds
// (env.Sampler), and -prior adds a policy's logits to its values.
func prepareValues(c config, reg *env.Registry, g env.Game, teacher valuer, loaded map[string]*policy.Policy) (map[string]any, shardFunc, error) {
	p := g.NumPlayers()
	if !c.tableSet && len(c.table) != p { // the default table is the 4-player card game's
		c.table = make([]string, p)
		for i := range c.table {
			c.table[i] = c.teacher
		}
	}
	if len(c.table) != p {
		return nil, nil, fmt.Errorf("-table names %d bots for %d players", len(c.table), p)
	}
	bots := make([]env.Bot, p)
	for i, name := range c.table {
		b, err := reg.NewBot(g, name)
		if err != nil {
			return nil, nil, fmt.Errorf("-table %s: %w", name, err)
		}
		bots[i] = b
	}
	_, rollout := teacher.(rolloutValuer)
	if rollout {
		if c.worldsSet != "" {
			return nil, nil, fmt.Errorf("-worlds: the teacher %s samples no worlds (it plays the true state -rollouts times)", rolloutTeacher)
		}
	} else if sm, ok := teacher.(env.Sampler); ok {
		v, ok := sm.WithSamples(c.worlds).(env.ActionValuer)
		if !ok {
			return nil, nil, fmt.Errorf("-worlds: the teacher %s of %s loses its values with %d worlds", c.teacher, g.Type().Name, c.worlds)
		}
		teacher = v
	} else if c.worldsSet != "" {
		return nil, nil, fmt.Errorf("-worlds: the teacher %s of %s samples no worlds (no env.Sampler)", c.teacher, g.Type().Name)
	}
	var prior *policy.Policy
	if c.prior != "" {
		var ok bool
		if prior, ok = loaded[c.prior]; !ok {
			return nil, nil, fmt.Errorf("-prior %q: no such policy in -policies", c.prior)
		}
		if err := prior.Check(g); err != nil {
			return nil, nil, fmt.Errorf("-prior %s: %w", c.prior, err)
		}
	}
	lay := g.Observation()
	worlds := c.worlds
	if rollout {
		worlds = 1 // the true state
	}
	meta := map[string]any{
		"format": "dgteach-v1", "players": p, "deals": g.Values()["deals"], "obs_size": lay.Size,
		"num_actions": g.NumDistinctActions(), "table": c.table, "worlds": worlds, "eps": c.eps, "seed": c.seed,
		"prior": c.prior, "prior_weight": c.priorWeight, "shard_games": c.shardGames,
		"game": wire.GameOf(g), "teacher": c.teacher, "label_seats": c.labelSeats, "orders": c.orders,
		"obs": map[string]any{"shape": []int{lay.Size}, "sections": wire.Sections(lay.Sections)},
	}
	if rollout { // the playouts' bots, for the record
		meta["rollouts"], meta["rollout_table"] = c.rollouts, c.table
		if c.rolloutTable != "" {
			meta["rollout_table"] = strings.Split(c.rolloutTable, ",")
		}
		if c.rolloutWorlds > 0 {
			meta["rollout_worlds"] = c.rolloutWorlds
		}
		if c.rolloutSampled {
			meta["rollout_sampled"] = true
		}
		if c.rolloutTop > 0 {
			meta["rollout_top"], meta["rollout_policy"] = c.rolloutTop, c.rolloutPolicy
		}
	}
	return meta, func(i int) (int, error) { return shard(c, g, bots, teacher, prior, i) }, nil
}

// runShards writes meta.json, then the shards from -from on, over -workers
// goroutines, until -games or -minutes.
func runShards(c config, meta map[string]any, fn shardFunc, stderr io.Writer) error {
	var next atomic.Int64
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return err
	}
	mb, _ := json.MarshalIndent(meta, "", "  ")
	if err := os.WriteFile(filepath.Join(c.out, "meta.json"), append(mb, '\n'), 0o644); err != nil {
		return err
	}

	shards := (c.games + c.shardGames - 1) / c.shardGames
	if c.from < 0 || c.from >= shards {
		return fmt.Errorf("-from %d: must be in 0..%d", c.from, shards-1)
	}
	next.Store(int64(c.from))
	workers := c.workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	start := time.Now()
	var done, records atomic.Int64
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= shards || (c.minutes > 0 && time.Since(start).Minutes() > c.minutes) {
					return
				}
				mu.Lock()
				stop := firstErr != nil
				mu.Unlock()
				if stop {
					return
				}
				n, err := fn(i)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				d := done.Add(1)
				r := records.Add(int64(n))
				if !c.quiet {
					el := time.Since(start).Seconds()
					fmt.Fprintf(stderr, "shard %d/%d, %d records, %.0f records/s, %.0fs\n", d, shards, r, float64(r)/el, el)
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if !c.quiet {
		fmt.Fprintf(stderr, "%d shards, %d records in %.0fs -> %s\n", done.Load(), records.Load(), time.Since(start).Seconds(), c.out)
	}
	return nil
}

// shard plays games i*G .. (i+1)*G-1 and writes shard-%05d.npz, labelled
// by the teacher's values (plus, with a prior, PriorWeight times the
// prior policy's logits for the choice).
func shard(c config, g env.Game, bots []env.Bot, teacher valuer, prior *policy.Policy, i int) (int, error) {
	p, na, D := g.NumPlayers(), g.NumDistinctActions(), g.Observation().Size
	var (
		obsB, maskB []uint8
		qs          []float32
		act, played []int16
		ret         []float32
		seats       []uint8
		valuedB     []uint8 // with -rollout-top: 1 where the action was valued
	)
	partial := c.teacher == rolloutTeacher && c.rolloutTop > 0
	o := make([]uint8, D)
	m := make([]uint8, na)
	legal := make([]int, 0, na)
	q := make([]float64, na)
	pr := make([]float32, na) // the prior's logits; 0 without one
	weight := 0.0
	if prior != nil {
		weight = c.priorWeight
	}
	before, after, r := make([]float64, p), make([]float64, p), make([]float64, p)
	for k := i * c.shardGames; k < (i+1)*c.shardGames; k++ {
		master := env.NewRNG(c.seed, uint64(k))
		s := g.NewInitialState(master.Uint64())
		rngs := make([]env.RNG, p)
		for seat := range p {
			rngs[seat] = env.NewRNG(master.Uint64(), uint64(seat))
		}
		teachSeed := master.Uint64() // decision n's labels draw from NewRNG(teachSeed, n) alone: the same whichever seats are labelled
		explore := env.NewRNG(master.Uint64(), 0xe4e)
		valuer := teacher
		if rv, ok := teacher.(rolloutValuer); ok {
			rv.game = k
			valuer = rv
		}
		// Records from pending on wait for the next change of the returns
		// (the card game: the end of the deal) or the game's end.
		pending := len(ret)
		for steps := 0; !s.IsTerminal(); steps++ {
			if steps > g.MaxGameLength() {
				return 0, fmt.Errorf("game %d: longer than MaxGameLength %d", k, g.MaxGameLength())
			}
			seat := s.CurrentPlayer()
			at := position(seat, k, p, c.orders)
			legal = s.AppendLegalActions(legal[:0])
			a := legal[0]
			if len(legal) > 1 {
				choice := -1 // the teacher's, on a labelled decision
				if c.labelAt[at] {
					qv := q[:len(legal)]
					teach := env.NewRNG(teachSeed, uint64(steps))
					valuer.ActionValues(s, &teach, legal, qv)
					s.WriteObservation(o, seat)
					if prior != nil {
						if err := prior.Logits(o, 1, pr); err != nil {
							return 0, fmt.Errorf("game %d: -prior: %w", k, err)
						}
					}
					best := math.Inf(-1)
					choice = legal[0]
					for j, x := range legal {
						if v := qv[j] + weight*float64(pr[x]); v > best {
							best, choice = v, x
						}
					}
					s.WriteMask(m)
					obsB = append(obsB, o...)
					maskB = append(maskB, m...)
					row := make([]float32, na)
					val := make([]uint8, na)
					for j, x := range legal {
						if !math.IsNaN(qv[j]) { // NaN: not valued (-rollout-top)
							row[x], val[x] = float32(qv[j]), 1
						}
					}
					qs = append(qs, row...)
					if partial {
						valuedB = append(valuedB, val...)
					}
					act = append(act, int16(choice))
					seats = append(seats, uint8(seat))
					ret = append(ret, 0)
				}
				switch {
				case explore.Float64() < c.eps:
					a = legal[explore.IntN(len(legal))]
				case choice >= 0 && c.table[at] == c.teacher && prior == nil:
					a = choice // the teacher's seat plays what the teacher just computed
				default:
					a = bots[at].Act(s, &rngs[seat])
				}
				if choice >= 0 {
					played = append(played, int16(a))
				}
			}
			s.WriteReturns(before)
			if err := s.ApplyAction(a); err != nil {
				return 0, fmt.Errorf("game %d: %w", k, err)
			}
			s.WriteReturns(after)
			changed := false
			for j := range r {
				r[j] = after[j] - before[j]
				changed = changed || r[j] != 0
			}
			if changed || s.IsTerminal() {
				sum := 0.0
				for _, x := range r {
					sum += x
				}
				for j := pending; j < len(ret); j++ {
					me := int(seats[j])
					ret[j] = float32(r[me] - (sum-r[me])/float64(p-1))
				}
				pending = len(ret)
			}
		}
	}
	n := len(act)
	path := filepath.Join(c.out, fmt.Sprintf("shard-%05d.npz", i))
	arrays := []array{
		{"obs", "|u1", []int{n, D}, obsB},
		{"mask", "|u1", []int{n, na}, maskB},
		{"q", "<f4", []int{n, na}, f32Bytes(qs)},
		{"action", "<i2", []int{n}, i16Bytes(act)},
		{"played", "<i2", []int{n}, i16Bytes(played)},
		{"ret", "<f4", []int{n}, f32Bytes(ret)},
		{"seat", "|u1", []int{n}, seats},
	}
	if partial {
		arrays = append(arrays, array{"valued", "|u1", []int{n, na}, valuedB})
	}
	return n, writeNPZ(path, arrays)
}
