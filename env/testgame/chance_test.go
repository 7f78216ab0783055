package testgame_test

import (
	"fmt"
	"testing"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/envtest"
	"github.com/davidgoliath/dgenv/env/testgame"
)

// TestNimsChanceStatesKeepTheContract runs the explicit-chance checks on
// the test game: a game whose one chance node has no ChanceRun, unlike the
// card game's deals.
func TestNimsChanceStatesKeepTheContract(t *testing.T) {
	for _, given := range []map[string]any{nil, {"players": 3, "heap": 25, "take": 5}, {"heap": 1, "take": 1}} {
		t.Run(fmt.Sprint(given), func(t *testing.T) {
			g, err := testgame.Type().New(given)
			if err != nil {
				t.Fatal(err)
			}
			envtest.ChanceConformance(t, g.(env.ChanceGame), 20, 3)
		})
	}
}

// TestNimsChanceNodeIsTheSeedsFirstSeat: the chance outcome k starts the
// game State starts from seed k.
func TestNimsChanceNodeIsTheSeedsFirstSeat(t *testing.T) {
	g, _ := testgame.Type().New(map[string]any{"players": 3})
	for k := range 3 {
		c := g.(env.ChanceGame).NewChanceState()
		if err := c.ApplyAction(k); err != nil {
			t.Fatal(err)
		}
		if got, want := c.CurrentPlayer(), g.NewInitialState(uint64(k)).CurrentPlayer(); got != want {
			t.Errorf("after chance outcome %d: seat %d to act, want %d", k, got, want)
		}
	}
}
