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
