package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
)

// Format is the metadata "dgenv.format" this package reads.
const Format = "policy-v1"

// SectionRef is one observation section as the policy expects it.
type SectionRef struct {
	Name   string `json:"name"`
	Offset int    `json:"offset"`
	Shape  []int  `json:"shape"`
}

// Meta is what the model file says about itself.
type Meta struct {
	Format string `json:"format"`
	// GameName is the registered game the policy plays: the "name" of the
	// metadata dgenv.game, the registry's default game when it has none
	// (files written before other games existed).
	GameName string `json:"game_name"`
	// Params are the game's parameters, defaults filled.
	Params      env.Values   `json:"game"`
	Layout      []SectionRef `json:"obs_layout"`
	ObsSize     int          `json:"obs_size"`
	NumActions  int          `json:"num_actions"`
	Description string       `json:"description,omitempty"`
	// LogitScale is what one unit of logit is worth in the game's score
	// (metadata dgenv.logit_scale; 1 when absent): the temperature, in
	// points, of the search values the policy was fitted to, so that
	// LogitScale times a logit estimates a card's value up to a constant.
	// A guided search weighs the logits by it (NewGuided).
	LogitScale float64 `json:"logit_scale"`
}

// step is one compiled node: out = f(in, constants).
type step struct {
	op   string
	in   int // value slot of the data input
	in2  int // second data input for Add/Mul of two data values, or -1
	out  int
	w    []float32 // MatMul/Gemm weight as [K, N] row-major (already transposed, alpha applied)
	k, n int
	bias []float32 // length n (Gemm C times beta, or Add/Mul constant), or nil
	// For Add/Mul with a constant: c has length 1 or n.
	c []float32
	// For Gather: out[j] = in[idx[j]].
	idx []int32
	// For Where: the condition's slot (a Greater's 0/1 result), else -1;
	// in and in2 are then the values taken where it is true and false.
	cond int
}

// Policy is a loaded, validated model. It is safe for concurrent use.
type Policy struct {
	name    string
	sha256  string
	meta    Meta
	game    env.Game // the game of the metadata, made by the registry it was loaded with
	steps   []step
	widths  []int // per value slot, the row width
	offs    []int // per value slot, its offset in the scratch buffer
	outSlot int
	// prod is, per value slot, the step that computes it (-1 for obs): a
	// forward pass computes the values the logits need, from the logits
	// back, so a Where whose condition is one value per row computes only
	// the branch it takes.
	prod    []int
	scratch sync.Pool // *evalBuf buffers for single-row inference
}

// evalBuf is one forward pass's working memory: every value slot's row,
// and whether it is computed yet.
type evalBuf struct {
	vals []float32
	done []bool
}

// Name is the name the policy was loaded under.
func (p *Policy) Name() string { return p.name }

// SHA256 is the hex digest of the model file.
func (p *Policy) SHA256() string { return p.sha256 }

// Meta returns the model's metadata.
func (p *Policy) Meta() Meta { return p.meta }

// Game is the game the policy plays (its metadata's, made by the registry
// it was loaded with).
func (p *Policy) Game() env.Game { return p.game }

// NumActions is the width of the policy's logits: its game's action count.
func (p *Policy) NumActions() int { return p.meta.NumActions }

// Parse reads and validates an ONNX model in the dgenv policy v1 format.
// The game its metadata names is looked up in reg, and the model must fit
// that game's observation layout and action count.
func Parse(reg *env.Registry, name string, data []byte) (*Policy, error) {
	return parse(reg, name, data, sha256.Sum256(data))
}

