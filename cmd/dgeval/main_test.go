package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/games"
)

func TestDgevalWritesTheSameSummaryForTheSameSeed(t *testing.T) {
	dir := t.TempDir()
	model, err := os.ReadFile("../../env/policy/testdata/parity.onnx")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "par.onnx"), model, 0o644); err != nil {
		t.Fatal(err)
	}
	summary := func(name string) map[string]any {
		js, cs := filepath.Join(dir, name+".json"), filepath.Join(dir, name+".csv")
		var out, errs strings.Builder
		args := []string{"-players", "4", "-deals", "1", "-games", "8", "-duplicate", "-seed", "3", "-quiet",
			"-policies", dir, "-agents", "policy:par,heuristic,random,random", "-json", js, "-csv", cs}
		if code := run(args, &out, &errs); code != 0 {
			t.Fatalf("run = %d, stderr %q", code, errs.String())
		}
		if !strings.Contains(out.String(), "policy:par") {
			t.Fatalf("table does not name the policy:\n%s", out.String())
		}
		raw, err := os.ReadFile(js)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(cs)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		rows, err := csv.NewReader(f).ReadAll()
		if err != nil || len(rows) != 9 {
			t.Fatalf("csv has %d rows (%v), want a header and 8 games", len(rows), err)
		}
		return m
	}
	a, b := summary("a"), summary("b")
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Fatalf("same seed, different summaries:\n%s\n%s", ja, jb)
	}
}

func TestDgevalRefusesBadArguments(t *testing.T) {
	for _, args := range [][]string{
		{"-agents", "heuristic,random"},
		{"-agents", "nobody,random,random,random"},
		{"-players", "9"},
		{"-policies", "/does/not/exist"},
		{"-no-such-flag"},
	} {
		var out, errs strings.Builder
		if code := run(append(args, "-quiet"), &out, &errs); code != 2 {
			t.Errorf("run(%q) = %d, want 2", args, code)
		}
	}
}

