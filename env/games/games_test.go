package games_test

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
	"github.com/davidgoliath/dgenv/env/duel"
	"github.com/davidgoliath/dgenv/env/envtest"

	"github.com/davidgoliath/dgenv/env/games"
)

func TestEveryGameConforms(t *testing.T) {
	reg := games.Default()
	for _, name := range reg.Names() {
		t.Run(name, func(t *testing.T) {
			typ, err := reg.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			g, err := typ.Default()
			if err != nil {
				t.Fatal(err)
			}
			envtest.Conformance(t, reg, g, 3)
		})
	}
}

func TestDefaultIsTheCardGame(t *testing.T) {
	reg := games.Default()
	typ, err := reg.Lookup("")
	if err != nil || typ.Name != "david_goliath" {
		t.Fatalf("Lookup(\"\") = %v, %v", typ, err)
	}
	if got := reg.Names(); !slices.Equal(got, wantNames) {
		t.Fatalf("Names() = %v, want %v", got, wantNames)
	}
	if reg == games.Default() {
		t.Fatal("Default returned the same registry twice")
	}
}

func TestParamErrorsNameTheField(t *testing.T) {
	reg := games.Default()
	for _, c := range []struct {
		game  string
		given map[string]any
		field string
	}{
		{"david_goliath", map[string]any{"players": 7}, "players"},
		{"david_goliath", map[string]any{"players": 3, "first_dealer": 3}, "first_dealer"},
		{"david_goliath", map[string]any{"deals": 1.5}, "deals"},
		{"david_goliath", map[string]any{"colours": 4}, "colours"},
		{"duel", map[string]any{"max_rounds": 0}, "max_rounds"},
		{"duel", map[string]any{"players": 2}, "players"},
	} {
		typ, err := reg.Lookup(c.game)
		if err != nil {
			t.Fatal(err)
		}
		_, err = typ.New(c.given)
		var pe *env.ParamError
		if !errors.As(err, &pe) || pe.Name != c.field || !errors.Is(err, env.ErrParams) {
			t.Errorf("%s %v: err = %v, want a ParamError naming %q", c.game, c.given, err, c.field)
		}
	}
	if _, err := reg.Lookup("chess"); err == nil {
		t.Error("Lookup(chess) = nil error")
	}
}

func TestVecOfEveryGameAllocatesNothingPerStep(t *testing.T) {
	reg := games.Default()
	for _, name := range reg.Names() {
		for _, packed := range []bool{false, true} {
			typ, _ := reg.Lookup(name)
			g, _ := typ.Default()
			bot, err := reg.NewBot(g, "random")
			if err != nil {
				t.Fatal(err)
			}
			cfg := env.VecConfig{NumEnvs: 8, Seed: 1, LearnerSeats: []int{0}, Opponent: "random", Bot: bot, Packed: packed, Workers: 1}
			if a := envtest.VecAllocs(t, g, cfg); a != 0 {
				t.Errorf("%s packed=%v: %v allocs per step", name, packed, a)
			}
		}
	}
}

// Every game's Vec writes the same observations into a caller's buffer
// (SetObsTarget, what libdgenv does with numpy's) as into its own, skipped
// envs included, in self-play and against a bot, on one worker and on two.
func TestVecObsTargetOfEveryGame(t *testing.T) {
	reg := games.Default()
	for _, name := range reg.Names() {
		typ, _ := reg.Lookup(name)
		g, _ := typ.Default()
		bot, err := reg.NewBot(g, "random")
		if err != nil {
			t.Fatal(err)
		}
		for _, cfg := range []env.VecConfig{
			{NumEnvs: 16, Seed: 1, Workers: 1},
			{NumEnvs: 33, Seed: 2, LearnerSeats: []int{0}, Opponent: "random", Bot: bot, Workers: 2},
		} {
			t.Run(fmt.Sprintf("%s/%d envs", name, cfg.NumEnvs), func(t *testing.T) {
				envtest.VecObsTarget(t, g, cfg, 80)
			})
		}
	}
}

