package env_test

import (
	"testing"

	"github.com/davidgoliath/dgenv/env"
)

// The search bot must only ever choose legal cards, for every player count,
// and must be reproducible from its RNG.
func TestSearchBotPlaysLegalAndReproducibly(t *testing.T) {
	bot := env.SearchBot{Worlds: 3, Workers: 2}
	for p := env.MinPlayers; p <= env.MaxPlayers; p++ {
		g, err := env.NewGame(env.Params{Players: p, Deals: 1})
		if err != nil {
			t.Fatal(err)
		}
		s1 := g.NewInitialState(uint64(p))
		s2 := g.NewInitialState(uint64(p))
		r1, r2 := env.NewRNG(1, uint64(p)), env.NewRNG(1, uint64(p))
		for step := 0; !s1.IsTerminal(); step++ {
			a1, a2 := bot.Act(s1, &r1), bot.Act(s2, &r2)
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
