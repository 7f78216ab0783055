package main

import (
	"slices"
	"sync"
	"testing"
	"unsafe"

	"github.com/davidgoliath/dgenv/env/card"
)

func TestVecEnvRefusesBadConfigsAndCopiesItsBuffers(t *testing.T) {
	for _, cfg := range []string{`{"game":{"players":7}}`, `{"num_envs":0}`, `{"packing":"zip"}`, `{"reward":"x"}`,
		`{"learner_seats":[0]}`, `{"learner_seats":[0],"opponent":"nobody"}`, `{"game":{"deals":0}}`, `not json`,
		`{"obs_dtype":"<f8"}`, `{"packing":"bits","obs_dtype":"<f4"}`} {
		if _, err := newVecEnv([]byte(cfg)); err == nil || err.Code != "bad_request" {
			t.Errorf("newVecEnv(%s) = %v, want a bad_request", cfg, err)
		}
	}
	for _, cfg := range []string{`{"opponents":[null,"random","random"]}`, `{"opponents":[null,"random","nobody","random"]}`,
		`{"opponent":"random","opponents":[null,"random","random","random"]}`, `{"learner_seats":[1],"opponents":[null,"random","random","random"]}`} {
		if _, err := newVecEnv([]byte(cfg)); err == nil || err.Code != "bad_request" || err.Details["field"] != "opponents" {
			t.Errorf("newVecEnv(%s) = %v, want a bad_request of field opponents", cfg, err)
		}
	}
	table, err := newVecEnv([]byte(`{"num_envs":4,"seed":3,"opponents":[null,"heuristic",null,"random"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := table.spec.LearnerSeats; !slices.Equal(got, []int{0, 2}) {
		t.Errorf("a table of bots: learner seats %v, want [0 2]", got)
	}
	table.close()
	e, err := newVecEnv([]byte(`{"num_envs":8,"seed":3,"game":{"players":5}}`))
	if err != nil {
		t.Fatal(err)
	}
	defer e.close()
	arena := make([]byte, e.bytes)
	e.reset(3, true, arena)
	for _, pc := range e.pieces {
		if !slices.Equal(arena[pc.Offset:pc.Offset+len(pc.src())], pc.src()) {
			t.Errorf("%s: arena differs from the VecEnv's buffer", pc.Name)
		}
	}
	acts := make([]int32, 8)
	if err := e.step(acts, arena); err == nil || err.Code != "illegal_action" {
		t.Errorf("step(all zeros) = %v, want illegal_action", err)
	}
	f, err := newVecEnv([]byte(`{"num_envs":8,"seed":3,"game":{"players":5},"obs_dtype":"<f4"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer f.close()
	farena := make([]byte, f.bytes)
	f.reset(3, true, farena)
	obs := e.v.Obs()
	got := unsafe.Slice((*float32)(unsafe.Pointer(&farena[f.pieces[0].Offset])), len(obs))
	for i, v := range obs {
		if got[i] != float32(v) {
			t.Fatalf("float32 obs[%d] = %v, want %d", i, got[i], v)
		}
	}
}

// TestOneHandleFromManyGoroutines steps one batch from several goroutines
// at once: calls are serialised, so each sees a consistent batch (run with -race).
func TestOneHandleFromManyGoroutines(t *testing.T) {
	e, err := newVecEnv([]byte(`{"num_envs":4,"seed":1}`))
	if err != nil {
		t.Fatal(err)
	}
	defer e.close()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			arena := make([]byte, e.bytes)
			for range 50 {
				e.mu.Lock()
				mask := slices.Clone(e.v.Mask())
				e.mu.Unlock()
				acts := make([]int32, 4)
				for i := range acts {
					acts[i] = int32(slices.Index(mask[i*card.NumActions:(i+1)*card.NumActions], 1))
				}
				_ = e.step(acts, arena) // another goroutine may have stepped first: illegal is fine
			}
			_ = g
		}()
	}
	wg.Wait()
}