// parse is Parse with the file's digest already computed.
func parse(reg *env.Registry, name string, data []byte, sum [sha256.Size]byte) (*Policy, error) {
	m, err := parseModel(data)
	if err != nil {
		return nil, err
	}
	p := &Policy{name: name, sha256: hex.EncodeToString(sum[:])}
	if err := p.readMeta(reg, m.meta); err != nil {
		return nil, err
	}
	if err := p.compile(m); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *Policy) readMeta(reg *env.Registry, md map[string]string) error {
	get := func(k string) (string, error) {
		v, ok := md[k]
		if !ok {
			return "", bad("metadata %q missing (not a dgenv policy export?)", k)
		}
		return v, nil
	}
	f, err := get("dgenv.format")
	if err != nil {
		return err
	}
	if f != Format {
		return bad("metadata dgenv.format = %q, want %q", f, Format)
	}
	p.meta.Format = f
	g, err := get("dgenv.game")
	if err != nil {
		return err
	}
	var params map[string]any
	if err := json.Unmarshal([]byte(g), &params); err != nil {
		return bad("metadata dgenv.game: %v", err)
	}
	if params == nil {
		return bad("metadata dgenv.game: want a JSON object")
	}
	// {"name": game, ...parameters}, as a create-session's "game"; without
	// a name, the registry's default game (the card game).
	gameName := ""
	if v, ok := params["name"]; ok {
		if gameName, ok = v.(string); !ok || gameName == "" {
			return bad("metadata dgenv.game: name %v: want a game's name", v)
		}
		delete(params, "name")
	}
	t, err := reg.Lookup(gameName)
	if err != nil {
		return bad("metadata dgenv.game: %v", err)
	}
	if p.game, err = t.New(params); err != nil {
		return bad("metadata dgenv.game: %v", err)
	}
	p.meta.GameName, p.meta.Params = t.Name, p.game.Values()
	l, err := get("dgenv.obs_layout")
	if err != nil {
		return err
	}
	if err := json.Unmarshal([]byte(l), &p.meta.Layout); err != nil {
		return bad("metadata dgenv.obs_layout: %v", err)
	}
	for _, kv := range []struct {
		key string
		dst *int
	}{{"dgenv.obs_size", &p.meta.ObsSize}, {"dgenv.num_actions", &p.meta.NumActions}} {
		s, err := get(kv.key)
		if err != nil {
			return err
		}
		if *kv.dst, err = strconv.Atoi(s); err != nil {
			return bad("metadata %s = %q: not an integer", kv.key, s)
		}
	}
	if want := p.game.NumDistinctActions(); p.meta.NumActions != want {
		return bad("metadata dgenv.num_actions = %d, %s has %d actions", p.meta.NumActions, t.Name, want)
	}
	p.meta.Description = md["dgenv.description"]
	p.meta.LogitScale = 1
	if v, ok := md["dgenv.logit_scale"]; ok {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x <= 0 || x > MaxLogitScale {
			return bad("metadata dgenv.logit_scale = %q: want a number in (0, %g]", v, float64(MaxLogitScale))
		}
		p.meta.LogitScale = x
	}
	// The layout must be the engine's own for that game.
	return sameLayout(p.meta.Layout, p.meta.ObsSize, p.game)
}

// sameLayout checks a policy's layout against game g's.
func sameLayout(got []SectionRef, size int, g env.Game) error {
	want := g.Observation()
	if size != want.Size {
		return bad("observation size %d, %s (%v) has %d", size, g.Type().Name, g.Values(), want.Size)
	}
	if len(got) != len(want.Sections) {
		return bad("observation layout has %d sections, %s's has %d", len(got), g.Type().Name, len(want.Sections))
	}
	for i, s := range want.Sections {
		g := got[i]
		if g.Name != s.Name || g.Offset != s.Offset || !slices.Equal(g.Shape, s.Shape) {
			return bad("observation section %d is %s@%d%v, the engine's is %s@%d%v", i, g.Name, g.Offset, g.Shape, s.Name, s.Offset, s.Shape)
		}
	}
	return nil
}

// Check refuses a game the policy cannot play: another game, or another
// observation layout (the card game at another player count). Parameters
// that leave the layout alone (deals, dealer, the duel's round limit) may
// differ.
func (p *Policy) Check(g env.Game) error {
	if name := g.Type().Name; name != p.meta.GameName {
		return fmt.Errorf("policy %q plays %s, not %s", p.name, p.meta.GameName, name)
	}
	if err := sameLayout(p.meta.Layout, p.meta.ObsSize, g); err != nil {
		return fmt.Errorf("policy %q: %w", p.name, err)
	}
	return nil
}

// CheckGame is Check for the card game's own type (tools that hold a
// *card.Game, as dgteach's -prior).
func (p *Policy) CheckGame(g *card.Game) error {
	t := card.SpielType()
	sg, err := t.New(map[string]any{"players": g.NumPlayers()})
	if err != nil {
		return err
	}
	return p.Check(sg)
}

