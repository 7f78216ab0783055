package policy

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
	"github.com/davidgoliath/dgenv/env/games"
)

// gameModel builds a policy file for game g whose logits are the constant
// bias (one per action, whatever the observation): obs -> Gemm(zero weight,
// bias) -> logits. meta overrides metadata keys ("" deletes one).
func gameModel(tb testing.TB, g env.Game, bias []float32, meta map[string]string) []byte {
	tb.Helper()
	lay := g.Observation()
	d, na := int64(lay.Size), int64(len(bias))
	var gr []byte
	gr = pbBytes(gr, graphNode, pbNode("Gemm", []string{"obs", "w", "b"}, "logits"))
	gr = pbBytes(gr, graphInitializer, pbTensor("w", []int64{d, na}, make([]float32, d*na)))
	gr = pbBytes(gr, graphInitializer, pbTensor("b", []int64{na}, bias))
	gr = pbBytes(gr, graphInput, pbValue("obs", 1, d))
	gr = pbBytes(gr, graphOutput, pbValue("logits", 1, na))
	m := pbBytes(nil, modelGraph, gr)
	refs := make([]SectionRef, len(lay.Sections))
	for i, s := range lay.Sections {
		refs[i] = SectionRef{Name: s.Name, Offset: s.Offset, Shape: s.Shape}
	}
	layout, _ := json.Marshal(refs)
	spec := map[string]any{"name": g.Type().Name}
	for k, v := range g.Values() {
		spec[k] = v
	}
	game, _ := json.Marshal(spec)
	md := map[string]string{
		"dgenv.format": Format, "dgenv.game": string(game), "dgenv.obs_layout": string(layout),
		"dgenv.obs_size": strconv.Itoa(lay.Size), "dgenv.num_actions": strconv.Itoa(len(bias)),
	}
	for k, v := range meta {
		if v == "" {
			delete(md, k)
		} else {
			md[k] = v
		}
	}
	for k, v := range md {
		m = pbBytes(m, modelMetadata, pbBytes(pbBytes(nil, 1, []byte(k)), 2, []byte(v)))
	}
	return m
}

func newGame(tb testing.TB, reg *env.Registry, name string, params map[string]any) env.Game {
	tb.Helper()
	t, err := reg.Lookup(name)
	if err != nil {
		tb.Fatal(err)
	}
	g, err := t.New(params)
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

// descending is a bias that prefers the highest action id.
func descending(n int) []float32 {
	b := make([]float32, n)
	for a := range b {
		b[a] = float32(a) / float32(n)
	}
	return b
}

// TestPolicyOfAnotherGame: a policy file may play any registered game (the
// duel here): its metadata names the game, the layout and action count are
// the duel's, Register makes it a duel bot and the guide of a duel search
// (and not a card-game one), and it plays whole duels legally, greedily
// choosing its best legal action.
func TestPolicyOfAnotherGame(t *testing.T) {
	reg := games.Default()
	duel := newGame(t, reg, "duel", nil)
	na := duel.NumDistinctActions()
	p, err := Parse(reg, "d", gameModel(t, duel, descending(na), nil))
	if err != nil {
		t.Fatal(err)
	}
	if m := p.Meta(); m.GameName != "duel" || m.NumActions != na || p.NumActions() != na || m.ObsSize != duel.Observation().Size ||
		p.Game().Type().Name != "duel" || m.Params["max_rounds"] != 100 {
		t.Fatalf("Meta = %+v, game %s", m, p.Game().Type().Name)
	}
	if err := Register(reg, map[string]*Policy{"d": p}); err != nil {
		t.Fatal(err)
	}
	cardGame := newGame(t, reg, "", nil)
	if _, err := reg.NewBot(cardGame, "policy:d"); err == nil {
		t.Fatal("the duel policy became a card-game bot")
	}
	if _, err := reg.NewBot(cardGame, "search:policy:d"); err == nil {
		t.Fatal("the duel policy guides the card game's search")
	}
	if b, err := reg.NewBot(duel, "search:policy:d"); err != nil {
		t.Fatalf("the duel policy guides no duel search: %v", err)
	} else if _, ok := b.(*GuidedSearch); !ok {
		t.Fatalf("search:policy:d is a %T, want the duel's search it guides (*GuidedSearch)", b)
	}
	// The round limit leaves the layout alone: the policy plays it too.
	short := newGame(t, reg, "duel", map[string]any{"max_rounds": 20})
	bot, err := reg.NewBot(short, "policy:d")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Check(cardGame); err == nil || !strings.Contains(err.Error(), "plays duel, not david_goliath") {
		t.Fatalf("Check(card game) = %v", err)
	}
	mask := make([]uint8, na)
	for seed := range uint64(20) {
		s := short.NewInitialState(seed)
		rng := env.NewRNG(seed, 1)
		for moves := 0; !s.IsTerminal(); moves++ {
			if moves > short.MaxGameLength() {
				t.Fatalf("seed %d: longer than MaxGameLength %d", seed, short.MaxGameLength())
			}
			a := bot.Act(s, &rng)
			s.WriteMask(mask)
			best := -1
			for i, m := range mask {
				if m != 0 {
					best = i // the highest legal id: the bias's favourite
				}
			}
			if a != best {
				t.Fatalf("seed %d move %d: greedy policy chose %d, want its best legal action %d", seed, moves, a, best)
			}
			if err := s.ApplyAction(a); err != nil {
				t.Fatalf("seed %d move %d: %v", seed, moves, err)
			}
		}
	}
}

// TestPolicyGameMetadataErrors: a file whose game, action count or layout
// does not fit the registry's game is refused, saying what is wrong.
func TestPolicyGameMetadataErrors(t *testing.T) {
	reg := games.Default()
	duel := newGame(t, reg, "duel", nil)
	cardGame := newGame(t, reg, "", nil)
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"unknown game", gameModel(t, duel, descending(duel.NumDistinctActions()), map[string]string{"dgenv.game": `{"name":"chess"}`}), "chess"},
		{"name not a string", gameModel(t, duel, descending(duel.NumDistinctActions()), map[string]string{"dgenv.game": `{"name":7}`}), "want a game's name"},
		{"game not an object", gameModel(t, duel, descending(duel.NumDistinctActions()), map[string]string{"dgenv.game": `null`}), "want a JSON object"},
		{"parameter out of range", gameModel(t, duel, descending(duel.NumDistinctActions()), map[string]string{"dgenv.game": `{"name":"duel","max_rounds":0}`}), "max_rounds"},
		{"card game's action count for the duel", gameModel(t, duel, descending(card.NumActions), nil), "duel has 117 actions"},
		{"the card game's layout under the duel's name", gameModel(t, cardGame, descending(duel.NumDistinctActions()), map[string]string{"dgenv.game": `{"name":"duel"}`}), "observation size"},
		{"no name is the default game (the card game), whose layout differs", gameModel(t, duel, descending(card.NumActions), map[string]string{"dgenv.game": `{"max_rounds":100}`}), "max_rounds"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(reg, "x", c.data)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Parse = %v, want an error mentioning %q", err, c.want)
			}
		})
	}
}