// A match of any registered game runs through the same arena and
// statistics; results depend on the seed only, never on the workers.
func TestPlayMatchOfAnyGame(t *testing.T) {
	reg := games.Default()
	typ, _ := reg.Lookup("duel")
	g, _ := typ.New(map[string]any{"max_rounds": 30})
	cfg := env.MatchConfig{Agents: []string{"heuristic", "random"}, Games: 12, Seed: 4, Duplicate: true, Workers: 1}
	a, err := env.PlayMatchOf(reg, g, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Workers = 3
	b, err := env.PlayMatchOf(reg, g, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the result depends on the worker count")
	}
	st := a.Summarize()
	if len(st) != 2 || st[0].Name != "heuristic" || st[0].Win.Mean <= st[1].Win.Mean {
		t.Fatalf("heuristic should beat random at the duel: %+v", st)
	}
	for k, sc := range a.Scores {
		if sc[0]+sc[1] != 0 {
			t.Fatalf("game %d: returns %v are not zero-sum", k, sc)
		}
	}
}

// Per-seat opponents (VecConfig.Opponents and Bots, made by the registry)
// through env.NewVec, for every game: the generic Vec and the card
// game's kernel. Steps allocate nothing; wrong lists name "opponents".
func TestVecOfEveryGameWithPerSeatOpponents(t *testing.T) {
	reg := games.Default()
	for _, name := range reg.Names() {
		typ, _ := reg.Lookup(name)
		g, _ := typ.Default()
		p := g.NumPlayers()
		opponents := make([]string, p)
		for s := 1; s < p; s++ {
			opponents[s] = "random"
		}
		bots, err := reg.NewSeatBots(g, opponents)
		if err != nil {
			t.Fatal(err)
		}
		cfg := env.VecConfig{NumEnvs: 8, Seed: 1, Opponents: opponents, Bots: bots, Workers: 1}
		if a := envtest.VecAllocs(t, g, cfg); a != 0 {
			t.Errorf("%s: %v allocs per step", name, a)
		}
		v, err := env.NewVec(g, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := v.LearnerSeats(); !reflect.DeepEqual(got, []int{0}) {
			t.Errorf("%s: LearnerSeats() = %v, want [0]", name, got)
		}
		for i, pl := range v.Player() {
			if pl != 0 {
				t.Errorf("%s: env %d: seat %d to act, want the learner 0", name, i, pl)
			}
		}
		v.Close()
		one, _ := reg.NewBot(g, "random")
		wrong := map[string]env.VecConfig{
			"a short list":             {NumEnvs: 1, Opponents: opponents[1:], Bots: bots[1:]},
			"both opponent and a list": {NumEnvs: 1, Opponent: "random", Bot: one, Opponents: opponents, Bots: bots},
			"a bot on a learner seat":  {NumEnvs: 1, LearnerSeats: []int{0, 1}, Opponents: opponents, Bots: bots},
			"a bot on every seat":      {NumEnvs: 1, Opponents: slices.Repeat([]string{"random"}, p), Bots: slices.Repeat([]env.Bot{one}, p)},
		}
		for what, c := range wrong {
			_, err := env.NewVec(g, c)
			var ce *env.ConfigError
			if !errors.As(err, &ce) || ce.Field != "opponents" {
				t.Errorf("%s, %s: error = %v, want a ConfigError of field opponents", name, what, err)
			}
		}
		if _, err := reg.NewSeatBots(g, []string{"", "grandmaster"}); err == nil || !strings.Contains(err.Error(), "seat 1") {
			t.Errorf("%s: NewSeatBots with an unknown bot: error = %v, want one naming seat 1", name, err)
		}
	}
}

// BenchmarkGenericVec steps the duel through the generic env.Vec (one
// goroutine), learner seat 0 against the random bot.
func BenchmarkGenericVec(b *testing.B) {
	reg := games.Default()
	typ, _ := reg.Lookup("duel")
	g, _ := typ.Default()
	bot, _ := reg.NewBot(g, "random")
	const n = 256
	v, err := env.NewVec(g, env.VecConfig{NumEnvs: n, Seed: 1, LearnerSeats: []int{0}, Opponent: "random", Bot: bot})
	if err != nil {
		b.Fatal(err)
	}
	defer v.Close()
	acts := make([]int32, n)
	rng := env.NewRNG(5, 5)
	a := g.NumDistinctActions()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		m := v.Mask()
		for i := range n {
			var legal [512]int32
			k := 0
			for x := range a {
				if m[i*a+x] == 1 {
					legal[k] = int32(x)
					k++
				}
			}
			acts[i] = legal[rng.IntN(k)]
		}
		if err := v.Step(acts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "env-steps/s")
}

// The bots of every game are the registry's: each game lists its own
// package's bots (and "random", which every game has), and each plays a
// whole legal game of its game at every seat.
func TestEveryGameListsItsBotsAndEachPlays(t *testing.T) {
	want := map[string][]string{
		"david_goliath": {"heuristic", "random", "search"},
		"duel":          {"heuristic", "random", "search"},
		"nim":           {"greedy", "random"},
	}
	reg := games.Default()
	for _, name := range reg.Names() {
		bots := reg.Bots(name)
		if !slices.Equal(bots, want[name]) {
			t.Errorf("Bots(%s) = %v, want %v", name, bots, want[name])
		}
		typ, _ := reg.Lookup(name)
		g, err := typ.Default()
		if err != nil {
			t.Fatal(err)
		}
		for _, bot := range bots {
			t.Run(fmt.Sprintf("%s's %s plays every seat", name, bot), func(t *testing.T) {
				agents := make([]string, g.NumPlayers())
				for i := range agents {
					agents[i] = "random"
				}
				agents[0] = bot
				res, err := env.PlayMatchOf(reg, g, env.MatchConfig{Agents: agents, Games: g.NumPlayers(), Seed: 1, Workers: 1})
				if err != nil || len(res.Scores) != g.NumPlayers() {
					t.Fatalf("PlayMatchOf(%v) = %v, %v", agents, res, err)
				}
			})
		}
	}
}

// A bot of one game refuses another game through its factory (the
// registry's error), never at its first move.
func TestABotRefusesAnotherGame(t *testing.T) {
	reg := games.Default()
	duelType, _ := reg.Lookup("duel")
	duelGame, _ := duelType.Default()
	cardType, _ := reg.Lookup("")
	cardGame, _ := cardType.Default()
	for _, c := range []struct {
		factory env.BotFactory
		g       env.Game
	}{{card.Bots()["heuristic"], duelGame}, {card.Bots()["search"], duelGame}, {duel.Bots()["heuristic"], cardGame}} {
		if b, err := c.factory(c.g); err == nil || !strings.Contains(err.Error(), "plays only") {
			t.Errorf("a bot for %s = %T, %v; want an error", c.g.Type().Name, b, err)
		}
	}
}

// A bot's decision through env.Bot allocates nothing (the batch engine
// calls it per step): every bot of every game but the costly ones (the
// search allocates its worlds per decision, not per step of a batch).
func TestBotsDecideWithoutAllocating(t *testing.T) {
	reg := games.Default()
	for _, name := range reg.Names() {
		typ, _ := reg.Lookup(name)
		g, _ := typ.Default()
		for _, botName := range reg.Bots(name) {
			bot, err := reg.NewBot(g, botName)
			if err != nil {
				t.Fatal(err)
			}
			if env.IsCostly(bot) {
				continue
			}
			s := g.NewInitialState(3)
			rng := env.NewRNG(3, 1)
			if err := s.ApplyAction(bot.Act(s, &rng)); err != nil { // a state a few moves in
				t.Fatal(err)
			}
			if a := testing.AllocsPerRun(100, func() { bot.Act(s, &rng) }); a != 0 {
				t.Errorf("%s's %s: Act allocates %v times a decision, want 0", name, botName, a)
			}
		}
	}
}
