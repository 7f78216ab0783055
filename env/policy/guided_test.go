package policy_test

import (
	"testing"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/policy"
)

// The prior a guided search reads is the policy's logits of the acting
// seat's observation.
func TestPriorScoresAreTheLogits(t *testing.T) {
	model, _, _ := readParity(t)
	p, err := policy.Parse("parity", model)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := env.NewGame(env.Params{Players: 4})
	s := g.NewInitialState(3)
	for range 6 {
		_ = s.ApplyAction(s.LegalActions()[0])
	}
	var got [env.NumActions]float32
	policy.Prior{Policy: p}.Scores(s, &got)
	want := make([]float32, env.NumActions)
	if err := p.Logits(s.ObservationTensor(s.CurrentPlayer()), 1, want); err != nil {
		t.Fatal(err)
	}
	for a := range want {
		if got[a] != want[a] {
			t.Fatalf("prior[%d] = %v, logits %v", a, got[a], want[a])
		}
	}
}

// Register makes "search:policy:<name>": a search bot guided by the policy,
// playing legal games of the policy's player count only.
func TestGuidedSearchIsRegisteredAndPlays(t *testing.T) {
	model, _, _ := readParity(t)
	p, err := policy.Parse("guidetest", model)
	if err != nil {
		t.Fatal(err)
	}
	policy.Register(map[string]*policy.Policy{"guidetest": p})
	bot, err := env.NewBot("search:policy:guidetest")
	if err != nil {
		t.Fatal(err)
	}
	gd, ok := bot.(policy.Guided)
	if !ok || gd.Prior == nil || gd.PriorWeight != policy.GuidedWeight {
		t.Fatalf("search:policy:guidetest is %T %+v, want a Guided search with the policy as prior", bot, bot)
	}
	gd.Worlds = 2 // keep the test short
	res, err := env.PlayMatch(env.MatchConfig{
		Params: env.Params{Players: 4, Deals: 1}, Agents: []string{"search:policy:guidetest", "heuristic", "random", "heuristic"},
		Games: 2, Seed: 1,
	})
	if err != nil || len(res.Scores) != 2 {
		t.Fatalf("PlayMatch = %v, %v", res, err)
	}
	g3, _ := env.NewGame(env.Params{Players: 3})
	if err := gd.CheckGame(g3); err == nil {
		t.Fatal("a 4-player policy's guided search accepted a 3-player game")
	}
	g, _ := env.NewGame(env.Params{Players: 4, Deals: 1})
	s := g.NewInitialState(5)
	rng := env.NewRNG(1, 2)
	for !s.IsTerminal() {
		if err := s.ApplyAction(gd.Act(s, &rng)); err != nil {
			t.Fatal(err)
		}
	}
}
