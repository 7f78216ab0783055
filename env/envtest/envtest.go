// Package envtest checks that a game keeps the env.Game and
// env.State contracts: random games where, at every step, the mask
// agrees with the legal actions, observations fit the published layout,
// clones and serialized copies are independent and equal, and the record
// of each game replays to the same returns.
package envtest

import (
	"slices"
	"testing"

	"github.com/davidgoliath/dgenv/env"
)

// Conformance plays games random games of g (registered in reg as its type).
func Conformance(t *testing.T, reg *env.Registry, g env.Game, games int) {
	t.Helper()
	a, p, l := g.NumDistinctActions(), g.NumPlayers(), g.Observation()
	if !slices.Contains(g.Type().Players, p) {
		t.Fatalf("%s: %d players, not among %v", g.Type().Name, p, g.Type().Players)
	}
	off := 0
	for _, s := range l.Sections {
		if s.Offset != off {
			t.Fatalf("section %s at %d, want %d (sections must tile the tensor in order)", s.Name, s.Offset, off)
		}
		off += s.Size()
	}
	if off != l.Size {
		t.Fatalf("sections cover %d elements of %d", off, l.Size)
	}
	rng := env.NewRNG(1, 2)
	mask := make([]uint8, a)
	ob := make([]uint8, l.Size)
	for k := range games {
		s := g.NewInitialState(uint64(k))
		for steps := 0; !s.IsTerminal(); steps++ {
			if steps > g.MaxGameLength() {
				t.Fatalf("game %d longer than MaxGameLength %d", k, g.MaxGameLength())
			}
			cur := s.CurrentPlayer()
			if cur < 0 || cur >= p {
				t.Fatalf("current player %d", cur)
			}
			legal := env.LegalActions(s)
			s.WriteMask(mask)
			if len(legal) == 0 {
				t.Fatalf("game %d: no legal action", k)
			}
			for x := range a {
				if (mask[x] == 1) != slices.Contains(legal, x) || (mask[x] == 1) != s.IsLegal(x) {
					t.Fatalf("game %d: mask[%d] = %d, legal %v", k, x, mask[x], legal)
				}
			}
			if s.ApplyAction(a) == nil || s.ApplyAction(-1) == nil {
				t.Fatalf("an action out of range was accepted")
			}
			for seat := range p {
				s.WriteObservation(ob, seat)
				for _, sec := range l.Sections {
					for i, v := range ob[sec.Offset : sec.Offset+sec.Size()] {
						if int(v) < sec.Min || int(v) > sec.Max {
							t.Fatalf("seat %d: %s[%d] = %d outside %d..%d", seat, sec.Name, i, v, sec.Min, sec.Max)
						}
					}
				}
			}
			if steps%7 == 0 {
				c := s.Clone()
				text := s.Serialize()
				d, err := g.DeserializeState(text)
				if err != nil {
					t.Fatalf("DeserializeState(Serialize()): %v", err)
				}
				if d.Serialize() != text || c.Serialize() != text {
					t.Fatalf("a clone or a deserialized copy differs")
				}
				c.ApplyUnchecked(legal[0])
				if s.Serialize() != text {
					t.Fatalf("stepping a clone changed the original")
				}
			}
			x := legal[rng.IntN(len(legal))]
			if err := s.ApplyAction(x); err != nil {
				t.Fatalf("legal action %d refused: %v", x, err)
			}
		}
		if s.CurrentPlayer() >= 0 || s.ApplyAction(0) == nil {
			t.Fatalf("a terminal state has a seat to act or takes an action")
		}
		ret := env.Returns(s)
		for i, r := range ret {
			if r < g.MinUtility() || r > g.MaxUtility() {
				t.Fatalf("seat %d returns %v outside %v..%v", i, r, g.MinUtility(), g.MaxUtility())
			}
		}
		rec := env.RecordOf(s)
		if !rec.HasSeed {
			t.Fatalf("a state from NewInitialState has no seed")
		}
		if _, err := rec.Replay(reg); err != nil {
			t.Fatalf("replaying game %d: %v", k, err)
		}
		rec.Actions = rec.Actions[:len(rec.Actions)-1]
		if _, err := rec.Replay(reg); err == nil {
			t.Fatalf("a record missing its last action replayed")
		}
	}
}