// Bounds on a graph, so that a small file cannot make every forward pass
// expensive: an exported policy (an MLP of a few layers) has about ten
// nodes, a few thousand values and a few million multiply-adds a row.
const (
	// MaxNodes bounds the graph's nodes.
	MaxNodes = 256
	// MaxScratch bounds the values one forward pass holds (the widths of
	// every node's output, and the input): 4 MiB of float32 a row.
	MaxScratch = 1 << 20
	// MaxMultiplyAdds bounds the multiply-adds of one row over every
	// MatMul/Gemm (16 Mi: some milliseconds).
	MaxMultiplyAdds = 1 << 24
)

// compile turns the graph into steps over value slots, one a node, each
// knowing the step that computes each of its inputs (forward runs them
// from the logits back), checking every op, shape, name and constant on the way, and the
// graph's size against MaxNodes, MaxScratch and MaxMultiplyAdds.
func (p *Policy) compile(m *rawModel) error {
	d := p.meta.ObsSize
	if len(m.nodes) > MaxNodes {
		return bad("%d nodes, at most %d", len(m.nodes), MaxNodes)
	}
	scratch, macs := d, 0
	var dataIn []valueInfo
	for _, in := range m.inputs {
		if _, isInit := m.inits[in.name]; !isInit {
			dataIn = append(dataIn, in)
		}
	}
	if len(dataIn) != 1 || dataIn[0].name != "obs" {
		return bad("want exactly one graph input named \"obs\", have %d", len(dataIn))
	}
	if dims := dataIn[0].dims; len(dims) != 2 || dims[1] != int64(d) {
		return bad("input obs has shape %v, want [batch, %d]", dims, d)
	}
	if len(m.outputs) != 1 || m.outputs[0].name != "logits" {
		return bad("want exactly one graph output named \"logits\"")
	}
	// A weight that several nodes use (a graph that runs one network on
	// several views of the observation, as a colour-averaged policy does)
	// is compiled once: one copy in memory and in the cache.
	shared := map[sharedWeight][]float32{}
	slots := map[string]int{"obs": 0}
	p.widths = []int{d}
	p.prod = []int{-1}
	isBool := []bool{false} // per slot: a Greater's 0/1 result, which only a Where's condition reads
	newSlot := func(name string, width int) (int, error) {
		if _, dup := slots[name]; dup {
			return 0, bad("value %q is produced twice", name)
		}
		slots[name] = len(p.widths)
		p.widths = append(p.widths, width)
		return len(p.widths) - 1, nil
	}
	for i, n := range m.nodes {
		if n.domain != "" && n.domain != "ai.onnx" {
			return bad("node %d: operator domain %q is not supported", i, n.domain)
		}
		if len(n.outputs) != 1 {
			return bad("node %d (%s): want one output", i, n.op)
		}
		dataInput := func(j int) (int, error) {
			if j >= len(n.inputs) {
				return 0, bad("node %d (%s): missing input %d", i, n.op, j)
			}
			s, ok := slots[n.inputs[j]]
			if !ok {
				return 0, bad("node %d (%s): input %q is not computed before it (or is a constant where data is expected)", i, n.op, n.inputs[j])
			}
			return s, nil
		}
		in, err := dataInput(0)
		if err != nil {
			return err
		}
		if isBool[in] != (n.op == "Where") {
			if n.op == "Where" {
				return bad("node %d (Where): condition %q must be a Greater's result", i, n.inputs[0])
			}
			return bad("node %d (%s): input %q is a Greater's result (true/false): only a Where's condition may be", i, n.op, n.inputs[0])
		}
		w := p.widths[in]
		st := step{op: n.op, in: in, in2: -1, cond: -1}
		switch n.op {
		case "Relu", "Tanh", "Identity":
			st.n = w
		case "MatMul", "Gemm":
			if len(n.inputs) < 2 {
				return bad("node %d (%s): missing weight", i, n.op)
			}
			wt, ok := m.inits[n.inputs[1]]
			if !ok || len(wt.dims) != 2 || wt.isInt {
				return bad("node %d (%s): weight %q must be a 2-D float32 constant", i, n.op, n.inputs[1])
			}
			k, nn := int(wt.dims[0]), int(wt.dims[1])
			alpha, beta := float32(1), float32(1)
			if n.op == "Gemm" {
				if n.ints["transA"] != 0 {
					return bad("node %d (Gemm): transA is not supported", i)
				}
				if v, ok := n.floats["alpha"]; ok {
					alpha = v
				}
				if v, ok := n.floats["beta"]; ok {
					beta = v
				}
				if n.ints["transB"] != 0 {
					k, nn = nn, k
				}
			}
			if k != w {
				return bad("node %d (%s): weight %v does not fit an input of width %d", i, n.op, wt.dims, w)
			}
			if macs += k * nn; macs > MaxMultiplyAdds {
				return bad("node %d (%s): the graph needs over %d multiply-adds a row (at most %d)", i, n.op, macs, MaxMultiplyAdds)
			}
			if !finite(alpha) || !finite(beta) {
				return bad("node %d (Gemm): alpha %v / beta %v: not finite", i, alpha, beta)
			}
			st.k, st.n = k, nn
			key := sharedWeight{n.inputs[1], n.op == "Gemm" && n.ints["transB"] != 0, alpha}
			if st.w = shared[key]; st.w == nil {
				st.w = make([]float32, k*nn)
				for r := range k {
					for c := range nn {
						v := wt.data[r*nn+c]
						if key.trans {
							v = wt.data[c*k+r]
						}
						st.w[r*nn+c] = alpha * v
					}
				}
				shared[key] = st.w
			}
			if n.op == "Gemm" && len(n.inputs) > 2 && n.inputs[2] != "" {
				bt, ok := m.inits[n.inputs[2]]
				if !ok || bt.isInt {
					return bad("node %d (Gemm): bias %q must be a float32 constant", i, n.inputs[2])
				}
				b, err := rowVector(bt, nn)
				if err != nil {
					return bad("node %d (Gemm): bias: %v", i, err)
				}
				st.bias = make([]float32, nn)
				for j := range nn {
					st.bias[j] = beta * b[j]
				}
			}
		case "Add", "Mul":
			if len(n.inputs) != 2 {
				return bad("node %d (%s): want two inputs", i, n.op)
			}
			st.n = w
			if ct, ok := m.inits[n.inputs[1]]; ok {
				if ct.isInt {
					return bad("node %d (%s): constant %q must be float32", i, n.op, n.inputs[1])
				}
				c, err := rowVector(ct, w)
				if err != nil {
					return bad("node %d (%s): constant: %v", i, n.op, err)
				}
				st.c = c
			} else {
				in2, err := dataInput(1)
				if err != nil {
					return err
				}
				if isBool[in2] {
					return bad("node %d (%s): input %q is a Greater's result (true/false): only a Where's condition may be", i, n.op, n.inputs[1])
				}
				if p.widths[in2] != w {
					return bad("node %d (%s): widths %d and %d differ", i, n.op, w, p.widths[in2])
				}
				st.in2 = in2
			}
		case "Gather":
			if len(n.inputs) != 2 {
				return bad("node %d (Gather): want two inputs", i)
			}
			if axis := n.ints["axis"]; axis != 1 && axis != -1 {
				return bad("node %d (Gather): axis %d, only 1 (the columns of a row) is supported", i, axis)
			}
			it, ok := m.inits[n.inputs[1]]
			if !ok || !it.isInt || len(it.dims) != 1 {
				return bad("node %d (Gather): indices %q must be a 1-D int32 or int64 constant", i, n.inputs[1])
			}
			if len(it.ints) == 0 || len(it.ints) > MaxScratch {
				return bad("node %d (Gather): %d indices, want 1 to %d", i, len(it.ints), MaxScratch)
			}
			st.n = len(it.ints)
			st.idx = make([]int32, st.n)
			for j, v := range it.ints {
				if v < -int64(w) || v >= int64(w) {
					return bad("node %d (Gather): index %d out of range for width %d", i, v, w)
				}
				if v < 0 { // counted from the end, as ONNX allows
					v += int64(w)
				}
				st.idx[j] = int32(v)
			}
		case "Greater":
			if len(n.inputs) != 2 {
				return bad("node %d (Greater): want two inputs", i)
			}
			ct, ok := m.inits[n.inputs[1]]
			if !ok || ct.isInt {
				return bad("node %d (Greater): threshold %q must be a float32 constant", i, n.inputs[1])
			}
			c, err := rowVector(ct, w)
			if err != nil {
				return bad("node %d (Greater): threshold: %v", i, err)
			}
			st.n, st.c = w, c
		case "Where":
			if len(n.inputs) != 3 {
				return bad("node %d (Where): want three inputs (condition, then, else)", i)
			}
			st.cond = in
			for j, dst := range []*int{&st.in, &st.in2} {
				s, err := dataInput(j + 1)
				if err != nil {
					return err
				}
				if isBool[s] {
					return bad("node %d (Where): input %q is a Greater's result (true/false): only a Where's condition may be", i, n.inputs[j+1])
				}
				*dst = s
			}
			st.n = p.widths[st.in]
			if p.widths[st.in2] != st.n {
				return bad("node %d (Where): widths %d and %d differ", i, st.n, p.widths[st.in2])
			}
			if w != 1 && w != st.n {
				return bad("node %d (Where): a condition of width %d for values of width %d (want 1 or %d)", i, w, st.n, st.n)
			}
		default:
			return bad("node %d: operator %q is not supported (supported: Gemm, MatMul, Add, Mul, Relu, Tanh, Identity, Gather, Greater, Where)", i, n.op)
		}
		if scratch += st.n; scratch > MaxScratch {
			return bad("node %d (%s): the graph's values need over %d floats a row (at most %d)", i, n.op, scratch, MaxScratch)
		}
		for _, c := range [][]float32{st.w, st.bias, st.c} {
			if j := slices.IndexFunc(c, func(v float32) bool { return !finite(v) }); j >= 0 {
				return bad("node %d (%s): constant value %v (NaN or infinite weights make every move the same)", i, n.op, c[j])
			}
		}
		if st.out, err = newSlot(n.outputs[0], st.n); err != nil {
			return err
		}
		isBool = append(isBool, n.op == "Greater")
		p.prod = append(p.prod, len(p.steps))
		p.steps = append(p.steps, st)
	}
	out, ok := slots["logits"]
	if !ok {
		return bad("no node produces \"logits\"")
	}
	if isBool[out] {
		return bad("the logits are a Greater's result (true/false), not numbers")
	}
	if p.widths[out] != p.meta.NumActions {
		return bad("logits have width %d, want %d (the game's actions)", p.widths[out], p.meta.NumActions)
	}
	p.outSlot = out
	off := 0
	for _, w := range p.widths {
		p.offs = append(p.offs, off)
		off += w
	}
	return nil
}

