package main

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func f32At(b []byte, i int) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])) }
func i16At(b []byte, i int) int     { return int(int16(binary.LittleEndian.Uint16(b[2*i:]))) }

// TestRolloutValuesReplayTheTable: -teacher rollout plays each card in the
// true state and lets the table's bots finish the deal. At a table of
// deterministic bots (the heuristic) with no exploration, the card the
// table played is valued by exactly the deal that followed: q[played] is
// the recorded ret, to the last bit, for every record. The other cards get
// values of their own (a card's deal is not every card's deal).
func TestRolloutValuesReplayTheTable(t *testing.T) {
	dir := t.TempDir()
	var errb bytes.Buffer
	args := []string{"-players", "4", "-deals", "1", "-table", "heuristic,heuristic,heuristic,heuristic", "-teacher", "rollout",
		"-rollouts", "1", "-eps", "0", "-games", "2", "-shard-games", "1", "-out", dir, "-quiet"}
	if rc := run(args, &errb); rc != 0 {
		t.Fatalf("rc %d: %s", rc, errb.String())
	}
	meta, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"teacher": "rollout"`, `"worlds": 1`, `"rollouts": 1`, `"rollout_table": [`} {
		if !strings.Contains(string(meta), want) {
			t.Fatalf("meta.json lacks %s:\n%s", want, meta)
		}
	}
	differ := 0
	for _, name := range []string{"shard-00000.npz", "shard-00001.npz"} {
		a, _ := readShard(t, filepath.Join(dir, name))
		n := replaysTheDeal(t, a, name, 40)
		for i := range n {
			p := i16At(a["played"], i)
			for c := range 90 {
				if a["mask"][90*i+c] == 1 && c != p && f32At(a["q"], 90*i+c) != f32At(a["q"], 90*i+p) {
					differ++
					break
				}
			}
		}
	}
	if differ == 0 {
		t.Fatal("every card of every decision has the played card's value")
	}
}

// replaysTheDeal checks that at every record of shard a (of the card game,
// with -rollouts 1 at a table of deterministic bots) the played card's value
// is the deal that followed it, and returns the record count (fewer than
// least records fail t).
func replaysTheDeal(t *testing.T, a map[string][]byte, name string, least int) int {
	t.Helper()
	n := len(a["played"]) / 2
	if n < least {
		t.Fatalf("%s: %d records", name, n)
	}
	for i := range n {
		p := i16At(a["played"], i)
		if q, r := f32At(a["q"], 90*i+p), f32At(a["ret"], i); q != r {
			t.Fatalf("%s record %d (seat %d): q of the played card %d is %v, the deal gave %v", name, i, a["seat"][i], p, q, r)
		}
	}
	return n
}

// TestRolloutLabelSeats: -label-seats 0 labels the decisions of table
// position 0 only (game k rotates the table by k seats), and they are the
// records an all-seat run writes for that seat: the same games, the same
// values. The rollout table stands in for the table in the playouts.
func TestRolloutLabelSeats(t *testing.T) {
	all, one := t.TempDir(), t.TempDir()
	base := []string{"-players", "4", "-deals", "1", "-table", "heuristic,random,heuristic,random", "-teacher", "rollout",
		"-rollout-table", "heuristic,heuristic,random,heuristic", "-rollouts", "2", "-games", "3", "-shard-games", "1", "-workers", "2", "-quiet"}
	for _, c := range []struct {
		dir   string
		extra []string
	}{{all, nil}, {one, []string{"-label-seats", "0"}}} {
		var errb bytes.Buffer
		if rc := run(append(append([]string{"-out", c.dir}, base...), c.extra...), &errb); rc != 0 {
			t.Fatalf("rc %d: %s", rc, errb.String())
		}
	}
	for k := range 3 {
		name := "shard-0000" + itoa(k) + ".npz"
		a, _ := readShard(t, filepath.Join(all, name))
		b, _ := readShard(t, filepath.Join(one, name))
		seat := (4 - k%4) % 4 // the seat at table position 0 in game k
		j := 0
		for i := range len(a["seat"]) {
			if int(a["seat"][i]) != seat {
				continue
			}
			if j >= len(b["seat"]) || int(b["seat"][j]) != seat {
				t.Fatalf("game %d: the label-seats run lacks record %d of seat %d", k, i, seat)
			}
			for _, key := range []string{"obs", "mask", "q"} {
				w := len(a[key]) / len(a["seat"])
				if !bytes.Equal(a[key][w*i:w*(i+1)], b[key][w*j:w*(j+1)]) {
					t.Fatalf("game %d record %d: %s differs from the all-seat run's", k, i, key)
				}
			}
			j++
		}
		if j == 0 || j != len(b["seat"]) {
			t.Fatalf("game %d: %d records of seat %d in the all-seat run, %d in the label-seats run", k, j, seat, len(b["seat"]))
		}
	}
	for _, args := range [][]string{
		{"-teacher", "rollout", "-rollouts", "0"},
		{"-teacher", "rollout", "-worlds", "8"},
		{"-teacher", "rollout", "-prior", "x"},
		{"-teacher", "rollout", "-rollout-table", "heuristic,random"},
		{"-teacher", "rollout", "-rollout-table", "heuristic,nosuchbot,random,random"},
		{"-rollout-table", "heuristic,heuristic,heuristic,heuristic"},
		{"-label-seats", "4"},
		{"-label-seats", "x"},
		{"-game", "duel", "-teacher", "heuristic", "-label-seats", "0"},
	} {
		var errb bytes.Buffer
		if rc := run(append(args, "-out", t.TempDir(), "-games", "1", "-quiet"), &errb); rc == 0 || errb.Len() == 0 {
			t.Errorf("%v: rc %d, stderr %q; want an error", args, rc, errb.String())
		}
	}
}

// TestRolloutWorlds: -rollout-worlds sets the worlds of the rollout table's
// searches and nothing else. The table's games are the same whatever it
// says (the same records but for q); the search's own budget (32 worlds) given
// explicitly labels bit for bit as the flag left out; 1 world labels
// otherwise. A rollout table with no search, a negative count and the flag
// without -teacher rollout are errors.
func TestRolloutWorlds(t *testing.T) {
	base := []string{"-players", "4", "-deals", "1", "-table", "heuristic,heuristic,heuristic,heuristic", "-teacher", "rollout",
		"-rollout-table", "heuristic,search,heuristic,heuristic", "-rollouts", "1", "-label-seats", "0", "-eps", "0",
		"-games", "1", "-shard-games", "1", "-workers", "1", "-seed", "5", "-quiet"}
	label := func(extra ...string) (map[string][]byte, string) { return labelShard(t, base, extra...) }
	def, defMeta := label()
	w32, meta32 := label("-rollout-worlds", "32")
	w1, _ := label("-rollout-worlds", "1")
	if strings.Contains(defMeta, "rollout_worlds") || !strings.Contains(meta32, `"rollout_worlds": 32`) {
		t.Fatalf("meta.json: rollout_worlds should be recorded when given only:\n%s\n%s", defMeta, meta32)
	}
	if len(def["seat"]) < 2*4 {
		t.Fatalf("%d records", len(def["seat"])/2)
	}
	for _, key := range []string{"obs", "mask", "played", "ret", "seat"} {
		if !bytes.Equal(def[key], w32[key]) || !bytes.Equal(def[key], w1[key]) {
			t.Fatalf("%s differs with -rollout-worlds: the table's games should not depend on it", key)
		}
	}
	if !bytes.Equal(def["q"], w32["q"]) {
		t.Fatal("-rollout-worlds 32 (the search's own budget) labels otherwise than no flag")
	}
	if bytes.Equal(def["q"], w1["q"]) {
		t.Fatal("-rollout-worlds 1 labels as 32 worlds do: the flag does not reach the rollouts' search")
	}
	for _, args := range [][]string{
		{"-teacher", "rollout", "-rollout-table", "heuristic,heuristic,random,random", "-rollout-worlds", "8"},
		{"-teacher", "rollout", "-rollout-worlds", "-1"},
		{"-rollout-worlds", "8"},
	} {
		var errb bytes.Buffer
		if rc := run(append(args, "-out", t.TempDir(), "-games", "1", "-quiet"), &errb); rc == 0 || !strings.Contains(errb.String(), "-rollout-worlds") {
			t.Errorf("%v: rc %d, stderr %q; want an error naming -rollout-worlds", args, rc, errb.String())
		}
	}
}

// labelShard runs dgteach with base and extra flags into a new directory
// and returns its first shard's arrays and its meta.json.
func labelShard(t *testing.T, base []string, extra ...string) (map[string][]byte, string) {
	t.Helper()
	dir := t.TempDir()
	var errb bytes.Buffer
	if rc := run(append(append([]string{"-out", dir}, base...), extra...), &errb); rc != 0 {
		t.Fatalf("%v: rc %d: %s", extra, rc, errb.String())
	}
	a, _ := readShard(t, filepath.Join(dir, "shard-00000.npz"))
	meta, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	return a, string(meta)
}
