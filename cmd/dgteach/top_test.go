package main

import (
	"bytes"
	"cmp"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/games"
	"github.com/davidgoliath/dgenv/env/policy"
)

// policiesDir is the repository's committed policies.
const policiesDir = "../../policies"

// TestRolloutTop: -rollout-top 2 -rollout-policy values the two legal
// cards the policy ranks highest, and only those (the shards' valued
// array), with the values every-card labelling gives them: the same
// seeds, the same playouts. The table's games do not depend on it.
func TestRolloutTop(t *testing.T) {
	base := []string{"-players", "3", "-deals", "1", "-table", "policy:expert-p3,heuristic,heuristic", "-policies", policiesDir,
		"-teacher", "rollout", "-rollout-sampled", "-rollouts", "2", "-rollout-table", "heuristic,heuristic,heuristic",
		"-label-seats", "0", "-eps", "0", "-games", "2", "-shard-games", "2", "-workers", "1", "-seed", "9", "-quiet"}
	label := func(extra ...string) (map[string][]byte, string) { return labelShard(t, base, extra...) }
	all, _ := label()
	top, meta := label("-rollout-top", "2", "-rollout-policy", "expert-p3")
	for _, want := range []string{`"rollout_top": 2`, `"rollout_policy": "expert-p3"`, `"rollout_sampled": true`} {
		if !strings.Contains(meta, want) {
			t.Fatalf("meta.json lacks %s:\n%s", want, meta)
		}
	}
	if _, ok := all["valued"]; ok {
		t.Fatal("every-card labels wrote a valued array")
	}
	for _, key := range []string{"obs", "mask", "played", "ret", "seat"} {
		if !bytes.Equal(all[key], top[key]) {
			t.Fatalf("%s differs with -rollout-top: the table's games should not depend on it", key)
		}
	}
	data, err := os.ReadFile(filepath.Join(policiesDir, "expert-p3.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	ranker, err := policy.Parse(games.Default(), "expert-p3", data)
	if err != nil {
		t.Fatal(err)
	}
	n := len(top["seat"])
	if n < 20 {
		t.Fatalf("%d records", n)
	}
	d := len(top["obs"]) / n
	logits := make([]float32, 90)
	for i := range n {
		if err := ranker.Logits(top["obs"][d*i:d*(i+1)], 1, logits); err != nil {
			t.Fatal(err)
		}
		var legal []int
		for c := range 90 {
			if top["mask"][90*i+c] == 1 {
				legal = append(legal, c)
			}
		}
		slices.SortStableFunc(legal, func(x, y int) int { return cmp.Compare(logits[y], logits[x]) })
		want := map[int]bool{legal[0]: true, legal[1]: true}
		for c := range 90 {
			if (top["valued"][90*i+c] == 1) != want[c] {
				t.Fatalf("record %d: card %d valued %d; the policy's two best are %d and %d", i, c, top["valued"][90*i+c], legal[0], legal[1])
			}
			q, qa := f32At(top["q"], 90*i+c), f32At(all["q"], 90*i+c)
			if want[c] && q != qa || !want[c] && q != 0 {
				t.Fatalf("record %d card %d: q %v, every-card labelling %v", i, c, q, qa)
			}
		}
		if a := i16At(top["action"], i); !want[a] {
			t.Fatalf("record %d: the choice %d is not valued", i, a)
		}
	}
	for _, args := range [][]string{
		{"-teacher", "rollout", "-rollout-top", "2"},
		{"-teacher", "rollout", "-rollout-policy", "expert-p3", "-policies", policiesDir},
		{"-teacher", "rollout", "-rollout-top", "2", "-rollout-policy", "nosuch", "-policies", policiesDir},
		{"-teacher", "rollout", "-rollout-top", "-1"},
		{"-teacher", "rollout", "-rollout-top", "2", "-rollout-policy", "expert-p4", "-policies", policiesDir},
		{"-rollout-top", "2", "-rollout-policy", "expert-p3", "-policies", policiesDir},
		{"-rollout-sampled"},
	} {
		var errb bytes.Buffer
		args = append(args, "-players", "3", "-table", "heuristic,heuristic,heuristic", "-out", t.TempDir(), "-games", "1", "-quiet")
		if rc := run(args, &errb); rc == 0 || !strings.Contains(errb.String(), "-rollout-") {
			t.Errorf("%v: rc %d, stderr %q; want an error naming the flag", args, rc, errb.String())
		}
	}
}

// TestRolloutSampledReadsOnlyTheSeatsInformation: with -rollout-sampled,
// two states the acting seat cannot tell apart (one a world drawn from
// the other) get the same values up to the playouts' noise (not to the
// bit: a world is dealt from the unseen cards in the order the true hands
// hold them, as the search's worlds are); the true state's rollouts tell
// the two deals apart by points.
func TestRolloutSampledReadsOnlyTheSeatsInformation(t *testing.T) {
	reg := games.Default()
	c := config{players: 3, deals: 1, game: "david_goliath", table: []string{"heuristic", "heuristic", "heuristic"}, rollouts: 400, orders: 1}
	g, err := newGame(reg, c)
	if err != nil {
		t.Fatal(err)
	}
	rng := env.NewRNG(3, 4)
	s := g.NewInitialState(rng.Uint64())
	for range 7 { // into the first deal, a trick under way
		var legal []int
		legal = s.AppendLegalActions(legal)
		s.ApplyUnchecked(legal[rng.IntN(len(legal))])
	}
	me := s.CurrentPlayer()
	other := s.(env.Resampler).ResampleWorld(me, &rng)
	legal := s.AppendLegalActions(nil)
	values := func(sampled bool, st env.State) []float64 {
		c.rolloutSampled = sampled
		v, err := newRolloutValuer(c, reg, g, nil)
		if err != nil {
			t.Fatal(err)
		}
		dst := make([]float64, len(legal))
		r := env.NewRNG(5, 6)
		v.ActionValues(st, &r, legal, dst)
		return dst
	}
	gap := func(a, b []float64) float64 {
		m := 0.0
		for j := range a {
			m = max(m, math.Abs(a[j]-b[j]))
		}
		return m
	}
	// 400 playouts a card: the sampled values' noise is about a tenth of a point
	if g := gap(values(true, s), values(true, other)); g > 1 {
		t.Fatalf("sampled values differ by %.2f points between states the seat cannot tell apart", g)
	}
	if g := gap(values(false, s), values(false, other)); g < 4 {
		t.Fatalf("the true state's values differ by only %.2f points between the two deals: the test states do not tell the modes apart", g)
	}
}
