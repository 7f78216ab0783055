package policy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/davidgoliath/dgenv/env/games"
)

// Builders of small ONNX files (the fields parseModel reads).

func pbBytes(b []byte, num protowire.Number, v []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

func pbNode(op string, inputs []string, output string) []byte {
	var b []byte
	for _, in := range inputs {
		b = pbBytes(b, nodeInput, []byte(in))
	}
	b = pbBytes(b, nodeOutput, []byte(output))
	return pbBytes(b, nodeOpType, []byte(op))
}

func pbTensor(name string, dims []int64, data []float32) []byte {
	var b []byte
	for _, d := range dims {
		b = protowire.AppendTag(b, tensorDims, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(d))
	}
	b = protowire.AppendTag(b, tensorDataType, protowire.VarintType)
	b = protowire.AppendVarint(b, tensorFloat32)
	b = pbBytes(b, tensorName, []byte(name))
	raw := make([]byte, 4*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	return pbBytes(b, tensorRaw, raw)
}

func pbValue(name string, dims ...int64) []byte {
	var shape []byte
	for _, d := range dims {
		var dim []byte
		dim = protowire.AppendTag(dim, 1, protowire.VarintType)
		dim = protowire.AppendVarint(dim, uint64(d))
		shape = pbBytes(shape, 1, dim)
	}
	tt := pbBytes(nil, 2, shape)
	typ := pbBytes(nil, 1, tt)
	b := pbBytes(nil, valueName, []byte(name))
	return pbBytes(b, valueType, typ)
}

// model builds a policy file with the parity model's metadata (4 players,
// D = 874): obs -> MatMul(w: [874, width]) -> relus Relu nodes -> MatMul
// (out: [width, 90]) -> logits. poison, if not 0, is written into w.
func model(tb testing.TB, width, relus int, poison float32) []byte {
	return modelWith(tb, width, relus, 0, poison)
}

// modelWith is model with square MatMuls after the Relus, all sharing one
// [width, width] weight "sq" (a small file, many multiply-adds).
func modelWith(tb testing.TB, width, relus, squares int, poison float32) []byte {
	tb.Helper()
	data, err := os.ReadFile("testdata/parity.onnx")
	if err != nil {
		tb.Fatal(err)
	}
	parity, err := parseModel(data)
	if err != nil {
		tb.Fatal(err)
	}
	const d = 874
	w := make([]float32, d*width)
	for i := range w {
		w[i] = float32(i%7) / 7
	}
	if poison != 0 {
		w[len(w)/2] = poison
	}
	out := make([]float32, width*90)
	var g []byte
	g = pbBytes(g, graphNode, pbNode("MatMul", []string{"obs", "w"}, "h0"))
	for i := range relus {
		g = pbBytes(g, graphNode, pbNode("Relu", []string{fmt.Sprintf("h%d", i)}, fmt.Sprintf("h%d", i+1)))
	}
	for i := relus; i < relus+squares; i++ {
		g = pbBytes(g, graphNode, pbNode("MatMul", []string{fmt.Sprintf("h%d", i), "sq"}, fmt.Sprintf("h%d", i+1)))
	}
	if squares > 0 {
		g = pbBytes(g, graphInitializer, pbTensor("sq", []int64{int64(width), int64(width)}, make([]float32, width*width)))
	}
	g = pbBytes(g, graphNode, pbNode("MatMul", []string{fmt.Sprintf("h%d", relus+squares), "out"}, "logits"))
	g = pbBytes(g, graphInitializer, pbTensor("w", []int64{d, int64(width)}, w))
	g = pbBytes(g, graphInitializer, pbTensor("out", []int64{int64(width), 90}, out))
	return pbPolicy(g, parity.meta)
}

// pbPolicy completes graph g's nodes and initializers into a policy file:
// the input obs [1, 874], the output logits [1, 90] and metadata meta (the
// parity model's: 4 players).
func pbPolicy(g []byte, meta map[string]string) []byte {
	g = pbBytes(g, graphInput, pbValue("obs", 1, 874))
	g = pbBytes(g, graphOutput, pbValue("logits", 1, 90))
	m := pbBytes(nil, modelGraph, g)
	for k, v := range meta {
		m = pbBytes(m, modelMetadata, pbBytes(pbBytes(nil, 1, []byte(k)), 2, []byte(v)))
	}
	return m
}

// TestGraphBounds: a small file must not buy a huge forward pass, and
// weights that are not finite are refused at load.
func TestGraphBounds(t *testing.T) {
	if _, err := Parse(games.Default(), "ok", model(t, 64, 4, 0)); err != nil {
		t.Fatalf("a small MLP: %v", err)
	}
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		// The file: 3 MB, but 100,000 nodes of width 860 would
		// need 342 MB of scratch a row.
		{"a 3 MB file of 100,000 nodes", model(t, 860, 100_000, 0), "nodes, at most"},
		{"values over the scratch bound", model(t, 5000, 220, 0), "floats a row"},
		// 14 MB, but one 1500 x 1500 weight used by 7 nodes: 17 M multiply-adds a row.
		{"multiply-adds over the bound", modelWith(t, 1500, 0, 7, 0), "multiply-adds a row"},
		{"a NaN weight", model(t, 64, 1, float32(math.NaN())), "NaN"},
		{"an infinite weight", model(t, 64, 1, float32(math.Inf(1))), "+Inf"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if len(c.data) > 20<<20 {
				t.Fatalf("test model of %d bytes", len(c.data))
			}
			_, err := Parse(games.Default(), "x", c.data)
			if !errors.Is(err, ErrBadModel) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Parse = %v, want ErrBadModel mentioning %q", err, c.want)
			}
		})
	}
}

// TestLoadFSRefusesAFIFO: a FIFO named x.onnx is refused at once, by name,
// instead of blocking the read (and start-up) for ever.
func TestLoadFSRefusesAFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(dir+"/x.onnx", 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := LoadFS(games.Default(), os.DirFS(dir), nil)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "x.onnx: not a regular file") {
			t.Fatalf("LoadFS = %v, want x.onnx refused as not a regular file", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("LoadFS blocked on a FIFO")
	}
}