func TestDgevalJSONSurvivesASingleGame(t *testing.T) {
	js := filepath.Join(t.TempDir(), "one.json")
	var out, errs strings.Builder
	if code := run([]string{"-games", "1", "-deals", "1", "-quiet", "-json", js}, &out, &errs); code != 0 {
		t.Fatalf("run = %d, stderr %q", code, errs.String())
	}
	raw, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Agents []struct {
			Score struct {
				Mean *float64 `json:"mean"`
				CI95 *float64 `json:"ci95"`
			} `json:"score"`
		} `json:"agents"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%v in %s", err, raw)
	}
	if len(m.Agents) != 2 || m.Agents[0].Score.Mean == nil || m.Agents[0].Score.CI95 != nil {
		t.Fatalf("one game: want a mean and a null interval, got %s", raw)
	}
}

// -scores summarises games played elsewhere with the same statistics: a
// match's -csv read back gives the match's -json, and hand-made games show
// the rules (tied winners share the win, seats of one agent are pooled).
func TestScoresFromCSV(t *testing.T) {
	dir := t.TempDir()
	js, cs, back := filepath.Join(dir, "m.json"), filepath.Join(dir, "m.csv"), filepath.Join(dir, "back.json")
	var out, errs strings.Builder
	if code := run([]string{"-games", "40", "-deals", "1", "-quiet", "-agents", "heuristic,random,heuristic,random", "-json", js, "-csv", cs}, &out, &errs); code != 0 {
		t.Fatalf("run = %d: %s", code, errs.String())
	}
	if code := run([]string{"-scores", cs, "-quiet", "-json", back}, &out, &errs); code != 0 {
		t.Fatalf("run -scores = %d: %s", code, errs.String())
	}
	a, _ := os.ReadFile(js)
	b, _ := os.ReadFile(back)
	var ma, mb map[string]any
	if json.Unmarshal(a, &ma) != nil || json.Unmarshal(b, &mb) != nil {
		t.Fatalf("bad JSON %s / %s", a, b)
	}
	delete(ma, "seed")
	delete(mb, "seed")
	delete(ma, "duplicate")
	delete(mb, "duplicate")
	if _, ok := mb["by_seat"]; ok || ma["by_seat"] == nil {
		t.Fatalf("by_seat: want it from a played match only, have %v / %v", ma["by_seat"], mb["by_seat"])
	}
	delete(ma, "by_seat") // the seating of games played elsewhere is unknown
	if ja, jb := mustJSON(t, ma), mustJSON(t, mb); ja != jb {
		t.Fatalf("-scores of a match's CSV differs:\n%s\n%s", ja, jb)
	}

	// Game 1: a and c tie for the best (10): a gets half the win, b none,
	// c (two seats, pooled) a half over its two seats = 1/4 per game.
	hand := filepath.Join(dir, "hand.csv")
	if err := os.WriteFile(hand, []byte("game,deal_seed,0:a,1:b,2:c,3:c\n0,1,10,4,10,2\n1,2,3,9,1,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hj := filepath.Join(dir, "hand.json")
	if code := run([]string{"-scores", hand, "-quiet", "-json", hj}, &out, &errs); code != 0 {
		t.Fatalf("run -scores = %d: %s", code, errs.String())
	}
	raw, _ := os.ReadFile(hj)
	var m struct {
		Games  int
		Agents []struct {
			Name  string
			Seats int
			Win   struct{ Mean float64 } `json:"win_rate"`
			Diff  struct{ Mean float64 } `json:"score_diff"`
		}
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	want := map[string][2]float64{ // win rate; score diff (own minus mean of the other three)
		"a": {0.25, ((10 - 16.0/3) + (3 - 11.0/3)) / 2},
		"b": {0.5, ((4 - 22.0/3) + (9 - 5.0/3)) / 2},
		"c": {0.125, (((10-16.0/3)+(2-24.0/3))/2 + ((1-13.0/3)+(1-13.0/3))/2) / 2},
	}
	if m.Games != 2 || len(m.Agents) != 3 {
		t.Fatalf("got %s", raw)
	}
	for _, ag := range m.Agents {
		w := want[ag.Name]
		if math.Abs(ag.Win.Mean-w[0]) > 1e-12 || math.Abs(ag.Diff.Mean-w[1]) > 1e-12 {
			t.Errorf("%s: win %v diff %v, want %v", ag.Name, ag.Win.Mean, ag.Diff.Mean, w)
		}
	}
	for _, bad := range []string{"game,deal_seed,a,b,c\n0,1,1,2,3\n", "game,deal_seed,0:a,1:b,2:c\n0,1,1,x,3\n", "game,deal_seed,0:a,1:b,2:c\n"} {
		p := filepath.Join(dir, "bad.csv")
		_ = os.WriteFile(p, []byte(bad), 0o644)
		if code := run([]string{"-scores", p, "-quiet"}, &out, &errs); code != 2 {
			t.Errorf("-scores of %q = %d, want 2", bad, code)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The duel, duplicate, by seat: each agent's record from each role, the
// heuristic far ahead of random in both.
func TestDgevalDuelBySeat(t *testing.T) {
	var out, errs strings.Builder
	js := filepath.Join(t.TempDir(), "duel.json")
	args := []string{"-game", "duel", "-agents", "heuristic,random", "-duplicate", "-games", "200", "-seed", "1", "-quiet", "-by-seat", "-json", js}
	if code := run(args, &out, &errs); code != 0 {
		t.Fatalf("run = %d, stderr %q", code, errs.String())
	}
	// The JSON carries the same records (what dgenv.evaluate reads).
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		BySeat []struct {
			Agent, Seat, Games, Wins, Draws, Losses int
			Name                                    string
		} `json:"by_seat"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.BySeat) != 4 {
		t.Fatalf("by_seat has %d rows, want 4: %s", len(got.BySeat), b)
	}
	for _, r := range got.BySeat {
		if r.Games != 100 || r.Wins+r.Draws+r.Losses != 100 || r.Name != []string{"heuristic", "random"}[r.Agent] {
			t.Errorf("by_seat row %+v", r)
		}
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(out.String(), "\n") {
		f := strings.Fields(line)
		if len(f) == 9 && (f[1] == "0" || f[1] == "1") { // name seat games mean ± ci wins draws losses
			rows[f[0]+"@"+f[1]] = f
		}
	}
	if len(rows) != 4 {
		t.Fatalf("want 4 by-seat rows, got:\n%s", out.String())
	}
	for _, seat := range []string{"0", "1"} {
		h, r := rows["heuristic@"+seat], rows["random@"+seat]
		if h[2] != "100" || r[2] != "100" {
			t.Errorf("seat %s: want 100 games each, got %v %v", seat, h, r)
		}
		var wins int
		if _, err := fmt.Sscan(h[6], &wins); err != nil || wins < 80 {
			t.Errorf("heuristic at seat %s won %s of 100", seat, h[6])
		}
	}
}

