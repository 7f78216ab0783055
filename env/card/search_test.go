package card_test

import (
	"testing"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
)

// The search bot must only ever choose legal cards, for every player count,
// and must be reproducible from its RNG.
func TestSearchBotPlaysLegalAndReproducibly(t *testing.T) {
	bot := card.SearchBot{Worlds: 3, Workers: 2}
	for p := card.MinPlayers; p <= card.MaxPlayers; p++ {
		g, err := card.NewGame(card.Params{Players: p, Deals: 1})
		if err != nil {
			t.Fatal(err)
		}
		s1 := g.NewInitialState(uint64(p))
		s2 := g.NewInitialState(uint64(p))
		r1, r2 := env.NewRNG(1, uint64(p)), env.NewRNG(1, uint64(p))
		for step := 0; !s1.IsTerminal(); step++ {
			a1, a2 := bot.ActState(s1, &r1), bot.ActState(s2, &r2)
			if a1 != a2 {
				t.Fatalf("players %d step %d: same state and seed chose %d and %d", p, step, a1, a2)
			}
			if err := s1.ApplyAction(a1); err != nil {
				t.Fatalf("players %d step %d: %v", p, step, err)
			}
			if err := s2.ApplyAction(a2); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// fixedPrior scores one card far above the rest.
type fixedPrior struct {
	pick func(s *card.State) card.Action
}

func (f fixedPrior) Scores(s *card.State, out *[card.NumActions]float32) {
	clear(out[:])
	out[f.pick(s)] = 1
}

// Values is what Act maximises; a prior of weight 0 changes nothing, and a
// heavy prior decides.
func TestSearchValuesAndPrior(t *testing.T) {
	g, _ := card.NewGame(card.Params{Players: 4, Deals: 1})
	last := func(s *card.State) card.Action { l := s.LegalActions(); return l[len(l)-1] }
	for seed := range uint64(6) {
		s := g.NewInitialState(seed)
		for range 5 + seed {
			_ = s.ApplyAction(s.LegalActions()[0])
		}
		legal := s.LegalActions()
		if len(legal) < 2 {
			continue
		}
		plain := card.SearchBot{Worlds: 8, Workers: 2}
		q := make([]float64, len(legal))
		r := env.NewRNG(seed, 1)
		plain.Values(s, &r, legal, q)
		best := 0
		for i := range q {
			if q[i] > q[best] {
				best = i
			}
		}
		r = env.NewRNG(seed, 1)
		if a := plain.ActState(s, &r); a != legal[best] {
			t.Fatalf("seed %d: Act = %d, argmax of Values = %d (%v)", seed, a, legal[best], q)
		}
		zero := plain
		zero.Prior, zero.PriorWeight = fixedPrior{last}, 0
		r = env.NewRNG(seed, 1)
		if a := zero.ActState(s, &r); a != legal[best] {
			t.Fatalf("seed %d: weight-0 prior changed the choice to %d", seed, a)
		}
		heavy := plain
		heavy.Prior, heavy.PriorWeight = fixedPrior{last}, 1000
		r = env.NewRNG(seed, 1)
		if a := heavy.ActState(s, &r); a != last(s) {
			t.Fatalf("seed %d: heavy prior on %d, Act chose %d", seed, last(s), a)
		}
	}
}
