package policy

import (
	"encoding/binary"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/davidgoliath/dgenv/env/games"
)

// pbIntAttr is a node attribute name = v (an INT attribute).
func pbIntAttr(name string, v int64) []byte {
	b := pbBytes(nil, attrName, []byte(name))
	b = protowire.AppendTag(b, attrInt, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(v))
}

// pbIndices is a 1-D integer tensor: int64 in raw_data, or int32 in
// packed int32_data (the two encodings exporters write).
func pbIndices(name string, idx []int64, int32s bool) []byte {
	var b []byte
	b = protowire.AppendTag(b, tensorDims, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(len(idx)))
	b = protowire.AppendTag(b, tensorDataType, protowire.VarintType)
	if int32s {
		b = protowire.AppendVarint(b, tensorInt32)
	} else {
		b = protowire.AppendVarint(b, tensorInt64)
	}
	b = pbBytes(b, tensorName, []byte(name))
	if int32s {
		var packed []byte
		for _, v := range idx {
			packed = protowire.AppendVarint(packed, uint64(int64(int32(v))))
		}
		return pbBytes(b, tensorInt32s, packed)
	}
	raw := make([]byte, 8*len(idx))
	for i, v := range idx {
		binary.LittleEndian.PutUint64(raw[8*i:], uint64(v))
	}
	return pbBytes(b, tensorRaw, raw)
}

// normals is n draws of a standard normal.
func normals(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// gatherModel is obs -> [Gather(obs, in, axis)] -> MatMul(w) -> Relu ->
// MatMul(out) -> [Gather(., back, 1)] -> logits, with the parity model's
// metadata (4 players, D = 874): the network w, out on a renamed view of
// the observation, its logits renamed back, as dgenv.policy.colour_average
// writes. A nil in or back leaves that Gather out. node, if set, replaces
// the first Gather's node bytes.
func gatherModel(tb testing.TB, in, back []int64, axis int64, int32s bool, node []byte) []byte {
	tb.Helper()
	data, err := os.ReadFile("testdata/parity.onnx")
	require.NoError(tb, err)
	parity, err := parseModel(data)
	require.NoError(tb, err)
	const d, width = 874, 32
	rng := rand.New(rand.NewPCG(3, 4))
	w, out := normals(rng, d*width), normals(rng, width*90)
	var g []byte
	x := "obs"
	if in != nil {
		n := node
		if n == nil {
			n = pbBytes(pbNode("Gather", []string{"obs", "in"}, "view"), nodeAttr, pbIntAttr("axis", axis))
		}
		g = pbBytes(g, graphNode, n)
		g = pbBytes(g, graphInitializer, pbIndices("in", in, int32s))
		x = "view"
	}
	g = pbBytes(g, graphNode, pbNode("MatMul", []string{x, "w"}, "z"))
	g = pbBytes(g, graphNode, pbNode("Relu", []string{"z"}, "h"))
	last := "logits"
	if back != nil {
		last = "l0"
	}
	g = pbBytes(g, graphNode, pbNode("MatMul", []string{"h", "out"}, last))
	if back != nil {
		g = pbBytes(g, graphNode, pbBytes(pbNode("Gather", []string{"l0", "back"}, "logits"), nodeAttr, pbIntAttr("axis", 1)))
		g = pbBytes(g, graphInitializer, pbIndices("back", back, int32s))
	}
	g = pbBytes(g, graphInitializer, pbTensor("w", []int64{d, width}, w))
	g = pbBytes(g, graphInitializer, pbTensor("out", []int64{width, 90}, out))
	return pbPolicy(g, parity.meta)
}

// Gather runs the network on the observation's columns in the order of
// its indices and reorders the logits: the result is the plain network's
// on the reordered observation, reordered, to the bit. Negative indices
// count from the end, as ONNX says; int32 and int64 indices read alike.
func TestGatherReordersColumns(t *testing.T) {
	const d = 874
	rng := rand.New(rand.NewPCG(5, 6))
	in := make([]int64, d)
	for i, j := range rng.Perm(d) {
		in[i] = int64(j)
		if i%3 == 0 {
			in[i] -= d // the same column, counted from the end
		}
	}
	back := make([]int64, 90)
	for i, j := range rng.Perm(90) {
		back[i] = int64(j)
	}
	plain, err := Parse(games.Default(), "plain", gatherModel(t, nil, nil, 1, false, nil))
	require.NoError(t, err)
	for _, int32s := range []bool{false, true} {
		p, err := Parse(games.Default(), "view", gatherModel(t, in, back, 1, int32s, nil))
		require.NoError(t, err)
		obs := make([]uint8, 3*d)
		for i := range obs {
			if rng.IntN(8) == 0 {
				obs[i] = uint8(1 + rng.IntN(3))
			}
		}
		got := make([]float32, 3*90)
		require.NoError(t, p.Logits(obs, 3, got))
		view := make([]uint8, 3*d)
		for b := range 3 {
			for i, j := range in {
				if j < 0 {
					j += d
				}
				view[b*d+i] = obs[b*d+int(j)]
			}
		}
		want := make([]float32, 3*90)
		require.NoError(t, plain.Logits(view, 3, want))
		for b := range 3 {
			for i, j := range back {
				require.Equal(t, want[b*90+int(j)], got[b*90+i], "int32 %v row %d logit %d", int32s, b, i)
			}
		}
	}
}

// A Gather the runtime does not run is refused at load with a reason.
func TestGatherRefused(t *testing.T) {
	id := make([]int64, 874)
	for i := range id {
		id[i] = int64(i)
	}
	bad := append([]int64(nil), id...)
	bad[5] = 874
	low := append([]int64(nil), id...)
	low[5] = -875
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"axis 0 (the batch)", gatherModel(t, id, nil, 0, false, nil), "axis 0"},
		{"an index past the row", gatherModel(t, bad, nil, 1, false, nil), "index 874 out of range"},
		{"an index before the row", gatherModel(t, low, nil, 1, true, nil), "index -875 out of range"},
		{"indices that are data", gatherModel(t, id, nil, 1, false,
			pbBytes(pbNode("Gather", []string{"obs", "obs"}, "view"), nodeAttr, pbIntAttr("axis", 1))), "1-D int32 or int64 constant"},
		{"float indices", gatherModel(t, id, nil, 1, false,
			pbBytes(pbNode("Gather", []string{"obs", "w"}, "view"), nodeAttr, pbIntAttr("axis", 1))), "1-D int32 or int64 constant"},
		{"indices as a weight", gatherModel(t, id, nil, 1, false,
			pbBytes(pbNode("MatMul", []string{"obs", "in"}, "view"), nodeAttr, pbIntAttr("axis", 1))), "float32 constant"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(games.Default(), "x", c.data)
			require.ErrorIs(t, err, ErrBadModel)
			require.ErrorContains(t, err, c.want)
		})
	}
}

// A weight several nodes use is compiled once (one copy in memory).
func TestSharedWeightCompiledOnce(t *testing.T) {
	p, err := Parse(games.Default(), "sq", modelWith(t, 16, 0, 3, 0))
	require.NoError(t, err)
	var sq [][]float32
	for _, st := range p.steps {
		if st.k == 16 && st.n == 16 {
			sq = append(sq, st.w)
		}
	}
	require.Len(t, sq, 3)
	require.Same(t, &sq[0][0], &sq[1][0])
	require.Same(t, &sq[0][0], &sq[2][0])
}
