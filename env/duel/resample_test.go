package duel

import (
	"slices"
	"testing"

	"github.com/davidgoliath/dgenv/env"
)

func TestResampleKeepsWhatThePlayerKnows(t *testing.T) {
	g := MustNewGame(DefaultParams())
	rng := env.NewRNG(77, 0)
	var changed, samples int
	for seed := range uint64(60) {
		s := g.NewInitialState(seed)
		for i := 0; !s.IsTerminal(); i++ {
			if i%5 == 0 {
				p := int(seed+uint64(i)) % 2
				w := s.ResampleFromInfostate(p, &rng)
				samples++
				if !slices.Equal(w.ObservationTensor(p), s.ObservationTensor(p)) {
					t.Fatalf("seed %d step %d: seat %d's observation changed in the sampled world", seed, i, p)
				}
				if w.HandSize(1-p) != s.HandSize(1-p) || w.Hand(p) != s.Hand(p) {
					t.Fatalf("hand sizes or the player's own hand changed")
				}
				if w.Hand(1-p) != s.Hand(1-p) {
					changed++
				}
				ww := watch{stones: NumStones, wounds: w.t.wounds}
				checkState(t, w, &ww)
				d, err := g.DeserializeState(w.Serialize())
				if err != nil || !d.Equal(w) {
					t.Fatalf("a sampled world does not round-trip: %v", err)
				}
				if _, err := w.Record().Replay(); err != nil {
					t.Fatalf("a sampled world's record does not replay: %v", err)
				}
				if i%25 == 0 { // play the world out: it is a game like any other
					for !w.IsTerminal() {
						w.ApplyUnchecked(RandomBot{}.ActState(w, &rng))
						checkState(t, w, &ww)
					}
				}
			}
			s.ApplyUnchecked(RandomBot{}.ActState(s, &rng))
		}
	}
	if changed < samples/2 {
		t.Errorf("only %d of %d sampled worlds dealt the opponent another hand", changed, samples)
	}
}

func TestResampleIsDeterministicGivenItsRNG(t *testing.T) {
	g := MustNewGame(DefaultParams())
	s := g.NewInitialState(5)
	r1, r2 := env.NewRNG(1, 2), env.NewRNG(1, 2)
	if !s.ResampleFromInfostate(Goliath, &r1).Equal(s.ResampleFromInfostate(Goliath, &r2)) {
		t.Fatalf("two resamples from equal RNGs differ")
	}
}

func TestResampleRespectsASkippedDecision(t *testing.T) {
	// Goliath moves and David, holding no negate, is not asked: Goliath now
	// knows David holds no negate, and no sampled world may give him one.
	// David is then asked to move, so every sampled David holds a move card.
	s := position(t, setup{goliath: "d7", david: "h1", goliathHand: []int{KindMoveOrth3, KindBlock}, davidHand: []int{KindBlock, KindMoveDiag1}, stage: stMoveG})
	apply(t, s, move(KindMoveOrth3, dirOf("S")))
	wantStage(t, s, David, PhaseMove)
	rng := env.NewRNG(3, 3)
	for range 200 {
		w := s.ResampleFromInfostate(Goliath, &rng)
		h := w.Hand(David)
		if h[KindNegate] != 0 {
			t.Fatalf("a sampled David holds a negate:\n%s", w)
		}
		if w.NumLegal() < 2 {
			t.Fatalf("a sampled David has no move although he is asked to move:\n%s", w)
		}
	}
	if s.t.lacks[David]&(1<<KindNegate) == 0 {
		t.Fatalf("the skipped negate decision was not noted")
	}
}
