package policy_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
	"github.com/davidgoliath/dgenv/env/games"
	"github.com/davidgoliath/dgenv/env/policy"
)

func readParity(tb testing.TB) ([]byte, [][]uint8, [][]float32) {
	tb.Helper()
	model, err := os.ReadFile("testdata/parity.onnx")
	if err != nil {
		tb.Fatal(err)
	}
	raw, err := os.ReadFile("testdata/parity.json")
	if err != nil {
		tb.Fatal(err)
	}
	var want struct {
		Obs    [][]uint8   `json:"obs"`
		Logits [][]float32 `json:"logits"`
	}
	if err := json.Unmarshal(raw, &want); err != nil {
		tb.Fatal(err)
	}
	return model, want.Obs, want.Logits
}

// The Go interpreter must give the logits numpy computes for the same
// model (written by testdata/make_parity.py with the onnx package).
func TestLogitsMatchNumpyReference(t *testing.T) {
	model, obsRows, want := readParity(t)
	p, err := policy.Parse(games.Default(), "parity", model)
	if err != nil {
		t.Fatal(err)
	}
	var flat []uint8
	for _, r := range obsRows {
		flat = append(flat, r...)
	}
	got := make([]float32, len(obsRows)*card.NumActions)
	if err := p.Logits(flat, len(obsRows), got); err != nil {
		t.Fatal(err)
	}
	for b := range want {
		for a, w := range want[b] {
			if g := got[b*card.NumActions+a]; math.Abs(float64(g-w)) > 1e-4 {
				t.Fatalf("Logits row %d action %d = %v, want %v", b, a, g, w)
			}
		}
	}
	m := p.Meta()
	if m.GameName != card.GameName || m.Params["players"] != 4 || m.Params["deals"] != 4 || m.ObsSize != 874 ||
		m.NumActions != card.NumActions || m.Description != "parity test model" {
		t.Errorf("Meta() = %+v", m)
	}
}

func TestPolicyPlaysLegalGamesAsABot(t *testing.T) {
	model, _, _ := readParity(t)
	p, err := policy.Parse(games.Default(), "parity", model)
	if err != nil {
		t.Fatal(err)
	}
	reg := games.Default()
	if err := policy.Register(reg, map[string]*policy.Policy{"paritytest": p}); err != nil {
		t.Fatal(err)
	}
	typ, _ := reg.Lookup(card.GameName)
	cg, _ := typ.New(map[string]any{"players": 4, "deals": 1})
	res, err := env.PlayMatchOf(reg, cg, env.MatchConfig{
		Agents: []string{"policy:paritytest", "random", "heuristic", "random"}, Games: 8, Seed: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Scores) != 8 {
		t.Fatalf("PlayMatch played %d games, want 8", len(res.Scores))
	}
	sampled := policy.Bot{Policy: p, Temperature: 1}
	g, _ := card.NewGame(card.Params{Players: 4, Deals: 1})
	s := g.NewInitialState(9)
	rng := env.NewRNG(1, 1)
	for !s.IsTerminal() {
		if err := s.ApplyAction(sampled.ActState(s, &rng)); err != nil {
			t.Fatalf("sampled policy: %v", err)
		}
	}
}

func TestPolicyRefusesAnotherPlayerCount(t *testing.T) {
	model, _, _ := readParity(t)
	p, err := policy.Parse(games.Default(), "parity", model)
	if err != nil {
		t.Fatal(err)
	}
	reg := games.Default()
	if err := policy.Register(reg, map[string]*policy.Policy{"fourplayers": p}); err != nil {
		t.Fatal(err)
	}
	typ, _ := reg.Lookup(card.GameName)
	cg5, _ := typ.New(map[string]any{"players": 5})
	_, err = reg.NewBot(cg5, "policy:fourplayers")
	if err == nil || !errors.Is(err, policy.ErrBadModel) {
		t.Fatalf("NewBot with a 4-player policy in a 5-player game: err = %v, want ErrBadModel", err)
	}
	g5, _ := card.NewGame(card.Params{Players: 5})
	if err := p.CheckGame(g5); err == nil {
		t.Fatal("CheckGame(5 players) = nil, want an error")
	}
}

func TestParseRefusesBadModels(t *testing.T) {
	model, _, _ := readParity(t)
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty bytes are not a model", nil, "no graph"},
		{"text is not a model", []byte("this is not onnx at all, just text"), ""},
		{"a truncated model", model[:len(model)/2], ""},
		{"wrong layout metadata", []byte(strings.Replace(string(model), `"current_trick"`, `"current_trics"`, 1)), "section"},
		{"wrong format tag", []byte(strings.Replace(string(model), "policy-v1", "policy-v9", 1)), "dgenv.format"},
		{"an unsupported operator", []byte(strings.Replace(string(model), "Tanh", "Tanx", 1)), "not supported"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := policy.Parse(games.Default(), "x", c.data)
			if !errors.Is(err, policy.ErrBadModel) {
				t.Fatalf("Parse = %v, want ErrBadModel", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Parse error %q does not mention %q", err, c.want)
			}
		})
	}
}

