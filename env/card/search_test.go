package card_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

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

// valuePrior scores each card by its value, a prior that orders every card.
type valuePrior struct{}

func (valuePrior) Scores(s *card.State, out *[card.NumActions]float32) {
	for a := range out {
		out[a] = float32(a % 18)
	}
}

// A guided search's ActionValues are the scores it chooses by: their first
// maximum is its Act (with a prior and a second look at the best cards,
// from the same random numbers, which they draw alike), the cards outside
// the second look score below every card inside it, and without a prior
// or a second look they are its Values. So a labeller (dgteach) that takes
// a guided search's values labels its choices.
func TestGuidedScoresAreItsChoice(t *testing.T) {
	g, _ := card.NewGame(card.Params{Players: 5, Deals: 1})
	guided := card.SearchBot{Worlds: 6, Workers: 1, Focus: 2, FocusWorlds: 10, Prior: valuePrior{}, PriorWeight: 2}
	looked := 0
	for seed := range uint64(40) {
		s := g.NewInitialState(seed)
		rng := env.NewRNG(seed, 2)
		for range seed % 15 {
			l := s.LegalActions()
			_ = s.ApplyAction(l[rng.IntN(len(l))])
		}
		legal := s.LegalActions()
		if len(legal) < 2 {
			continue
		}
		ints := make([]int, len(legal))
		for i, a := range legal {
			ints[i] = int(a)
		}
		sp := &card.SpielState{S: s}
		sc := make([]float64, len(legal))
		r1 := env.NewRNG(seed, 3)
		guided.ActionValues(sp, &r1, ints, sc)
		r2 := env.NewRNG(seed, 3)
		a := guided.ActState(s, &r2)
		best := 0
		for i := range sc {
			if sc[i] > sc[best] {
				best = i
			}
		}
		require.Equal(t, a, legal[best], "seed %d: Act against the first maximum of %v", seed, sc)
		require.Equal(t, r2, r1, "seed %d: ActionValues drew other numbers than Act", seed)
		if len(legal) > guided.Focus {
			looked++
			in := slices.Clone(sc)
			slices.Sort(in)
			low := in[len(in)-guided.Focus] // the lowest card of the second look
			n := 0
			for _, x := range sc {
				if x >= low {
					n++
				}
			}
			require.Equal(t, guided.Focus, n, "seed %d: %d cards score as much as the second look's lowest (%v)", seed, n, sc)
		}
		plain := card.SearchBot{Worlds: 6, Workers: 1}
		pv := make([]float64, len(legal))
		r3 := env.NewRNG(seed, 3)
		plain.ActionValues(sp, &r3, ints, pv)
		want := make([]float64, len(legal))
		r4 := env.NewRNG(seed, 3)
		plain.Values(s, &r4, legal, want)
		require.Equal(t, want, pv, "seed %d: the plain search's ActionValues are not its Values", seed)
	}
	require.Greater(t, looked, 20, "too few positions with a second look")
}
