package main

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"io"
	"math"
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

func itoa(n int) string { return strconv.Itoa(n) }
