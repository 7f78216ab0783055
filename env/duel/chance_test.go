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

func TestTheDuelsChanceStatesKeepTheContract(t *testing.T) {
	games := 6
	if testing.Short() {
		games = 2
	}
	t.Run("max_rounds 100", func(t *testing.T) { envtest.ChanceConformance(t, chanceGame(t, 100), games, 7) })
	t.Run("max_rounds 3 (draws)", func(t *testing.T) { envtest.ChanceConformance(t, chanceGame(t, 3), 2*games, 3) })
}