// sharedWeight names a compiled weight: the initializer, whether it was
// transposed, and the alpha it was scaled by.
type sharedWeight struct {
	name  string
	trans bool
	alpha float32
}

func finite(v float32) bool { return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) }

// ErrNonFinite is the error of a forward pass that gave a NaN or infinite
// logit. The weights are checked finite at load, but their sums can still
// overflow float32 on some observations (a bit-flipped exponent loads
// fine). Such a decision fails rather than falling back to the first legal
// action, which would be a silent choice the policy never made.
var ErrNonFinite = errors.New("non-finite logits")

// checkFinite returns an error wrapping ErrNonFinite naming the first
// non-finite logit of row, or nil.
func (p *Policy) checkFinite(logits []float32, row int) error {
	for a, v := range logits {
		if !finite(v) {
			return fmt.Errorf("policy %q: %w: logit %d of row %d is %v (the network overflows float32 on this observation: the file is damaged or badly trained)", p.name, ErrNonFinite, a, row, v)
		}
	}
	return nil
}

// rowVector accepts a constant of n values (shape [n] or [1, n]) or a scalar.
func rowVector(t rawTensor, n int) ([]float32, error) {
	switch {
	case len(t.data) == n:
		return t.data, nil
	case len(t.data) == 1:
		v := make([]float32, n)
		for i := range v {
			v[i] = t.data[0]
		}
		return v, nil
	}
	return nil, fmt.Errorf("shape %v does not broadcast to width %d", t.dims, n)
}