// TestChooseAnyWidth: Choose reads as many mask entries as there are
// logits, greedy or sampled, and allocates nothing.
func TestChooseAnyWidth(t *testing.T) {
	logits := []float32{3, 9, 1, 5, 2}
	mask := []uint8{1, 0, 1, 1, 0, 1, 1} // longer than the logits: the tail is ignored
	rng := env.NewRNG(1, 2)
	if a := Choose(logits, mask, true, 1, &rng); a != 3 {
		t.Fatalf("greedy = %d, want 3", a)
	}
	seen := map[int]int{}
	for range 2000 {
		seen[Choose(logits, mask, false, 2, &rng)]++
	}
	if seen[1] != 0 || seen[4] != 0 || seen[3] < seen[0] || seen[0] < seen[2] || seen[2] == 0 {
		t.Fatalf("samples %v: want only legal 0, 2, 3, ordered by logit", seen)
	}
	if n := testing.AllocsPerRun(100, func() { Choose(logits, mask, false, 1, &rng) }); n != 0 {
		t.Fatalf("Choose allocates %v a call", n)
	}
}

// TestLogitScale: metadata dgenv.logit_scale is read into Meta.LogitScale
// (1 when absent, as in every file written before it), weighs the logits
// in the guided search, and a value that is not a positive finite number
// up to MaxLogitScale is refused, naming the key.
func TestLogitScale(t *testing.T) {
	reg := games.Default()
	g := newGame(t, reg, card.GameName, map[string]any{"players": 4})
	bias := descending(card.NumActions)
	for _, c := range []struct {
		value string
		want  float64
	}{{"", 1}, {"4", 4}, {"0.25", 0.25}, {"1000", 1000}} {
		p, err := Parse(reg, "scaled", gameModel(t, g, bias, map[string]string{"dgenv.logit_scale": c.value}))
		if err != nil {
			t.Fatalf("logit_scale %q: %v", c.value, err)
		}
		if got := p.Meta().LogitScale; got != c.want {
			t.Fatalf("logit_scale %q: Meta().LogitScale = %v, want %v", c.value, got, c.want)
		}
		if w := NewGuided(p).PriorWeight; w != GuidedWeight*c.want {
			t.Fatalf("logit_scale %q: guided PriorWeight = %v, want %v", c.value, w, GuidedWeight*c.want)
		}
	}
	for _, bad := range []string{"0", "-1", "NaN", "+Inf", "1e9", "four", "1001"} {
		_, err := Parse(reg, "scaled", gameModel(t, g, bias, map[string]string{"dgenv.logit_scale": bad}))
		if err == nil || !strings.Contains(err.Error(), "dgenv.logit_scale") {
			t.Fatalf("logit_scale %q: err = %v, want a refusal naming dgenv.logit_scale", bad, err)
		}
	}
}
