package policy_test

import (
	"os"
	"slices"
	"testing"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/games"
	"github.com/davidgoliath/dgenv/env/policy"
)

// duelGuided loads the committed duel policy and returns the duel, the
// registry it is registered in and its policy bot.
func duelGuided(t testing.TB) (*env.Registry, env.Game, policy.Bot) {
	t.Helper()
	reg := games.Default()
	ps, err := policy.LoadFS(reg, os.DirFS("../../policies"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if ps["duel"] == nil {
		t.Fatal("policies/duel.onnx is not committed")
	}
	if err := policy.Register(reg, ps); err != nil {
		t.Fatal(err)
	}
	typ, _ := reg.Lookup("duel")
	g, err := typ.Default()
	if err != nil {
		t.Fatal(err)
	}
	return reg, g, policy.Bot{Policy: ps["duel"], Greedy: true}
}

// duelDecisions are n positions of heuristic mirror duels where the seat
// to act has a choice.
func duelDecisions(t testing.TB, reg *env.Registry, g env.Game, n int) []env.State {
	t.Helper()
	h, err := reg.NewBot(g, "heuristic")
	if err != nil {
		t.Fatal(err)
	}
	rng := env.NewRNG(3, 0)
	var out []env.State
	for seed := uint64(1); len(out) < n; seed++ {
		s := g.NewInitialState(seed)
		for i := 0; !s.IsTerminal() && len(out) < n; i++ {
			if i%5 == 2 && len(env.LegalActions(s)) > 1 {
				out = append(out, s.Clone())
			}
			s.ApplyUnchecked(h.Act(s, &rng))
		}
	}
	return out
}

// A duel policy gets "search:policy:<name>": the duel's search with the
// policy's action as the one kept. With one world, where no gain clears the
// margin, it plays exactly the policy's action, where the plain search
// plays the heuristic's (positions where the two differ are among those
// checked).
func TestDuelGuidedSearchKeepsThePolicysAction(t *testing.T) {
	reg, g, pol := duelGuided(t)
	b, err := reg.NewBot(g, "search:policy:duel")
	if err != nil {
		t.Fatal("no bot search:policy:duel:", err)
	}
	gs, ok := b.(*policy.GuidedSearch)
	if !ok {
		t.Fatalf("search:policy:duel is a %T, want *policy.GuidedSearch", b)
	}
	if want := games.DuelSearch(); gs.Search.Worlds != want.Worlds || gs.Search.Z != want.Z || gs.Search.Rollout == nil {
		t.Fatalf("guided search %+v, want the duel's search (%d worlds, Z %v, heuristic playouts)", gs.Search, want.Worlds, want.Z)
	}
	if !env.IsCostly(b) {
		t.Error("search:policy:duel does not declare itself costly")
	}
	held := *gs
	held.Search.Worlds = 1 // with Z > 0 and one world (no standard error) the kept action stands
	h, _ := reg.NewBot(g, "heuristic")
	differ := 0
	for i, s := range duelDecisions(t, reg, g, 60) {
		r1, r2, r3 := env.NewRNG(9, uint64(i)), env.NewRNG(9, uint64(i)), env.NewRNG(9, uint64(i))
		want := pol.Act(s, &r1)
		if got := held.Act(s, &r2); got != want {
			t.Fatalf("position %d: guided search of one world plays %d, the policy %d", i, got, want)
		}
		if h.Act(s, &r3) != want {
			differ++
		}
	}
	if differ == 0 {
		t.Fatal("the policy and the heuristic agree on every position: the test cannot tell whose action is kept")
	}
}

// The guided search plays legal actions, leaves the state as it was, and
// repeats its choice from the same rng state.
func TestDuelGuidedSearchIsLegalAndDeterministic(t *testing.T) {
	reg, g, _ := duelGuided(t)
	b, err := reg.NewBot(g, "search:policy:duel")
	if err != nil {
		t.Fatal(err)
	}
	b = b.(env.Sampler).WithSamples(4)
	for i, s := range duelDecisions(t, reg, g, 12) {
		before := s.Serialize()
		r1, r2 := env.NewRNG(4, uint64(i)), env.NewRNG(4, uint64(i))
		a1, a2 := b.Act(s, &r1), b.Act(s, &r2)
		if a1 != a2 {
			t.Fatalf("position %d: Act = %d then %d from the same rng", i, a1, a2)
		}
		if !slices.Contains(env.LegalActions(s), a1) {
			t.Fatalf("position %d: Act = %d, not legal (%v)", i, a1, env.LegalActions(s))
		}
		if after := s.Serialize(); after != before {
			t.Fatalf("position %d: Act changed the state", i)
		}
	}
}

// BenchmarkDuelGuidedSearch is the cost per decision of the duel's search
// and of the search the committed duel policy guides, on the same positions
// of heuristic mirror games where the seat to act has a choice (one core).
func BenchmarkDuelGuidedSearch(b *testing.B) {
	for _, name := range []string{"search", "search:policy:duel"} {
		b.Run(name, func(b *testing.B) {
			reg, g, _ := duelGuided(b)
			bot, err := reg.NewBot(g, name)
			if err != nil {
				b.Fatal(err)
			}
			states := duelDecisions(b, reg, g, 200)
			rng := env.NewRNG(1, 1)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				bot.Act(states[i%len(states)], &rng)
			}
		})
	}
}