func TestLoadFS(t *testing.T) {
	model, _, _ := readParity(t)
	sum := sha256.Sum256(model)
	pin := hex.EncodeToString(sum[:])
	t.Run("loads every onnx file under an allowed name", func(t *testing.T) {
		fsys := fstest.MapFS{"alpha.onnx": {Data: model}, "notes.txt": {Data: []byte("x")}}
		ps, err := policy.LoadFS(games.Default(), fsys, map[string]string{"alpha": pin})
		if err != nil || len(ps) != 1 || ps["alpha"] == nil {
			t.Fatalf("LoadFS = %v, %v", ps, err)
		}
	})
	refusals := []struct {
		name string
		fsys fstest.MapFS
		pins map[string]string
		want string
	}{
		{"a name outside the allow-list", fstest.MapFS{"Bad Name.onnx": {Data: model}}, nil, "name must match"},
		{"a pin that does not match", fstest.MapFS{"alpha.onnx": {Data: model}}, map[string]string{"alpha": strings.Repeat("0", 64)}, "does not match"},
		{"a pin without its file", fstest.MapFS{"alpha.onnx": {Data: model}}, map[string]string{"beta": pin}, "not found"},
		{"a file that is not ONNX", fstest.MapFS{"alpha.onnx": {Data: []byte("{}")}}, nil, "alpha.onnx"},
	}
	for _, c := range refusals {
		t.Run("refuses "+c.name, func(t *testing.T) {
			_, err := policy.LoadFS(games.Default(), c.fsys, c.pins)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("LoadFS error = %v, want one mentioning %q", err, c.want)
			}
		})
	}
	t.Run("a path cannot leave the directory", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(dir+"/../outside.onnx", model, 0o644); err != nil {
			t.Skip("cannot write outside the temp dir:", err)
		}
		defer os.Remove(dir + "/../outside.onnx")
		if err := os.Symlink("../outside.onnx", dir+"/escape.onnx"); err != nil {
			t.Skip(err)
		}
		root, err := os.OpenRoot(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer root.Close()
		if _, err := policy.LoadFS(games.Default(), root.FS(), nil); err == nil {
			t.Fatal("LoadFS followed a link out of the directory")
		}
	})
}

func TestChoose(t *testing.T) {
	logits := make([]float32, card.NumActions)
	mask := make([]uint8, card.NumActions)
	if a := policy.Choose(logits, mask, true, 0, nil); a != -1 {
		t.Fatalf("Choose with nothing legal = %d, want -1", a)
	}
	logits[5], logits[7], logits[9] = 3, 9, 1
	mask[5], mask[9] = 1, 1
	if a := policy.Choose(logits, mask, true, 0, nil); a != 5 {
		t.Fatalf("greedy Choose = %d, want 5 (7 is illegal)", a)
	}
	rng := env.NewRNG(1, 2)
	counts := map[int]int{}
	for range 2000 {
		counts[policy.Choose(logits, mask, false, 1, &rng)]++
	}
	if len(counts) != 2 || counts[5] < counts[9] {
		t.Fatalf("sampled Choose counts = %v, want only 5 and 9, mostly 5", counts)
	}
}

