package card_test

import (
	"math"
	"testing"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
)

// TestHeuristicBeatsRandom plays one heuristic seat against three random
// seats and asks for a margin far outside chance: the mean per-deal lead of
// the heuristic over the random seats' mean must exceed five standard errors.
func TestHeuristicBeatsRandom(t *testing.T) {
	const games = 2000
	g := newGame(t, card.Params{Players: 4, Deals: 1})
	heuristic, random := card.HeuristicBot{}, card.RandomBot{}
	rng := env.NewRNG(2024, 1)
	var sum, sumSq, hSum, rSum float64
	for i := range games {
		s := g.NewInitialState(uint64(i))
		hSeat := i % 4 // every seat takes its turn as the heuristic
		for !s.IsTerminal() {
			var a card.Action
			if s.CurrentPlayer() == hSeat {
				a = heuristic.ActState(s, &rng)
			} else {
				a = random.ActState(s, &rng)
			}
			if err := s.ApplyAction(a); err != nil {
				t.Fatalf("game %d: bot chose an illegal action: %v", i, err)
			}
		}
		tot := s.Totals()
		others := 0.0
		for seat, x := range tot {
			if seat != hSeat {
				others += float64(x)
			}
		}
		others /= 3
		d := float64(tot[hSeat]) - others
		sum += d
		sumSq += d * d
		hSum += float64(tot[hSeat])
		rSum += others
	}
	mean := sum / games
	se := math.Sqrt((sumSq/games - mean*mean) / (games - 1))
	t.Logf("heuristic %.2f vs random %.2f points a deal: lead %.2f, standard error %.2f", hSum/games, rSum/games, mean, se)
	if mean <= 5*se {
		t.Errorf("heuristic leads random by %.2f points a deal, want more than 5 standard errors (%.2f)", mean, 5*se)
	}
}
