package policy

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/davidgoliath/dgenv/env/games"
)

// whereNet is the nodes and weights of obs -> MatMul -> Relu -> MatMul ->
// <name>_logits, its weights named <name>_w and <name>_out and drawn from
// seed: one of the two policies a Where chooses between.
func whereNet(g []byte, name string, seed uint64) []byte {
	const d, width = 874, 16
	rng := rand.New(rand.NewPCG(seed, 1))
	w, out := normals(rng, d*width), normals(rng, width*90)
	g = pbBytes(g, graphNode, pbNode("MatMul", []string{"obs", name + "_w"}, name+"_z"))
	g = pbBytes(g, graphNode, pbNode("Relu", []string{name + "_z"}, name+"_h"))
	g = pbBytes(g, graphNode, pbNode("MatMul", []string{name + "_h", name + "_out"}, name+"_logits"))
	g = pbBytes(g, graphInitializer, pbTensor(name+"_w", []int64{d, width}, w))
	return pbBytes(g, graphInitializer, pbTensor(name+"_out", []int64{width, 90}, out))
}

// whereModel is logits = Where(Greater(Gather(obs, cols), 0.5), a's logits,
// b's logits), with the parity model's metadata (D = 874), as
// dgenv.policy.split_lead writes it with one column. A nil where leaves the
// Where out: the logits are net's alone (a or b).
func whereModel(tb testing.TB, cols []int64, net string, where []byte) []byte {
	tb.Helper()
	data, err := os.ReadFile("testdata/parity.onnx")
	require.NoError(tb, err)
	parity, err := parseModel(data)
	require.NoError(tb, err)
	var g []byte
	if net != "" {
		g = whereNet(g, "x", map[string]uint64{"a": 1, "b": 2}[net])
		g = pbBytes(g, graphNode, pbNode("Identity", []string{"x_logits"}, "logits"))
		return pbPolicy(g, parity.meta)
	}
	g = pbBytes(g, graphNode, pbBytes(pbNode("Gather", []string{"obs", "cols"}, "col"), nodeAttr, pbIntAttr("axis", 1)))
	g = pbBytes(g, graphInitializer, pbIndices("cols", cols, false))
	g = pbBytes(g, graphNode, pbNode("Greater", []string{"col", "half"}, "cond"))
	g = pbBytes(g, graphInitializer, pbTensor("half", []int64{1}, []float32{0.5}))
	g = whereNet(g, "a", 1)
	g = whereNet(g, "b", 2)
	if where == nil {
		where = pbNode("Where", []string{"cond", "a_logits", "b_logits"}, "logits")
	}
	return pbPolicy(pbBytes(g, graphNode, where), parity.meta)
}

func whereObs(rng *rand.Rand, rows int) []uint8 {
	obs := make([]uint8, rows*874)
	for i := range obs {
		if rng.IntN(6) == 0 {
			obs[i] = uint8(1 + rng.IntN(3))
		}
	}
	return obs
}

