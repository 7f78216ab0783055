package main

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// readNPY parses a .npy v1.0 member: its header dict and data.
func readNPY(t *testing.T, f *zip.File) (string, []byte) {
	t.Helper()
	r, err := f.Open()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r)
	if !bytes.HasPrefix(b, []byte("\x93NUMPY\x01\x00")) {
		t.Fatalf("%s: no npy magic", f.Name)
	}
	hl := int(binary.LittleEndian.Uint16(b[8:10]))
	if (10+hl)%64 != 0 {
		t.Fatalf("%s: data starts at %d, not 64-aligned", f.Name, 10+hl)
	}
	return string(b[10 : 10+hl]), b[10+hl:]
}

func TestShardsAreNumpyArraysWithLegalLabels(t *testing.T) {
	dir := t.TempDir()
	var errb bytes.Buffer
	if rc := run([]string{"-players", "4", "-games", "2", "-shard-games", "1", "-worlds", "2", "-workers", "2", "-out", dir, "-quiet"}, &errb); rc != 0 {
		t.Fatalf("rc %d: %s", rc, errb.String())
	}
	for _, name := range []string{"shard-00000.npz", "shard-00001.npz"} {
		zr, err := zip.OpenReader(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		arrays := map[string][]byte{}
		headers := map[string]string{}
		for _, f := range zr.File {
			h, d := readNPY(t, f)
			arrays[strings.TrimSuffix(f.Name, ".npy")], headers[strings.TrimSuffix(f.Name, ".npy")] = d, h
		}
		zr.Close()
		n := len(arrays["action"]) / 2
		if n < 100 || !strings.Contains(headers["obs"], "'shape': ("+itoa(n)+", 874)") || !strings.Contains(headers["action"], "'<i2'") {
			t.Fatalf("%s: %d records, headers %v", name, n, headers)
		}
		for i := range n {
			a := int(int16(binary.LittleEndian.Uint16(arrays["action"][2*i:])))
			mask := arrays["mask"][90*i : 90*i+90]
			if mask[a] != 1 {
				t.Fatalf("%s record %d: action %d not legal", name, i, a)
			}
			best := math.Inf(-1)
			for c := range 90 {
				q := float64(math.Float32frombits(binary.LittleEndian.Uint32(arrays["q"][4*(90*i+c):])))
				if mask[c] == 0 && q != 0 {
					t.Fatalf("%s record %d: value %v for the illegal card %d", name, i, q, c)
				}
				if mask[c] == 1 {
					best = max(best, q)
				}
			}
			if qa := float64(math.Float32frombits(binary.LittleEndian.Uint32(arrays["q"][4*(90*i+a):]))); qa != best {
				t.Fatalf("%s record %d: search's card has value %v, the best is %v", name, i, qa, best)
			}
		}
	}
}

func TestBadArguments(t *testing.T) {
	for _, args := range [][]string{
		{"-games", "1"}, // no -out
		{"-out", t.TempDir(), "-table", "search,random"},
		{"-out", t.TempDir(), "-table", "search,nosuchbot,random,random"},
		{"-out", t.TempDir(), "-eps", "2"},
		{"-out", t.TempDir(), "-prior", "x"},
		{"-out", t.TempDir(), "-games", "20", "-shard-games", "10", "-from", "2"},
	} {
		var errb bytes.Buffer
		if rc := run(args, &errb); rc == 0 || errb.Len() == 0 {
			t.Errorf("%v: rc %d, stderr %q; want an error", args, rc, errb.String())
		}
	}
}

// TestTeacherWithoutValues: the valuer's flags (-worlds, -prior) with a
// teacher that scores no actions (env.ActionValuer) are refused, naming the
// bot and the game.
func TestTeacherWithoutValues(t *testing.T) {
	for _, args := range [][]string{
		{"-game", "duel", "-teacher", "heuristic", "-worlds", "8"},
		{"-game", "duel", "-teacher", "random", "-prior", "x"},
		{"-teacher", "heuristic", "-worlds", "8"},
	} {
		var errb bytes.Buffer
		if rc := run(append(args, "-out", t.TempDir(), "-quiet"), &errb); rc == 0 || !strings.Contains(errb.String(), "scores no actions") {
			t.Errorf("%v: rc %d, stderr %q; want an error saying the teacher scores no actions", args, rc, errb.String())
		}
		game := "david_goliath"
		if args[0] == "-game" {
			game = args[1]
		}
		if !strings.Contains(errb.String(), " of "+game+" ") {
			t.Errorf("%v: stderr %q does not name the game %s", args, errb.String(), game)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// readShard reads every array of one shard: data and header by name.
func readShard(t *testing.T, path string) (map[string][]byte, map[string]string) {
	t.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	arrays, headers := map[string][]byte{}, map[string]string{}
	for _, f := range zr.File {
		h, d := readNPY(t, f)
		name := strings.TrimSuffix(f.Name, ".npy")
		arrays[name], headers[name] = d, h
	}
	return arrays, headers
}

// The duel's default teacher is its search (env.Search, an ActionValuer):
// values are labelled with the teacher at both seats when -table is not
// given (the default table is the 4-player card game's).
func TestDuelValuesFromItsSearch(t *testing.T) {
	dir := t.TempDir()
	var errb bytes.Buffer
	if rc := run([]string{"-game", "duel", "-game-params", "max_rounds=3", "-games", "1", "-worlds", "2", "-out", dir, "-quiet"}, &errb); rc != 0 {
		t.Fatalf("rc %d: %s", rc, errb.String())
	}
	meta, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"name": "duel"`, `"worlds": 2`, `"search"`} {
		if !strings.Contains(string(meta), want) {
			t.Fatalf("meta.json lacks %s:\n%s", want, meta)
		}
	}
}

// Demonstrations of another game (the duel): the game's sizes, the
// teacher's action legal and marked in q, each game's result in ret, and
// the same data whatever the workers.
func TestDuelDemonstrations(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	for i, w := range []string{"1", "2"} {
		var errb bytes.Buffer
		args := []string{"-game", "duel", "-game-params", "max_rounds=40", "-teacher", "heuristic", "-table", "heuristic,random",
			"-eps", "0.2", "-games", "6", "-shard-games", "3", "-workers", w, "-out", dirs[i], "-quiet"}
		if rc := run(args, &errb); rc != 0 {
			t.Fatalf("rc %d: %s", rc, errb.String())
		}
	}
	meta, err := os.ReadFile(filepath.Join(dirs[0], "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"name": "duel"`, `"max_rounds": 40`, `"num_actions": 117`, `"obs_size": 461`, `"teacher": "heuristic"`} {
		if !strings.Contains(string(meta), want) {
			t.Fatalf("meta.json lacks %s:\n%s", want, meta)
		}
	}
	for _, name := range []string{"shard-00000.npz", "shard-00001.npz"} {
		arrays, headers := readShard(t, filepath.Join(dirs[0], name))
		other, _ := readShard(t, filepath.Join(dirs[1], name))
		for k, v := range arrays {
			if !bytes.Equal(v, other[k]) {
				t.Fatalf("%s: %s differs between 1 and 2 workers", name, k)
			}
		}
		n := len(arrays["action"]) / 2
		if n < 20 || !strings.Contains(headers["obs"], "'shape': ("+itoa(n)+", 461)") || !strings.Contains(headers["mask"], "("+itoa(n)+", 117)") {
			t.Fatalf("%s: %d records, headers %v", name, n, headers)
		}
		explored := 0
		for i := range n {
			a := int(int16(binary.LittleEndian.Uint16(arrays["action"][2*i:])))
			played := int(int16(binary.LittleEndian.Uint16(arrays["played"][2*i:])))
			mask := arrays["mask"][117*i : 117*i+117]
			if mask[a] != 1 || mask[played] != 1 {
				t.Fatalf("%s record %d: action %d / played %d not legal", name, i, a, played)
			}
			legal := 0
			for c := range 117 {
				q := math.Float32frombits(binary.LittleEndian.Uint32(arrays["q"][4*(117*i+c):]))
				if want := float32(0); c == a && q != 1 || c != a && q != want {
					t.Fatalf("%s record %d: q[%d] = %v, want 1 on the teacher's %d only", name, i, c, q, a)
				}
				legal += int(mask[c])
			}
			if legal < 2 {
				t.Fatalf("%s record %d: %d legal actions; one-choice decisions are not recorded", name, i, legal)
			}
			if r := math.Float32frombits(binary.LittleEndian.Uint32(arrays["ret"][4*i:])); r != 1 && r != -1 && r != 0 {
				t.Fatalf("%s record %d: ret %v, want +-1 or 0 (a duel's result: its zero_sum return is the return itself, issue 20)", name, i, r)
			}
			if a != played {
				explored++
			}
		}
		if explored == 0 {
			t.Fatalf("%s: the random seat and -eps never played anything but the teacher's action", name)
		}
	}
	for _, args := range [][]string{
		{"-game", "duel", "-table", "heuristic", "-out", t.TempDir()},
		{"-game", "duel", "-teacher", "minimax", "-out", t.TempDir()},
		{"-game", "duel", "-prior", "x", "-out", t.TempDir()},
		{"-game", "duel", "-game-params", "max_rounds=0", "-out", t.TempDir()},
		{"-game", "chess", "-out", t.TempDir()},
		{"-game-params", "deals=2", "-out", t.TempDir()},
	} {
		var errb bytes.Buffer
		if rc := run(args, &errb); rc == 0 || errb.Len() == 0 {
			t.Errorf("%v: rc %d, stderr %q; want an error", args, rc, errb.String())
		}
	}
}