// Logits runs the network on batch observations (uint8, [batch, D]) and
// writes [batch, NumActions] logits to out.
func (p *Policy) Logits(obsU8 []uint8, batch int, out []float32) error {
	return logits(p, obsU8, batch, out)
}

// LogitsFloat is Logits for observations already converted to float32.
func (p *Policy) LogitsFloat(obsF32 []float32, batch int, out []float32) error {
	return logits(p, obsF32, batch, out)
}

func logits[T uint8 | float32](p *Policy, x []T, batch int, out []float32) error {
	d := p.meta.ObsSize
	if len(x) != batch*d {
		return fmt.Errorf("policy %q: %d observation values for batch %d of width %d", p.name, len(x), batch, d)
	}
	na := p.meta.NumActions
	if len(out) != batch*na {
		return fmt.Errorf("policy %q: output has %d values, want %d", p.name, len(out), batch*na)
	}
	buf := p.getScratch()
	defer p.scratch.Put(buf)
	for b := range batch {
		in := buf.vals[:d]
		for i, v := range x[b*d : (b+1)*d] {
			in[i] = float32(v)
		}
		p.forward(out[b*na:(b+1)*na], buf)
		if err := p.checkFinite(out[b*na:(b+1)*na], b); err != nil {
			return err
		}
	}
	return nil
}

