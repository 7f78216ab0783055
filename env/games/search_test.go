package games_test

import (
	"strings"
	"testing"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/games"
	"github.com/davidgoliath/dgenv/env/testgame"
)

// duelPositions are n positions of heuristic mirror games of the duel
// where the seat to act has a choice.
func duelPositions(tb testing.TB, n int) (env.Game, []env.State) {
	reg := games.Default()
	typ, _ := reg.Lookup("duel")
	g, err := typ.Default()
	if err != nil {
		tb.Fatal(err)
	}
	h, _ := reg.NewBot(g, "heuristic")
	rng := env.NewRNG(5, 0)
	var out []env.State
	for seed := uint64(1); len(out) < n; seed++ {
		s := g.NewInitialState(seed)
		for i := 0; !s.IsTerminal() && len(out) < n; i++ {
			if i%7 == 3 && len(env.LegalActions(s)) > 1 {
				out = append(out, s.Clone())
			}
			s.ApplyUnchecked(h.Act(s, &rng))
		}
	}
	return g, out
}

// The duel's search plays legal actions, leaves the state as it was, and
// chooses the same action from the same rng state (and each decision does
// not depend on goroutines: it uses none).
func TestDuelSearchIsLegalAndDeterministic(t *testing.T) {
	g, states := duelPositions(t, 24)
	b, err := games.Default().NewBot(g, "search")
	if err != nil {
		t.Fatal(err)
	}
	if !env.IsCostly(b) {
		t.Fatal("search does not declare itself costly")
	}
	differ := 0
	for i, s := range states {
		before := s.Serialize()
		r1, r2 := env.NewRNG(uint64(i), 1), env.NewRNG(uint64(i), 1)
		a1, a2 := b.Act(s, &r1), b.Act(s, &r2)
		if a1 != a2 || r1 != r2 {
			t.Fatalf("position %d: %d then %d from the same rng", i, a1, a2)
		}
		if !s.IsLegal(a1) {
			t.Fatalf("position %d: illegal action %d", i, a1)
		}
		if s.Serialize() != before {
			t.Fatalf("position %d: Act changed the state", i)
		}
		h, _ := games.Default().NewBot(g, "heuristic")
		if a1 != h.Act(s, &r1) {
			differ++
		}
	}
	if differ == 0 {
		t.Fatal("search chose the heuristic's action in every position: it does not search")
	}
}

// On the duel, search beats random clearly in both roles (duplicate
// games, the default 100 rounds: with 30, on these seeds, the heuristic
// itself draws 4 of its 6 games as David, and so does search, which
// keeps the heuristic's choice unless another is clearly better).
func TestDuelSearchBeatsRandom(t *testing.T) {
	reg := games.Default()
	typ, _ := reg.Lookup("duel")
	g, _ := typ.Default()
	res, err := env.PlayMatchOf(reg, g, env.MatchConfig{Agents: []string{"search", "random"}, Games: 12, Seed: 2, Duplicate: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range res.BySeat() {
		if st.Name == "search" && st.Score.Mean < 0.5 {
			t.Errorf("search at seat %d scores %v a game against random, want >= 0.5", st.Seat, st.Score)
		}
	}
}

// A game whose states do not resample gets a factory error saying so.
func TestSearchRefusesAGameWithoutResampling(t *testing.T) {
	g, err := testgame.Type().Default()
	if err != nil {
		t.Fatal(err)
	}
	b, err := env.SearchFactory(env.Search{Worlds: 4}, nil)(g)
	if err == nil || !strings.Contains(err.Error(), "env.Resampler") || !strings.Contains(err.Error(), "nim") {
		t.Fatalf("SearchFactory(nim) = %v, %v; want an error naming env.Resampler and the game", b, err)
	}
}

// The duel's CopyFrom is Clone into existing memory.
func TestDuelCopyFromIsClone(t *testing.T) {
	_, states := duelPositions(t, 10)
	scratch := states[0].Clone()
	rng := env.NewRNG(1, 1)
	for _, s := range states {
		w := s.(env.Resampler).ResampleWorld(s.CurrentPlayer(), &rng)
		scratch.(env.Copier).CopyFrom(w)
		if scratch.Serialize() != w.Clone().Serialize() {
			t.Fatal("CopyFrom differs from Clone")
		}
	}
}

// BenchmarkDuelSearch is the duel's search's cost per decision (positions
// of heuristic mirror games where the seat to act has a choice): the
// registered budget, and the search before horizon and inference (32
// worlds played to the end).
func BenchmarkDuelSearch(b *testing.B) {
	g, states := duelPositions(b, 200)
	for _, c := range []struct {
		name string
		cfg  env.Search
	}{
		{"registered", games.DuelSearch()},
		{"worlds=32,to-the-end", env.Search{Worlds: 32, Z: 2}},
	} {
		b.Run(c.name, func(b *testing.B) {
			bot, _ := env.SearchFactory(c.cfg, func(g env.Game) (env.Bot, error) { return games.Default().NewBot(g, "heuristic") })(g)
			rng := env.NewRNG(1, 1)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				bot.Act(states[i%len(states)], &rng)
			}
		})
	}
}

// With Z > 0 the search keeps its rollout bot's action unless another is
// clearly better: with one world (no standard error) or a margin no mean
// reaches it plays the heuristic's choice everywhere.
func TestSearchMarginKeepsTheRolloutsChoice(t *testing.T) {
	g, states := duelPositions(t, 24)
	reg := games.Default()
	h, _ := reg.NewBot(g, "heuristic")
	heur := func(env.Game) (env.Bot, error) { return h, nil }
	for _, cfg := range []env.Search{{Worlds: 1, Z: 2}, {Worlds: 4, Z: 1e9}} {
		b, err := env.SearchFactory(cfg, heur)(g)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range states {
			r := env.NewRNG(uint64(i), 3)
			if a, want := b.Act(s, &r), h.Act(s, &r); a != want {
				t.Fatalf("%+v, position %d: %d, the heuristic plays %d", cfg, i, a, want)
			}
		}
	}
}
