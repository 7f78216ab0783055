package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/games"
)

// -roundrobin plays every pair once, in duplicate, and its table gives
// each row agent's score in each seat against each opponent: the same
// numbers a direct duplicate match of the pair gives, with the pair's
// two agents in either order.
func TestRoundRobinTableIsEveryPairsDuplicateMatch(t *testing.T) {
	var out, errs strings.Builder
	args := []string{"-game", "duel", "-roundrobin", "-agents", "random,heuristic,policy:duel", "-games", "30", "-seed", "4", "-quiet"}
	const dir = "../../policies" // the committed policies/duel.onnx
	if code := run(append(args, "-policies", dir), &out, &errs); code != 0 {
		t.Fatalf("run = %d: %s", code, errs.String())
	}
	table := out.String()
	if !strings.HasPrefix(table, "round robin of duel: 30 duplicate games a pair, seed 4,") {
		t.Fatalf("header: %q", table)
	}
	rows := map[string][]string{} // "agent seat" -> cells
	for line := range strings.Lines(table) {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) != 7 || !strings.Contains(line, "·") {
			continue
		}
		rows[strings.TrimSpace(f[1])+" "+strings.TrimSpace(f[2])] = f[3:6]
	}
	if len(rows) != 6 {
		t.Fatalf("want 6 rows (3 agents x 2 seats), got %d:\n%s", len(rows), table)
	}
	reg := games.Default()
	if err := loadPolicies(dir, reg); err != nil {
		t.Fatal(err)
	}
	typ, _ := reg.Lookup("duel")
	g, _ := typ.Default()
	agents := []string{"random", "heuristic", "policy:duel"}
	for i, a := range agents {
		for j, b := range agents {
			if i == j {
				continue
			}
			// the match in the order the row agent first, unlike the
			// table's (it plays each pair once, in -agents order)
			res, err := env.PlayMatchOf(reg, g, env.MatchConfig{Agents: []string{a, b}, Games: 30, Seed: 4, Duplicate: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, st := range res.BySeat() {
				if st.Agent != 0 {
					continue
				}
				want := fmt.Sprintf("%+.2f ± %.2f (%d-%d-%d)", st.Score.Mean, st.Score.CI95, st.Wins, st.Draws, st.Games-st.Wins-st.Draws)
				if got := strings.TrimSpace(rows[fmt.Sprintf("%s %d", a, st.Seat)][j]); got != want {
					t.Errorf("%s at seat %d against %s: table %q, direct match %q\n%s", a, st.Seat, b, got, want, table)
				}
			}
		}
	}
	if c := strings.TrimSpace(rows["heuristic 0"][0]); !strings.HasPrefix(c, "+0.") && !strings.HasPrefix(c, "+1.") {
		t.Errorf("heuristic as seat 0 against random: %q, want a clear win", c)
	}
}

// -roundrobin refuses what it cannot tabulate, with exit status 2 and a
// reason.
func TestRoundRobinRefuses(t *testing.T) {
	for _, c := range []struct {
		args []string
		why  string
	}{
		{[]string{"-players", "4", "-agents", "heuristic,random"}, "two-player"},
		{[]string{"-game", "duel", "-agents", "heuristic"}, "at least 2 agents"},
		{[]string{"-game", "duel", "-agents", "heuristic,random,heuristic"}, "named twice"},
		{[]string{"-game", "duel", "-agents", "heuristic,random", "-json", "x.json"}, "table only"},
	} {
		var out, errs strings.Builder
		if code := run(append(c.args, "-roundrobin", "-games", "2", "-quiet"), &out, &errs); code != 2 || !strings.Contains(errs.String(), c.why) {
			t.Errorf("run(%q) = %d, stderr %q; want 2 and %q", c.args, code, errs.String(), c.why)
		}
	}
}
