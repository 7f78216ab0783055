package main

import (
	"slices"
	"testing"
)

// TestRandomActionsAreLegalSeededAndAllocateNothing: random_actions' draws
// are legal actions of each env's state, the same after the same seeded
// reset, and cost no allocation.
func TestRandomActionsAreLegalSeededAndAllocateNothing(t *testing.T) {
	for _, cfg := range []string{`{"num_envs":64,"seed":3}`, `{"num_envs":64,"seed":3,"packing":"bits"}`,
		`{"num_envs":64,"seed":3,"game":{"name":"duel"}}`} {
		e, err := newVecEnv([]byte(cfg))
		if err != nil {
			t.Fatal(cfg, err)
		}
		arena := make([]byte, e.bytes)
		acts := make([]int32, 64)
		e.reset(7, true, arena)
		if err := e.randomActions(acts); err != nil {
			t.Fatal(cfg, err)
		}
		first := slices.Clone(acts)
		for step := range 100 {
			mask, na := e.v.Mask(), len(e.v.Mask())/64
			for i, a := range acts {
				if mask[i*na+int(a)] != 1 {
					t.Fatalf("%s step %d: env %d drew illegal action %d", cfg, step, i, a)
				}
			}
			if err := e.step(acts, arena); err != nil {
				t.Fatal(cfg, err)
			}
			if err := e.randomActions(acts); err != nil {
				t.Fatal(cfg, err)
			}
		}
		e.reset(7, true, arena)
		_ = e.randomActions(acts)
		if !slices.Equal(acts, first) {
			t.Errorf("%s: a reset with the same seed drew %v, then %v", cfg, first, acts)
		}
		if n := testing.AllocsPerRun(20, func() { _ = e.randomActions(acts) }); n != 0 {
			t.Errorf("%s: %v allocations per call", cfg, n)
		}
		e.close()
	}
}
