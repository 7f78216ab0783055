package duel_test

import (
	"testing"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/duel"
	"github.com/davidgoliath/dgenv/env/envtest"
)

func chanceGame(t *testing.T, maxRounds int) env.ChanceGame {
	t.Helper()
	g, err := duel.SpielType().New(map[string]any{"max_rounds": maxRounds})
	if err != nil {
		t.Fatal(err)
	}
	cg, ok := g.(env.ChanceGame)
	if !ok {
		t.Fatalf("%T is not an env.ChanceGame", g)
	}
	return cg
}

// Whole games (about 40 rounds, some 700 nodes: every node's text is
// replayed, so a game costs seconds under -race) and short ones that end
// drawn at max_rounds, resampled more often.
func TestTheDuelsChanceStatesKeepTheContract(t *testing.T) {
	t.Run("max_rounds 100", func(t *testing.T) { envtest.ChanceConformance(t, chanceGame(t, 100), 2, 29) })
	t.Run("max_rounds 8", func(t *testing.T) { envtest.ChanceConformance(t, chanceGame(t, 8), 6, 5) })
}

// randomPlay applies random outcomes (by their odds) and actions to the end.
func randomPlay(b *testing.B, s env.ChanceState, rng *env.RNG, stopAt int) int {
	n := 0
	for !s.IsTerminal() && n != stopAt {
		legal := s.AppendLegalActions(nil)
		a := legal[rng.IntN(len(legal))]
		if s.CurrentPlayer() == env.ChancePlayer {
			a = env.SampleChance(s.AppendChanceOutcomes(nil), rng.Float64())
		}
		if err := s.ApplyAction(a); err != nil {
			b.Fatal(err)
		}
		n++
	}
	return n
}

// BenchmarkChanceStateGame: a whole random duel of explicit-chance states.
func BenchmarkChanceStateGame(b *testing.B) {
	g := chanceGameB(b)
	rng := env.NewRNG(1, 2)
	nodes := 0
	for b.Loop() {
		nodes += randomPlay(b, g.NewChanceState(), &rng, -1)
	}
	b.ReportMetric(float64(nodes)/float64(b.N), "nodes/game")
}

// BenchmarkChanceStateResample: ResampleFromInfostate 300 nodes into a game.
func BenchmarkChanceStateResample(b *testing.B) {
	g := chanceGameB(b)
	rng := env.NewRNG(3, 4)
	var s env.ChanceState
	for s == nil || s.IsTerminal() {
		s = g.NewChanceState()
		randomPlay(b, s, &rng, 300)
	}
	seed := uint64(0)
	for b.Loop() {
		seed++
		if _, err := s.ResampleFromInfostate(int(seed%2), seed); err != nil {
			b.Fatal(err)
		}
	}
}

func chanceGameB(b *testing.B) env.ChanceGame {
	g, err := duel.SpielType().New(map[string]any{"max_rounds": 100})
	if err != nil {
		b.Fatal(err)
	}
	return g.(env.ChanceGame)
}
