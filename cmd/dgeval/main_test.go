package main

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
