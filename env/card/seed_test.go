package card_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
)

// One seed fixes every deal of a game, whatever is played (package doc).
func TestSeedFixesTheDeals(t *testing.T) {
	for players := card.MinPlayers; players <= card.MaxPlayers; players++ {
		t.Run(fmt.Sprintf("%d players: the same seed deals the same hands whatever is played", players), func(t *testing.T) {
			g := newGame(t, card.Params{Players: players, Deals: 3})
			a, b := g.NewInitialState(77), g.NewInitialState(77)
			if a.Serialize() != b.Serialize() {
				t.Fatalf("two states from seed 77 differ at the start")
			}
			ra, rb := env.NewRNG(1, 1), env.NewRNG(2, 2)
			playToEnd(t, a, &ra)
			playToEnd(t, b, &rb)
			if slices.Equal(a.History(), b.History()) {
				t.Fatalf("the two playouts happened to be equal; pick other play seeds")
			}
			da, db := a.Record().Deals, b.Record().Deals
			for k := range da {
				if da[k].Hands != db[k].Hands || da[k].Dealer != db[k].Dealer {
					t.Errorf("deal %d differs between two games from the same seed", k)
				}
			}
			c := g.NewInitialState(78)
			if slices.Equal(c.Hand(0), g.NewInitialState(77).Hand(0)) {
				t.Errorf("seeds 77 and 78 deal seat 0 the same hand")
			}
		})
	}
	t.Run("NewStateFromDeals draws the deals it is not given from the seed", func(t *testing.T) {
		g := newGame(t, card.Params{Players: 4, Deals: 2})
		hands := craftDeal(t, 4, nil, nil)
		a, err := g.NewStateFromDeals(5, hands)
		if err != nil {
			t.Fatal(err)
		}
		for seat := range 4 {
			if want := slices.Sorted(slices.Values(hands[seat])); !slices.Equal(a.Hand(seat), want) {
				t.Fatalf("seat %d hand = %v, want the given %v", seat, names(a.Hand(seat)), names(want))
			}
		}
		b, _ := g.NewStateFromDeals(5, hands)
		r1, r2 := env.NewRNG(1, 1), env.NewRNG(1, 1)
		playToEnd(t, a, &r1)
		playToEnd(t, b, &r2)
		if a.Record().Deals[1].Hands != b.Record().Deals[1].Hands {
			t.Errorf("the drawn second deal differs between two states from seed 5")
		}
	})
	t.Run("the observation shape is the layout size", func(t *testing.T) {
		g := newGame(t, card.Params{Players: 5})
		if got := g.ObservationTensorShape(); !slices.Equal(got, []int{g.ObservationLayout().Size}) {
			t.Errorf("ObservationTensorShape() = %v, want [%d]", got, g.ObservationLayout().Size)
		}
		if g.NumPlayers() != 5 || g.ObservationLayout().Players != 5 {
			t.Errorf("NumPlayers() = %d, layout players %d, want 5", g.NumPlayers(), g.ObservationLayout().Players)
		}
	})
}
