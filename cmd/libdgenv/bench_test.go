package main

import (
	"testing"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
)

// BenchmarkStepAndCopy is one step of 4096 games with random legal actions
// (picked as dgbench does), with and without copying the outputs into a
// caller's arena: what the in-process transport adds to the engine.
func BenchmarkStepAndCopy(b *testing.B) {
	for _, copyOut := range []bool{false, true} {
		name := "engine only"
		if copyOut {
			name = "with copy"
		}
		b.Run(name, func(b *testing.B) {
			e, err := newVecEnv([]byte(`{"num_envs":4096,"seed":1}`))
			if err != nil {
				b.Fatal(err)
			}
			defer e.close()
			arena := make([]byte, e.bytes)
			acts := make([]int32, 4096)
			rng := env.NewRNG(1, 1)
			var legal []card.Action
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				for i := range acts {
					legal = e.v.State(i).AppendLegalActions(legal[:0])
					acts[i] = int32(legal[rng.IntN(len(legal))])
				}
				if copyOut {
					if err := e.step(acts, arena); err != nil {
						b.Fatal(err)
					}
				} else if err := e.v.Step(acts); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*4096)/b.Elapsed().Seconds(), "env-steps/s")
		})
	}
}

// BenchmarkStepOne is one step of one game with a random legal action:
// the engine's share of a single-game step from Python.
func BenchmarkStepOne(b *testing.B) {
	for _, cfg := range []string{`{"num_envs":1,"seed":1}`, `{"num_envs":1,"seed":1,"obs_dtype":"<f4"}`} {
		b.Run(cfg, func(b *testing.B) {
			e, err := newVecEnv([]byte(cfg))
			if err != nil {
				b.Fatal(err)
			}
			defer e.close()
			arena := make([]byte, e.bytes)
			acts := make([]int32, 1)
			rng := env.NewRNG(1, 1)
			var legal []card.Action
			b.ReportAllocs()
			for range b.N {
				legal = e.v.State(0).AppendLegalActions(legal[:0])
				acts[0] = int32(legal[rng.IntN(len(legal))])
				if err := e.step(acts, arena); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRandomActions is random_actions at N = 4096: drawing a legal
// action per env from the masks (compare dgbench's pick, which is serial).
func BenchmarkRandomActions(b *testing.B) {
	e, err := newVecEnv([]byte(`{"num_envs":4096,"seed":1}`))
	if err != nil {
		b.Fatal(err)
	}
	defer e.close()
	acts := make([]int32, 4096)
	b.ResetTimer()
	for range b.N {
		if err := e.randomActions(acts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*4096)/b.Elapsed().Seconds(), "env-steps/s")
}
