package main

import (
	"runtime"
	"slices"
	"testing"

	"github.com/davidgoliath/dgenv/env"
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

// TestPickRowIsTheKthOne: the word-at-a-time pick gives the same action as
// counting byte by byte, for rows of every length and density.
func TestPickRowIsTheKthOne(t *testing.T) {
	src := env.NewRNG(1, 2)
	for na := 1; na <= 100; na++ {
		row := make([]uint8, na)
		for trial := range 50 {
			n := 0
			for j := range row {
				row[j] = 0
				if src.IntN(trial%5+2) == 0 {
					row[j], n = 1, n+1
				}
			}
			a, b := env.NewRNG(uint64(na), uint64(trial)), env.NewRNG(uint64(na), uint64(trial))
			got := pickRow(row, &a)
			if n == 0 {
				if got != -1 {
					t.Fatalf("na=%d: empty row picked %d", na, got)
				}
				continue
			}
			k, want := b.IntN(n), int32(-1)
			for j, m := range row {
				if m == 1 {
					if k == 0 {
						want = int32(j)
						break
					}
					k--
				}
			}
			if got != want {
				t.Fatalf("na=%d row %v: picked %d, want %d", na, row, got, want)
			}
		}
	}
}

// TestRandomActionsDoNotDependOnTheCores: a batch of several chunks draws
// the same actions on one core as on all of them.
func TestRandomActionsDoNotDependOnTheCores(t *testing.T) {
	draw := func(procs int) []int32 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		e, err := newVecEnv([]byte(`{"num_envs":2000,"seed":5}`))
		if err != nil {
			t.Fatal(err)
		}
		defer e.close()
		acts := make([]int32, 2000)
		if err := e.randomActions(acts); err != nil {
			t.Fatal(err)
		}
		return acts
	}
	if a, b := draw(1), draw(4); !slices.Equal(a, b) {
		t.Errorf("GOMAXPROCS 1 and 4 drew different actions")
	}
}