func (p *Policy) getScratch() *evalBuf {
	if v := p.scratch.Get(); v != nil {
		return v.(*evalBuf)
	}
	total := 0
	for _, w := range p.widths {
		total += w
	}
	return &evalBuf{vals: make([]float32, total), done: make([]bool, len(p.widths))}
}

// forward evaluates one observation row, already written as floats to the
// first slot of buf.vals, into out.
func (p *Policy) forward(out []float32, buf *evalBuf) {
	clear(buf.done)
	buf.done[0] = true
	p.compute(p.outSlot, buf)
	copy(out, p.slot(buf, p.outSlot))
}

func (p *Policy) slot(buf *evalBuf, i int) []float32 {
	return buf.vals[p.offs[i] : p.offs[i]+p.widths[i]]
}

// compute computes value slot i of buf and what it needs, once. A Where
// whose condition is one value computes only the branch the condition
// takes; a step no computed value needs is never run.
func (p *Policy) compute(i int, buf *evalBuf) {
	if buf.done[i] {
		return
	}
	buf.done[i] = true
	st := &p.steps[p.prod[i]]
	dst := p.slot(buf, st.out)
	if st.op == "Where" {
		p.compute(st.cond, buf)
		cond := p.slot(buf, st.cond)
		if len(cond) == 1 {
			from := st.in2
			if cond[0] != 0 {
				from = st.in
			}
			p.compute(from, buf)
			copy(dst, p.slot(buf, from))
			return
		}
		p.compute(st.in, buf)
		p.compute(st.in2, buf)
		x, y := p.slot(buf, st.in), p.slot(buf, st.in2)
		for j, c := range cond {
			if c != 0 {
				dst[j] = x[j]
			} else {
				dst[j] = y[j]
			}
		}
		return
	}
	p.compute(st.in, buf)
	src := p.slot(buf, st.in)
	switch st.op {
	case "Relu":
		for j, v := range src {
			dst[j] = max(v, 0)
		}
	case "Tanh":
		for j, v := range src {
			dst[j] = float32(math.Tanh(float64(v)))
		}
	case "Identity":
		copy(dst, src)
	case "Gather":
		for j, k := range st.idx {
			dst[j] = src[k]
		}
	case "Greater":
		for j, v := range src {
			dst[j] = 0
			if v > st.c[j] {
				dst[j] = 1
			}
		}
	case "MatMul", "Gemm":
		if st.bias != nil {
			copy(dst, st.bias)
		} else {
			clear(dst)
		}
		for r, a := range src {
			if a == 0 {
				continue
			}
			axpy(a, st.w[r*st.n:(r+1)*st.n], dst)
		}
	case "Add", "Mul":
		other := st.c
		if st.in2 >= 0 {
			p.compute(st.in2, buf)
			other = p.slot(buf, st.in2)
		}
		if st.op == "Add" {
			for j, v := range src {
				dst[j] = v + other[j]
			}
		} else {
			for j, v := range src {
				dst[j] = v * other[j]
			}
		}
	}
}