// VecAllocs steps a Vec of g with random legal actions and returns the
// allocations per Step.
func VecAllocs(t *testing.T, g env.Game, cfg env.VecConfig) float64 {
	t.Helper()
	v, err := env.NewVec(g, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	n, a := v.NumEnvs(), g.NumDistinctActions()
	acts := make([]int32, n)
	rng := env.NewRNG(3, 4)
	pick := func() {
		m := v.Mask()
		for i := range n {
			var legal [512]int32
			k := 0
			for x := range a {
				if m[i*a+x] == 1 {
					legal[k] = int32(x)
					k++
				}
			}
			acts[i] = legal[rng.IntN(k)]
		}
	}
	for range 50 { // warm up: a few games end, every buffer is grown
		pick()
		if err := v.Step(acts); err != nil {
			t.Fatal(err)
		}
	}
	return testing.AllocsPerRun(100, func() {
		pick()
		if err := v.Step(acts); err != nil {
			t.Fatal(err)
		}
	})
}

// VecObsTarget steps two Vecs of g from the same seed with the same random
// legal actions (some envs skipped at every step): one writing into its own
// buffers, the other into a fresh caller's buffer at every Reset and Step
// (SetObsTarget, garbage-filled first). Every output must be the same, and
// after SetObsTarget(nil) the Vec writes its own buffer again. A packed
// config must be refused, as a target of the wrong size.
func VecObsTarget(t *testing.T, g env.Game, cfg env.VecConfig, steps int) {
	t.Helper()
	mk := func(c env.VecConfig) env.Vec {
		v, err := env.NewVec(g, c)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(v.Close)
		return v
	}
	own, tgt := mk(cfg), mk(cfg)
	n, a, d := own.NumEnvs(), g.NumDistinctActions(), g.Observation().Size
	if err := tgt.SetObsTarget(make([]uint8, n*d+1)); err == nil {
		t.Fatal("SetObsTarget took a buffer of the wrong size")
	}
	packed := cfg
	packed.Packed = true
	if err := mk(packed).SetObsTarget(make([]uint8, n*d)); err == nil {
		t.Fatal("a packed Vec took an observation target")
	}
	fresh := func() []uint8 {
		b := make([]uint8, n*d)
		for i := range b {
			b[i] = 0xA5 // not an observation value: a row left unwritten shows
		}
		if err := tgt.SetObsTarget(b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	same := func(when string, b []uint8) {
		t.Helper()
		if !slices.Equal(own.Obs(), b) || !slices.Equal(tgt.Obs(), b) {
			t.Fatalf("%s: the targeted observations differ from the Vec's own", when)
		}
		if !slices.Equal(own.Mask(), tgt.Mask()) || !slices.Equal(own.Player(), tgt.Player()) ||
			!slices.Equal(own.Rewards(), tgt.Rewards()) || !slices.Equal(own.Done(), tgt.Done()) ||
			!slices.Equal(own.Scores(), tgt.Scores()) {
			t.Fatalf("%s: the other outputs differ", when)
		}
	}
	own.Reset(7)
	b := fresh()
	tgt.Reset(7)
	same("reset", b)
	rng := env.NewRNG(7, 8)
	acts := make([]int32, n)
	for k := range steps {
		m := own.Mask()
		for i := range n {
			var legal []int32
			for x := range a {
				if m[i*a+x] == 1 {
					legal = append(legal, int32(x))
				}
			}
			acts[i] = legal[rng.IntN(len(legal))]
			if rng.IntN(5) == 0 {
				acts[i] = env.Skip
			}
		}
		if k%10 == 9 { // now and then without a target: the own buffer again
			if err := tgt.SetObsTarget(nil); err != nil {
				t.Fatal(err)
			}
			if err := own.Step(acts); err != nil {
				t.Fatal(err)
			}
			if err := tgt.Step(acts); err != nil {
				t.Fatal(err)
			}
			same("a step without a target", tgt.Obs())
			continue
		}
		b := fresh()
		if err := own.Step(acts); err != nil {
			t.Fatal(err)
		}
		if err := tgt.Step(acts); err != nil {
			t.Fatal(err)
		}
		same("a step", b)
	}
}
