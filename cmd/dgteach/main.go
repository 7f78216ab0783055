// Command dgteach generates labelled training data from the search bot: it
// plays games at a table of bots and, at every decision with more than one
// legal card, records the acting seat's observation, its legal mask, the
// search bot's value of each legal card and the card search chooses, then
// the deal's outcome for that seat. Everything recorded is what the acting
// seat may know: the observation is its own view, and the search values come
// from worlds that resample every hidden hand (SearchBot.Values).
//
//	dgteach -players 4 -table search,search,heuristic,random -games 2000 -out runs/teach4
//
// The output directory holds meta.json and shards shard-00000.npz, ... (one
// per -shard-games games, numpy's .npz format; np.load reads them), each with
//
//	obs    uint8   [n, D]   the acting seat's observation (docs/observation.md)
//	mask   uint8   [n, 90]  1 where the card is legal
//	q      float32 [n, 90]  search's mean outcome per legal card (0 where illegal)
//	action int16   [n]      the card the teacher chooses (argmax of q, plus the prior if any)
//	played int16   [n]      the card actually played (the table's bot, or an exploration move)
//	ret    float32 [n]      the acting seat's deal points minus the others' mean, at the deal's end
//	seat   uint8   [n]      the acting seat (0..P-1)
//
// Shard i holds games i*G .. (i+1)*G-1; game k's deals and bots' moves come
// from -seed and k alone, so the data does not depend on -workers.
//
// Any other registered game (-game duel) is labelled by a bot of that game
// (-teacher, default heuristic) instead of the search: demonstrations for
// imitation, in the same shards with the game's own sizes (mask and q are
// [n, A], A its actions). Such a bot has no values: q is 1 on the teacher's
// action and 0 on the other legal ones, and ret is the acting seat's return
// of the whole game minus the others' mean (the duel: +2 won, -2 lost, 0
// drawn). meta.json's "game" names the game and its parameters.
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
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
	"github.com/davidgoliath/dgenv/env/games"
	"github.com/davidgoliath/dgenv/env/policy"
	"github.com/davidgoliath/dgenv/server/wire"
)

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

type config struct {
	game, gameParams, teacher                                string
	tableSet                                                 bool // -table was given
	players, deals, games, shardGames, worlds, workers, from int
	table                                                    []string
	eps, priorWeight                                         float64
	seed                                                     uint64
	minutes                                                  float64
	out, prior                                               string
	quiet                                                    bool
}

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("dgteach", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	var table string
	fs.StringVar(&c.game, "game", card.GameName, "the game: "+strings.Join(games.Default().Names(), ", ")+" (another than the card game is labelled by -teacher)")
	fs.StringVar(&c.gameParams, "game-params", "", "that game's parameters, comma-separated k=v (e.g. max_rounds=50)")
	fs.StringVar(&c.teacher, "teacher", "heuristic", "games other than the card game: the bot whose choices are the labels")
	fs.IntVar(&c.players, "players", 4, "players per game (3..6)")
	fs.IntVar(&c.deals, "deals", 0, "deals per game (0 = as many as players)")
	fs.StringVar(&table, "table", "search,search,heuristic,random", "bot per seat, comma-separated; game k rotates it by k seats (other games: the teacher at every seat by default)")
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
	if err := fs.Parse(args); err != nil {
		return 2
	}
	c.table = strings.Split(table, ",")
	fs.Visit(func(f *flag.Flag) { c.tableSet = c.tableSet || f.Name == "table" })
	if err := generate(c, *policies, stderr); err != nil {
		fmt.Fprintln(stderr, "dgteach:", err)
		return 1
	}
	return 0
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
	var (
		meta map[string]any
		fn   shardFunc
		err  error
	)
	if c.game == card.GameName {
		meta, fn, err = prepareCard(c, policies)
	} else {
		meta, fn, err = prepareDemo(c, policies)
	}
	if err != nil {
		return err
	}
	return runShards(c, meta, fn, stderr)
}