// Choose picks an action from one row of logits and a 0/1 mask of the
// same length: the legal action with the highest logit when greedy (lowest
// id on ties), otherwise a sample from the softmax over legal actions at
// the given temperature. It returns -1 when nothing is legal. It allocates
// nothing.
func Choose(logits []float32, mask []uint8, greedy bool, temperature float64, rng *env.RNG) int {
	mask = mask[:len(logits)]
	best, bestA := float32(math.Inf(-1)), -1
	for a, m := range mask {
		if m != 0 && (bestA < 0 || logits[a] > best) {
			best, bestA = logits[a], a
		}
	}
	if greedy || bestA < 0 {
		return bestA
	}
	if temperature <= 0 {
		temperature = 1
	}
	weight := func(a int) float64 { return math.Exp(float64(logits[a]-best) / temperature) }
	sum := 0.0
	for a, m := range mask {
		if m != 0 {
			sum += weight(a)
		}
	}
	u := rng.Float64() * sum
	last := bestA
	for a, m := range mask {
		if m == 0 {
			continue
		}
		w := weight(a)
		if u < w {
			return a
		}
		u -= w
		last = a
	}
	return last
}

// scratch is one decision's buffers: the observation as bytes, the mask and
// the logits, sized for the policy's game.
type scratch struct {
	obs    []uint8
	mask   []uint8
	logits []float32
}

var scratchPool sync.Pool

func (p *Policy) getDecision() *scratch {
	sc, _ := scratchPool.Get().(*scratch)
	if sc == nil {
		sc = &scratch{}
	}
	sc.obs = resize(sc.obs, p.meta.ObsSize)
	sc.mask = resize(sc.mask, p.meta.NumActions)
	sc.logits = resize(sc.logits, p.meta.NumActions)
	return sc
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// forwardObs runs the network on one observation row of bytes into logits,
// for a bot's decision. A bot cannot return an error, so non-finite logits
// panic with the ErrNonFinite error: the engine turns a panic while
// stepping into an error of that step (env.PanicError; the server
// deletes the session and answers 500), and the arena into a failed match.
func (p *Policy) forwardObs(obsRow []uint8, logits []float32) {
	buf := p.getScratch()
	in := buf.vals[:p.meta.ObsSize]
	for i, v := range obsRow {
		in[i] = float32(v)
	}
	p.forward(logits, buf)
	p.scratch.Put(buf)
	if err := p.checkFinite(logits, 0); err != nil {
		panic(err)
	}
}

// Bot plays a policy as an env.Bot, for any game of the interface
// (Register makes it the bot "policy:<name>" of the policy's game, its
// factory refusing a game the policy cannot play), and as a
// card.StateBot on the card game's own state (the search's rollouts,
// dgteach).
type Bot struct {
	Policy *Policy
	// Greedy picks the best legal action; otherwise actions are sampled
	// from the masked softmax at Temperature (0 means 1).
	Greedy      bool
	Temperature float64
}

// Act implements env.Bot: it encodes the acting seat's observation, runs
// the network and chooses among the legal actions.
func (b Bot) Act(s env.State, rng *env.RNG) int {
	return b.Policy.decide(s, b.Greedy, b.Temperature, rng)
}

// ActState implements card.StateBot: Act on the card game's own state.
func (b Bot) ActState(s *card.State, rng *env.RNG) card.Action {
	return b.Policy.decide(s, b.Greedy, b.Temperature, rng)
}

// observed is what a decision reads of a state: the card game's *card.State
// and every env.State have it.
type observed interface {
	CurrentPlayer() int
	WriteObservation(dst []uint8, player int)
	WriteMask(dst []uint8)
}

// decide encodes the acting seat's observation and mask, runs the network
// and chooses among the legal actions (Choose).
func (p *Policy) decide(s observed, greedy bool, temperature float64, rng *env.RNG) int {
	sc := p.getDecision()
	defer scratchPool.Put(sc)
	s.WriteObservation(sc.obs, s.CurrentPlayer())
	s.WriteMask(sc.mask)
	p.forwardObs(sc.obs, sc.logits)
	return Choose(sc.logits, sc.mask, greedy, temperature, rng)
}
