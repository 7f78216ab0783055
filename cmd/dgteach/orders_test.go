package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPosition: game k seats the table rotated by k (orders 1, the seating
// every run before -orders had); with orders 2 the games k mod 2p >= p
// seat it in the reversed order, so over 2p games every position sits at
// every seat twice and is followed once each way round.
func TestPosition(t *testing.T) {
	for p := 2; p <= 6; p++ {
		for _, orders := range []int{1, 2} {
			at := make([][]int, p) // at[position][seat]: games
			for k := range 4 * p {
				seen := make([]bool, p)
				for seat := range p {
					pos := position(seat, k, p, orders)
					if pos < 0 || pos >= p || seen[pos] {
						t.Fatalf("p %d orders %d game %d: seat %d gets position %d twice or out of range", p, orders, k, seat, pos)
					}
					seen[pos] = true
					if k < 2*p {
						if at[pos] == nil {
							at[pos] = make([]int, p)
						}
						at[pos][seat]++
					}
					reversed := orders == 2 && k%(2*p) >= p
					if !reversed && pos != (seat+k)%p {
						t.Fatalf("p %d orders %d game %d: seat %d at position %d, want the rotation's %d", p, orders, k, seat, pos, (seat+k)%p)
					}
					next := position((seat+1)%p, k, p, orders) // the seat that plays after this one
					want := (pos + 1) % p
					if reversed {
						want = (pos + p - 1) % p
					}
					if next != want {
						t.Fatalf("p %d orders %d game %d: position %d is followed by %d, want %d", p, orders, k, pos, next, want)
					}
				}
			}
			for pos := range p {
				for seat := range p {
					if at[pos][seat] != 2 {
						t.Fatalf("p %d orders %d: position %d at seat %d in %d of the first %d games, want 2", p, orders, pos, seat, at[pos][seat], 2*p)
					}
				}
			}
		}
	}
}

// TestOrders: -orders 1 writes what no -orders wrote; -orders 2 plays the
// first P games the same (bit for bit) and the next P in the table's
// reversed order, position 0 (the labelled one) at seat k mod P of game k;
// -orders 3 is refused.
func TestOrders(t *testing.T) {
	base := []string{"-players", "3", "-deals", "1", "-table", "heuristic,heuristic,random", "-teacher", "rollout",
		"-rollouts", "1", "-games", "6", "-shard-games", "1", "-label-seats", "0", "-workers", "2", "-quiet"}
	dirs := map[string]string{}
	for _, o := range []string{"", "1", "2"} {
		dirs[o] = t.TempDir()
		args := append([]string{"-out", dirs[o]}, base...)
		if o != "" {
			args = append(args, "-orders", o)
		}
		var errb bytes.Buffer
		if rc := run(args, &errb); rc != 0 {
			t.Fatalf("-orders %q: rc %d: %s", o, rc, errb.String())
		}
	}
	read := func(dir string, k int) []byte {
		b, err := os.ReadFile(filepath.Join(dir, "shard-0000"+itoa(k)+".npz"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for k := range 6 {
		if !bytes.Equal(read(dirs[""], k), read(dirs["1"], k)) {
			t.Fatalf("game %d: -orders 1 wrote another shard than no -orders", k)
		}
		same := bytes.Equal(read(dirs["1"], k), read(dirs["2"], k))
		if k < 3 && !same {
			t.Fatalf("game %d: -orders 2 plays the first 3 games as -orders 1 does; its shard differs", k)
		}
		if k >= 3 && same {
			t.Fatalf("game %d: -orders 2 seats the reversed order; its shard is -orders 1's", k)
		}
		a, _ := readShard(t, filepath.Join(dirs["2"], "shard-0000"+itoa(k)+".npz"))
		want := byte((3 - k%3) % 3) // the rotation's seat of position 0
		if k >= 3 {
			want = byte(k % 3) // the reversed order's
		}
		if len(a["seat"]) == 0 {
			t.Fatalf("game %d: no labelled decision", k)
		}
		for _, s := range a["seat"] {
			if s != want {
				t.Fatalf("game %d: a record of seat %d; position 0 sits at seat %d", k, s, want)
			}
		}
	}
	var meta map[string]any
	raw, err := os.ReadFile(filepath.Join(dirs["2"], "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &meta); err != nil || meta["orders"] != float64(2) {
		t.Fatalf("meta.json orders %v (%v), want 2", meta["orders"], err)
	}
	var errb bytes.Buffer
	if rc := run(append([]string{"-out", t.TempDir(), "-orders", "3"}, base...), &errb); rc == 0 || !strings.Contains(errb.String(), "-orders 3") {
		t.Fatalf("-orders 3: rc %d, stderr %q; want an error naming it", rc, errb.String())
	}
}

// TestOrdersRolloutsReplayTheTable: with -orders 2 the playouts seat the
// rollout table as the game seats the table, in the reversed games too: at a
// table of deterministic bots (the network plays its greedy card) one
// playout of the played card is exactly the deal that followed, at every
// labelled decision of all 2P games.
func TestOrdersRolloutsReplayTheTable(t *testing.T) {
	dir := t.TempDir()
	var errb bytes.Buffer
	args := []string{"-players", "3", "-deals", "1", "-table", "heuristic,policy:expert-p3,heuristic", "-policies", "../../policies",
		"-teacher", "rollout", "-rollouts", "1", "-eps", "0", "-games", "6", "-shard-games", "1", "-orders", "2", "-out", dir, "-quiet"}
	if rc := run(args, &errb); rc != 0 {
		t.Fatalf("rc %d: %s", rc, errb.String())
	}
	for k := range 6 {
		name := "shard-0000" + itoa(k) + ".npz"
		a, _ := readShard(t, filepath.Join(dir, name))
		replaysTheDeal(t, a, name, 30)
	}
}