// A Where of one column gives, to the bit, the logits of the policy its
// condition picks, row by row, and computes only that policy's nodes.
func TestWhereOneColumnPicksAPolicy(t *testing.T) {
	reg := games.Default()
	p, err := Parse(reg, "split", whereModel(t, []int64{7}, "", nil))
	require.NoError(t, err)
	alone := map[bool]*Policy{}
	for net, taken := range map[string]bool{"a": true, "b": false} {
		alone[taken], err = Parse(reg, net, whereModel(t, nil, net, nil))
		require.NoError(t, err)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	const rows = 16
	obs := whereObs(rng, rows)
	for b := range rows {
		obs[b*874+7] = uint8(b % 3) // 0: b's logits; 1 and 2: a's
	}
	got := make([]float32, rows*90)
	require.NoError(t, p.Logits(obs, rows, got))
	for b := range rows {
		want := make([]float32, 90)
		require.NoError(t, alone[b%3 != 0].Logits(obs[b*874:(b+1)*874], 1, want))
		require.Equal(t, want, got[b*90:(b+1)*90], "row %d", b)
	}
	// only the branch taken was computed: the other's three values are not
	ws := map[string][]float32{}
	for _, st := range p.steps {
		if st.op == "MatMul" && st.k == 874 {
			ws[map[bool]string{true: "a", false: "b"}[len(ws) == 0]] = st.w
		}
	}
	for _, lead := range []uint8{0, 1} {
		buf := p.getScratch()
		copy(buf.vals, make([]float32, 874))
		buf.vals[7] = float32(lead)
		p.forward(make([]float32, 90), buf)
		done := map[string]int{}
		for slot, d := range buf.done {
			if !d || slot == 0 {
				continue
			}
			st := p.steps[p.prod[slot]]
			done[st.op]++
			if st.op == "MatMul" && st.k == 874 {
				require.Equal(t, &ws[map[bool]string{true: "a", false: "b"}[lead == 1]][0], &st.w[0], "condition %d", lead)
			}
		}
		require.Equal(t, map[string]int{"Gather": 1, "Greater": 1, "MatMul": 2, "Relu": 1, "Where": 1}, done, "condition %d", lead)
	}
	// The pass allocates nothing. It is measured on a buffer held here, not
	// through Logits: under -race, sync.Pool drops a quarter of its Puts on
	// purpose, so a pooled buffer is sometimes made anew there.
	buf := p.getScratch()
	require.Zero(t, testing.AllocsPerRun(100, func() {
		for i, v := range obs[:874] {
			buf.vals[i] = float32(v)
		}
		p.forward(got[:90], buf)
		if err := p.checkFinite(got[:90], 0); err != nil {
			panic(err)
		}
	}))
}

// A condition as wide as the values picks element by element.
func TestWhereElementwise(t *testing.T) {
	reg := games.Default()
	cols := make([]int64, 90)
	for i := range cols {
		cols[i] = int64(100 + i)
	}
	p, err := Parse(reg, "split", whereModel(t, cols, "", nil))
	require.NoError(t, err)
	a, err := Parse(reg, "a", whereModel(t, nil, "a", nil))
	require.NoError(t, err)
	b, err := Parse(reg, "b", whereModel(t, nil, "b", nil))
	require.NoError(t, err)
	obs := whereObs(rand.New(rand.NewPCG(9, 10)), 1)
	got, la, lb := make([]float32, 90), make([]float32, 90), make([]float32, 90)
	require.NoError(t, p.Logits(obs, 1, got))
	require.NoError(t, a.Logits(obs, 1, la))
	require.NoError(t, b.Logits(obs, 1, lb))
	picked := 0
	for j := range 90 {
		want := lb[j]
		if obs[100+j] > 0 {
			want, picked = la[j], picked+1
		}
		require.Equal(t, want, got[j], "logit %d", j)
	}
	require.Positive(t, picked)
	require.Less(t, picked, 90)
}

// A Greater and a Where the runtime would not run as ONNX does are refused
// at load with a reason.
func TestWhereRefused(t *testing.T) {
	one := []int64{7}
	five := []int64{1, 2, 3, 4, 5}
	for _, c := range []struct {
		name  string
		cols  []int64
		where []byte
		want  string
	}{
		{"a condition that is a number", one, pbNode("Where", []string{"col", "a_logits", "b_logits"}, "logits"), "must be a Greater's result"},
		{"a condition read as a number", one, pbNode("Add", []string{"cond", "a_logits"}, "logits"), "only a Where's condition"},
		{"a condition as a branch", one, pbNode("Where", []string{"cond", "cond", "b_logits"}, "logits"), "only a Where's condition"},
		{"the logits a condition", one, pbNode("Greater", []string{"a_logits", "half"}, "logits"), "not numbers"},
		{"a condition of another width", five, nil, "a condition of width 5"},
		{"branches of two widths", one, pbNode("Where", []string{"cond", "a_logits", "a_h"}, "logits"), "widths 90 and 16"},
		{"two inputs", one, pbNode("Where", []string{"cond", "a_logits"}, "logits"), "want three inputs"},
		{"a threshold that is data", one, pbNode("Greater", []string{"a_logits", "b_logits"}, "logits"), "float32 constant"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(games.Default(), "x", whereModel(t, c.cols, "", c.where))
			require.ErrorIs(t, err, ErrBadModel)
			require.ErrorContains(t, err, c.want, fmt.Sprint(err))
		})
	}
}

// BenchmarkLogitsWhere: a decision of the split graph (a Where of one
// column between two policies) against one of its policies alone
// (BenchmarkLogitsWhereBranch): the runtime computes only the branch taken,
// so the two cost about the same (docs/benchmarks.md).
func BenchmarkLogitsWhere(b *testing.B) { benchWhere(b, "") }

// BenchmarkLogitsWhereBranch is policy a of BenchmarkLogitsWhere alone.
func BenchmarkLogitsWhereBranch(b *testing.B) { benchWhere(b, "a") }

func benchWhere(b *testing.B, net string) {
	p, err := Parse(games.Default(), "w", whereModel(b, []int64{7}, net, nil))
	require.NoError(b, err)
	obs := whereObs(rand.New(rand.NewPCG(11, 12)), 1)
	obs[7] = 1
	out := make([]float32, 90)
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Logits(obs, 1, out); err != nil {
			b.Fatal(err)
		}
	}
}