// prepareCard sets up the card game's labelling by search.
func prepareCard(c config, policies string) (map[string]any, shardFunc, error) {
	if c.gameParams != "" {
		return nil, nil, fmt.Errorf("-game-params: the card game takes -players and -deals")
	}
	// The table's bots come from the registry (the policies' beside the
	// card game's own), each made for this game (its factory refuses a
	// policy of another player count); they play the card game's own
	// state here (card.StateBot).
	reg := games.Default()
	var loaded map[string]*policy.Policy
	if policies != "" {
		root, err := os.OpenRoot(policies)
		if err != nil {
			return nil, nil, err
		}
		defer root.Close()
		if loaded, err = policy.LoadFS(reg, root.FS(), nil); err != nil {
			return nil, nil, err
		}
		if err := policy.Register(reg, loaded); err != nil {
			return nil, nil, err
		}
	}
	typ, err := reg.Lookup(card.GameName)
	if err != nil {
		return nil, nil, err
	}
	given := map[string]any{"players": c.players}
	if c.deals != 0 {
		given["deals"] = c.deals
	}
	sg, err := typ.New(given)
	if err != nil {
		return nil, nil, err
	}
	g := sg.(*card.SpielGame).G
	if len(c.table) != c.players {
		return nil, nil, fmt.Errorf("-table names %d bots for %d players", len(c.table), c.players)
	}
	bots := make([]card.StateBot, c.players)
	for i, name := range c.table {
		b, err := reg.NewBot(sg, name)
		if err != nil {
			return nil, nil, fmt.Errorf("-table %s: %w", name, err)
		}
		sb, ok := b.(card.StateBot)
		if !ok {
			return nil, nil, fmt.Errorf("-table %s: not a bot of %s", name, card.GameName)
		}
		bots[i] = sb
	}
	teacher := card.SearchBot{Worlds: c.worlds, Workers: 1}
	if c.prior != "" {
		p, ok := loaded[c.prior]
		if !ok {
			return nil, nil, fmt.Errorf("-prior %q: no such policy in -policies", c.prior)
		}
		if err := p.CheckGame(g); err != nil {
			return nil, nil, fmt.Errorf("-prior %s: %w", c.prior, err)
		}
		teacher.Prior, teacher.PriorWeight = policy.Prior{Policy: p}, c.priorWeight
	}
	meta := map[string]any{
		"format": "dgteach-v1", "players": c.players, "deals": g.Params().Deals, "obs_size": g.ObservationLayout().Size,
		"num_actions": card.NumActions, "table": c.table, "worlds": c.worlds, "eps": c.eps, "seed": c.seed,
		"prior": c.prior, "prior_weight": c.priorWeight, "shard_games": c.shardGames,
		"game": wire.GameSpec{"name": card.GameName, "players": c.players, "deals": g.Params().Deals, "first_dealer": 0},
		"obs":  map[string]any{"shape": []int{g.ObservationLayout().Size}, "sections": wire.Sections(g.ObservationLayout().Sections)},
	}
	return meta, func(i int) (int, error) { return shard(c, g, bots, teacher, i) }, nil
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

// shard plays games i*G .. (i+1)*G-1 and writes shard-%05d.npz.
func shard(c config, g *card.Game, bots []card.StateBot, teacher card.SearchBot, i int) (int, error) {
	p := c.players
	D := g.ObservationLayout().Size
	var (
		obsB, maskB []uint8
		qs          []float32
		act, played []int16
		ret         []float32
		seats       []uint8
	)
	o := make([]uint8, D)
	var m [card.NumActions]uint8
	var legalBuf [card.HandSize]card.Action
	var q [card.HandSize]float64
	for k := i * c.shardGames; k < (i+1)*c.shardGames; k++ {
		master := env.NewRNG(c.seed, uint64(k))
		s := g.NewInitialState(master.Uint64())
		var rngs [card.MaxPlayers]env.RNG
		for seat := range p {
			rngs[seat] = env.NewRNG(master.Uint64(), uint64(seat))
		}
		teach := env.NewRNG(master.Uint64(), 0x7eac)
		explore := env.NewRNG(master.Uint64(), 0xe4e)
		dealStart := len(ret)
		deal := s.DealIndex()
		for !s.IsTerminal() {
			seat := s.CurrentPlayer()
			agent := bots[(seat+k)%p] // game k: table rotated by k seats
			legal := s.AppendLegalActions(legalBuf[:0])
			var a card.Action
			if len(legal) > 1 {
				teacher.Values(s, &teach, legal, q[:len(legal)])
				best, choice := math.Inf(-1), legal[0]
				var pr [card.NumActions]float32
				if teacher.Prior != nil {
					teacher.Prior.Scores(s, &pr)
				}
				for j, x := range legal {
					if v := q[j] + teacher.PriorWeight*float64(pr[x]); v > best {
						best, choice = v, x
					}
				}
				s.WriteObservation(o, seat)
				s.WriteMask(m[:])
				obsB = append(obsB, o...)
				maskB = append(maskB, m[:]...)
				row := make([]float32, card.NumActions)
				for j, x := range legal {
					row[x] = float32(q[j])
				}
				qs = append(qs, row...)
				act = append(act, int16(choice))
				seats = append(seats, uint8(seat))
				ret = append(ret, 0)
				switch {
				case explore.Float64() < c.eps:
					a = legal[explore.IntN(len(legal))]
				case c.table[(seat+k)%p] == "search" && teacher.Prior == nil:
					a = choice // the search seat plays what the teacher just computed
				default:
					a = agent.ActState(s, &rngs[seat])
				}
				played = append(played, int16(a))
			} else {
				a = legal[0]
			}
			if err := s.ApplyAction(a); err != nil {
				return 0, fmt.Errorf("game %d: %w", k, err)
			}
			if s.IsTerminal() || s.DealIndex() != deal {
				r := s.Rewards()
				sum := 0.0
				for _, x := range r {
					sum += x
				}
				for j := dealStart; j < len(ret); j++ {
					me := int(seats[j])
					ret[j] = float32(r[me] - (sum-r[me])/float64(p-1))
				}
				dealStart, deal = len(ret), s.DealIndex()
			}
		}
	}
	n := len(act)
	path := filepath.Join(c.out, fmt.Sprintf("shard-%05d.npz", i))
	return n, writeNPZ(path, []array{
		{"obs", "|u1", []int{n, D}, obsB},
		{"mask", "|u1", []int{n, card.NumActions}, maskB},
		{"q", "<f4", []int{n, card.NumActions}, f32Bytes(qs)},
		{"action", "<i2", []int{n}, i16Bytes(act)},
		{"played", "<i2", []int{n}, i16Bytes(played)},
		{"ret", "<f4", []int{n}, f32Bytes(ret)},
		{"seat", "|u1", []int{n}, seats},
	})
}
