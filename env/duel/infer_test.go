package duel

import (
	"testing"

	"github.com/davidgoliath/dgenv/env"
)

// Infer's check is sound and tells worlds apart: in heuristic mirror games
// the true position explains every play of the opponent since its last
// draw (the heuristic made them, with that hand), while some sampled
// worlds do not; a sampled world, which does not replay from its seed,
// gets no inference.
func TestInferExplainsTheTruthAndNotEveryWorld(t *testing.T) {
	g, err := SpielType().Default()
	if err != nil {
		t.Fatal(err)
	}
	h := HeuristicBot{}
	rng := env.NewRNG(8, 0)
	checked, missed, worlds := 0, 0, 0
	for seed := range uint64(30) {
		s := g.NewInitialState(seed).(*SpielState)
		for !s.IsTerminal() {
			me := s.CurrentPlayer()
			if explain := s.Infer(me, h); explain != nil {
				checked++
				if m := explain(s); m != 0 {
					t.Fatalf("seed %d, %d actions: the true position misses %d of the opponent's plays", seed, len(s.S.hist), m)
				}
				for range 4 {
					w := s.ResampleWorld(me, &rng)
					worlds++
					if explain(w) > 0 {
						missed++
					}
					if w.(*SpielState).Infer(me, h) != nil {
						t.Fatal("a sampled world infers: it cannot replay from its seed")
					}
				}
			}
			s.ApplyUnchecked(h.Act(s, &rng))
		}
	}
	if checked < 100 || missed == 0 || missed == worlds {
		t.Fatalf("%d positions checked, %d of %d sampled worlds missed a play: want many positions and some worlds of each kind", checked, missed, worlds)
	}
	t.Logf("%d positions, %d of %d sampled worlds missed a play", checked, missed, worlds)
}