// dgeval plays every game of its build (the test build's test games too:
// go test -tags testgame) between that game's bots, by no game's name.
func TestDgevalPlaysEveryGameOfItsBuild(t *testing.T) {
	reg := games.Default()
	for _, name := range reg.Names() {
		t.Run(name, func(t *testing.T) {
			typ, _ := reg.Lookup(name)
			g, err := typ.Default()
			if err != nil {
				t.Fatal(err)
			}
			var bots []string
			for _, b := range reg.Bots(name) {
				if bot, err := reg.NewBot(g, b); err == nil && !env.IsCostly(bot) { // costly bots are slow under -race
					bots = append(bots, b)
				}
			}
			agents := make([]string, g.NumPlayers())
			for i := range agents {
				agents[i] = bots[i%len(bots)]
			}
			js := filepath.Join(t.TempDir(), "eval.json")
			var out, errs strings.Builder
			args := []string{"-game", name, "-agents", strings.Join(agents, ","), "-games", "6", "-seed", "2", "-quiet", "-json", js}
			if code := run(args, &out, &errs); code != 0 {
				t.Fatalf("run(%q) = %d, stderr %q", args, code, errs.String())
			}
			raw, err := os.ReadFile(js)
			if err != nil {
				t.Fatal(err)
			}
			var m struct {
				Games   int `json:"games"`
				Players int `json:"players"`
			}
			if err := json.Unmarshal(raw, &m); err != nil || m.Games != 6 || m.Players != g.NumPlayers() {
				t.Fatalf("summary %s (%v), want 6 games of %d players", raw, err, g.NumPlayers())
			}
		})
	}
}

// -players and -deals are the game's parameters of those names, when the
// game has them: dgenv.evaluate passes -players for every game, and a game
// without the parameter plays its own count, as before.
func TestDgevalPlayersOnlyForAGameWithThem(t *testing.T) {
	for _, c := range []struct {
		args    []string
		players int
	}{
		{[]string{"-game", "duel", "-agents", "heuristic,random", "-players", "2"}, 2},
		{[]string{"-players", "3", "-deals", "1", "-agents", "heuristic,random,random"}, 3},
	} {
		js := filepath.Join(t.TempDir(), "eval.json")
		var out, errs strings.Builder
		if code := run(append(c.args, "-games", "2", "-quiet", "-json", js), &out, &errs); code != 0 {
			t.Fatalf("run(%q) = %d, stderr %q", c.args, code, errs.String())
		}
		raw, _ := os.ReadFile(js)
		var m struct {
			Players int `json:"players"`
		}
		if err := json.Unmarshal(raw, &m); err != nil || m.Players != c.players {
			t.Fatalf("run(%q): summary %s, want %d players", c.args, raw, c.players)
		}
	}
}
