package testgame_test

import (
	"testing"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/envtest"
	"github.com/davidgoliath/dgenv/env/testgame"
)

func TestNimConforms(t *testing.T) {
	reg := env.NewRegistry()
	if err := testgame.Register(reg); err != nil {
		t.Fatal(err)
	}
	typ, _ := reg.Lookup("nim")
	for _, given := range []map[string]any{nil, {"players": 3, "heap": 25, "take": 5}, {"heap": 1, "take": 1}} {
		g, err := typ.New(given)
		if err != nil {
			t.Fatal(err)
		}
		envtest.Conformance(t, reg, g, 20)
		bot, err := reg.NewBot(g, "greedy")
		if err != nil {
			t.Fatal(err)
		}
		cfg := env.VecConfig{NumEnvs: 4, Seed: 9, LearnerSeats: []int{0}, Opponent: "greedy", Bot: bot}
		if a := envtest.VecAllocs(t, g, cfg); a != 0 {
			t.Errorf("%v: %v allocs per step", given, a)
		}
		envtest.VecObsTarget(t, g, cfg, 40)
	}
}

// The greedy bot wins every two-player game it starts on a heap that is
// not a multiple of take+1.
func TestGreedyWinsFromAWinningHeap(t *testing.T) {
	reg := env.NewRegistry()
	_ = testgame.Register(reg)
	typ, _ := reg.Lookup("nim")
	g, _ := typ.New(map[string]any{"heap": 10, "take": 3})
	greedy, _ := reg.NewBot(g, "greedy")
	random, _ := reg.NewBot(g, "random")
	rng := env.NewRNG(1, 1)
	for seed := range uint64(40) {
		s := g.NewInitialState(seed)
		first := s.CurrentPlayer()
		for !s.IsTerminal() {
			b := random
			if s.CurrentPlayer() == first {
				b = greedy
			}
			if err := s.ApplyAction(b.Act(s, &rng)); err != nil {
				t.Fatal(err)
			}
		}
		if r := env.Returns(s); r[first] != 1 {
			t.Fatalf("seed %d: greedy (seat %d) returns %v", seed, first, r)
		}
	}
}
