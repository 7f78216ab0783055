package policy_test

import (
	"os"
	"testing"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/games"
	"github.com/davidgoliath/dgenv/env/policy"
)

// The committed duel policy (policies/duel.onnx, docs/training.md "The
// duel") is a bot of the duel and of nothing else, plays legal games in
// both roles, and beats the duel's heuristic as Goliath and does better
// than the heuristic itself as David. The policy and the heuristic are
// deterministic and the seeds fixed: the same games every run.
func TestCommittedDuelPolicy(t *testing.T) {
	reg := games.Default()
	ps, err := policy.LoadFS(reg, os.DirFS("../../policies"), nil)
	if err != nil {
		t.Fatal(err)
	}
	p := ps["duel"]
	if p == nil {
		t.Fatal("policies/duel.onnx is not committed")
	}
	if m := p.Meta(); m.GameName != "duel" || m.NumActions != 117 {
		t.Fatalf("policies/duel.onnx: game %s, %d actions", m.GameName, m.NumActions)
	}
	if err := policy.Register(reg, ps); err != nil {
		t.Fatal(err)
	}
	typ, _ := reg.Lookup("duel")
	g, _ := typ.Default()
	match := func(agents ...string) []env.SeatStats {
		res, err := env.PlayMatchOf(reg, g, env.MatchConfig{Agents: agents, Games: 400, Seed: 1, Duplicate: true})
		if err != nil {
			t.Fatal(err) // an illegal action is an error here
		}
		return res.BySeat()
	}
	score := func(rows []env.SeatStats, agent, seat int) env.Estimate {
		for _, r := range rows {
			if r.Agent == agent && r.Seat == seat {
				return r.Score
			}
		}
		t.Fatalf("no record of agent %d at seat %d", agent, seat)
		return env.Estimate{}
	}
	vs := match("policy:duel", "heuristic")
	mirror := match("heuristic", "heuristic")
	goliath, david := score(vs, 0, 0), score(vs, 0, 1)
	if goliath.Mean-goliath.CI95 <= 0 {
		t.Errorf("as Goliath against the heuristic: %+.3f ± %.3f, want clearly above 0", goliath.Mean, goliath.CI95)
	}
	if hd := score(mirror, 0, 1); david.Mean <= hd.Mean {
		t.Errorf("as David against the heuristic: %+.3f, no better than the heuristic's own David (%+.3f)", david.Mean, hd.Mean)
	}
	t.Logf("against the heuristic, 400 duplicate games: Goliath %+.3f ± %.3f, David %+.3f ± %.3f", goliath.Mean, goliath.CI95, david.Mean, david.CI95)
}
