package policy_test

import (
	"os"
	"testing"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
	"github.com/davidgoliath/dgenv/env/games"
	"github.com/davidgoliath/dgenv/env/policy"
)

// The committed expert-iteration network (policies/expert.onnx, iteration 2
// of --preset expert-rollout, the policy iteration on the table's own values
// from iteration 27 of the --ret-mix 0.5 continuation, now
// policies/expert-27.onnx; docs/training.md "Session 28") plays the 4-player
// card game, and one seat of it against three heuristic bots scores clearly
// more than the committed imitation network in the same games
// (docs/training.md: +38.49 against +9.53 over 2,000 duplicate games; in
// these 96, +41.09 ± 6.40 against +9.63 ± 6.87).
// Bots and seeds are deterministic: the same games every run.
func TestCommittedExpertPolicy(t *testing.T) {
	reg := games.Default()
	ps, err := policy.LoadFS(reg, os.DirFS("../../policies"), nil)
	if err != nil {
		t.Fatal(err)
	}
	p := ps["expert"]
	if p == nil {
		t.Fatal("policies/expert.onnx is not committed")
	}
	g4, _ := card.NewGame(card.Params{Players: 4})
	if m := p.Meta(); m.GameName != card.GameName || m.ObsSize != g4.ObservationLayout().Size || m.NumActions != card.NumActions {
		t.Fatalf("policies/expert.onnx: game %s, %d observation elements, %d actions; want the 4-player card game's", m.GameName, m.ObsSize, m.NumActions)
	}
	if err := policy.Register(reg, ps); err != nil {
		t.Fatal(err)
	}
	typ, _ := reg.Lookup(card.GameName)
	g, _ := typ.Default()
	diff := func(agent string) env.Estimate {
		res, err := env.PlayMatchOf(reg, g, env.MatchConfig{Agents: []string{agent, "heuristic", "heuristic", "heuristic"}, Games: 96, Seed: 1, Duplicate: true})
		if err != nil {
			t.Fatal(err) // an illegal action is an error here
		}
		for _, a := range res.Summarize() {
			if a.Name == agent {
				return a.Diff
			}
		}
		t.Fatalf("no record of %s", agent)
		return env.Estimate{}
	}
	expert, imitate := diff("policy:expert"), diff("policy:imitate-search")
	if expert.Mean-expert.CI95 <= max(0, imitate.Mean) {
		t.Errorf("against three heuristic bots, 96 duplicate games: expert %+.2f ± %.2f, imitate-search %+.2f ± %.2f; want the expert's interval above 0 and above imitate-search's mean",
			expert.Mean, expert.CI95, imitate.Mean, imitate.CI95)
	}
	t.Logf("against three heuristic bots, 96 duplicate games: expert %+.2f ± %.2f, imitate-search %+.2f ± %.2f", expert.Mean, expert.CI95, imitate.Mean, imitate.CI95)
}

// One decision of the committed expert-iteration network (512-256-256),
// averaged over a game's decisions (one core): the budget is 100 µs.
func BenchmarkDecisionExpert(b *testing.B) {
	benchDecisions(b, policy.Bot{Policy: committed(b, "expert"), Greedy: true})
}