// The committed trained policy (policies/, served by make run) loads and
// plays legal games.
func TestCommittedPolicyLoadsAndPlays(t *testing.T) {
	fsys := os.DirFS("../../policies")
	ps, err := policy.LoadFS(games.Default(), fsys, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := ps["beat-heuristic"]
	if p == nil {
		t.Fatalf("LoadFS(policies) = %v, want beat-heuristic", ps)
	}
	g, _ := card.NewGame(card.Params{Players: 4, Deals: 1})
	if err := p.CheckGame(g); err != nil {
		t.Fatal(err)
	}
	bot := policy.Bot{Policy: p, Greedy: true}
	rng := env.NewRNG(1, 1)
	for seed := range uint64(3) {
		s := g.NewInitialState(seed)
		for !s.IsTerminal() {
			if err := s.ApplyAction(bot.ActState(s, &rng)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// BenchmarkPolicyAct is one decision of the committed trained policy:
// encode, forward, mask, choose.
func BenchmarkPolicyAct(b *testing.B) {
	ps, err := policy.LoadFS(games.Default(), os.DirFS("../../policies"), nil)
	if err != nil {
		b.Fatal(err)
	}
	bot := policy.Bot{Policy: ps["beat-heuristic"], Greedy: true}
	g, _ := card.NewGame(card.Params{Players: 4})
	s := g.NewInitialState(1)
	for range 9 { // into the first trick's middle
		_ = s.ApplyAction(s.LegalActions()[0])
	}
	rng := env.NewRNG(1, 1)
	b.ReportAllocs()
	for b.Loop() {
		bot.ActState(s, &rng)
	}
}

// FuzzParse: no byte string makes the model parser panic; whatever it
// accepts has a working forward pass.
func FuzzParse(f *testing.F) {
	model, _, _ := readParity(f)
	f.Add(model)
	f.Add(model[:200])
	f.Add([]byte{})
	f.Add([]byte{0x3a, 0x05, 0x0a, 0x03, 0x0a, 0x01, 0x78})
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := policy.Parse(games.Default(), "fuzz", data)
		if err != nil {
			if !errors.Is(err, policy.ErrBadModel) {
				t.Fatalf("Parse error %v does not wrap ErrBadModel", err)
			}
			return
		}
		d := p.Meta().ObsSize
		out := make([]float32, card.NumActions)
		if err := p.Logits(make([]uint8, d), 1, out); err != nil {
			t.Fatal(err)
		}
	})
}

// TestNonFiniteLogitsFail: a policy whose weights are finite (so it loads)
// but whose network overflows float32 (testdata/overflow.onnx: NaN logits)
// must fail each decision, never play the first legal action.
func TestNonFiniteLogitsFail(t *testing.T) {
	data, err := os.ReadFile("testdata/overflow.onnx")
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Parse(games.Default(), "overflow", data)
	if err != nil {
		t.Fatalf("Parse = %v: finite weights must load", err)
	}
	g, _ := card.NewGame(card.Params{Players: 4, Deals: 1})
	s := g.NewInitialState(9)
	obs := make([]uint8, p.Meta().ObsSize)
	s.WriteObservation(obs, s.CurrentPlayer())

	t.Run("Logits is an error naming ErrNonFinite", func(t *testing.T) {
		out := make([]float32, 2*p.NumActions())
		err := p.Logits(append(append([]uint8(nil), obs...), obs...), 2, out)
		if !errors.Is(err, policy.ErrNonFinite) {
			t.Fatalf("Logits = %v, want ErrNonFinite", err)
		}
		f := make([]float32, len(obs))
		for i, v := range obs {
			f[i] = float32(v)
		}
		if err := p.LogitsFloat(f, 1, out[:p.NumActions()]); !errors.Is(err, policy.ErrNonFinite) {
			t.Fatalf("LogitsFloat = %v, want ErrNonFinite", err)
		}
	})
	t.Run("a bot's decision panics with the error, never plays", func(t *testing.T) {
		for _, b := range []card.StateBot{policy.Bot{Policy: p, Greedy: true}, policy.Bot{Policy: p, Temperature: 1}} {
			func() {
				defer func() {
					e, _ := recover().(error)
					if !errors.Is(e, policy.ErrNonFinite) {
						t.Fatalf("Act panicked with %v, want ErrNonFinite", e)
					}
				}()
				rng := env.NewRNG(1, 1)
				a := b.ActState(s, &rng)
				t.Fatalf("Act played %d", a)
			}()
		}
	})
	t.Run("a match with it fails with the error", func(t *testing.T) {
		reg := games.Default()
		if err := policy.Register(reg, map[string]*policy.Policy{"overflow": p}); err != nil {
			t.Fatal(err)
		}
		typ, _ := reg.Lookup(card.GameName)
		cg, _ := typ.New(map[string]any{"players": 4, "deals": 1})
		_, err := env.PlayMatchOf(reg, cg, env.MatchConfig{Agents: []string{"policy:overflow", "random", "random", "random"}, Games: 4, Seed: 3})
		if !errors.Is(err, policy.ErrNonFinite) {
			t.Fatalf("PlayMatchOf = %v, want ErrNonFinite", err)
		}
	})
}
