package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
	"github.com/davidgoliath/dgenv/env/duel"
	"github.com/davidgoliath/dgenv/env/games"
)

func wantCode(t *testing.T, what string, e *env.Error, code, field string) {
	t.Helper()
	if e == nil {
		t.Fatalf("%s: no error, want %s naming %q", what, code, field)
	}
	if string(e.Code) != code {
		t.Fatalf("%s: code %q (%s), want %q", what, e.Code, e.Message, code)
	}
	if field != "" && (e.Details["field"] != field || !strings.Contains(e.Message, field)) {
		t.Fatalf("%s: %q (details %v), want it to name %q", what, e.Message, e.Details, field)
	}
}

func TestViewRefusesBuffersItCannotTrust(t *testing.T) {
	words := make([]int32, 4)
	p := unsafe.Pointer(&words[0])
	for _, c := range []struct {
		name   string
		p      unsafe.Pointer
		nbytes int64
	}{
		{"a negative length", p, -4},
		{"a length over 1 TiB", p, maxBuffer + 4},
		{"a length that is not a whole number of elements", p, 6},
		{"a null pointer with a length", nil, 8},
		{"a misaligned pointer", unsafe.Add(p, 1), 8},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, e := view[int32]("actions", c.p, c.nbytes)
			wantCode(t, c.name, e, "bad_request", "actions")
		})
	}
	if s, e := view[int32]("actions", p, 16); e != nil || len(s) != 4 || &s[0] != &words[0] {
		t.Errorf("view of 16 bytes = %d elements, %v; want the 4 words", len(s), e)
	}
	if s, e := view[int32]("actions", nil, 0); e != nil || s != nil {
		t.Errorf("view of nothing = %v, %v; want nil, nil", s, e)
	}
}

// TestBatchCallsCheckEveryLength: a step, reset or random_actions given a
// buffer of another length than the batch's is refused, and changes nothing.
func TestBatchCallsCheckEveryLength(t *testing.T) {
	for _, cfg := range []string{`{"num_envs":16,"seed":1}`, `{"num_envs":16,"seed":1,"obs_dtype":"<f4"}`,
		`{"num_envs":16,"seed":1,"game":{"name":"duel"}}`, `{"num_envs":16,"seed":1,"packing":"bits"}`} {
		t.Run(cfg, func(t *testing.T) {
			e, err := newVecEnv([]byte(cfg))
			if err != nil {
				t.Fatal(err)
			}
			defer e.close()
			arena := make([]byte, e.bytes+64)
			acts := make([]int32, 32)
			if err := e.reset(1, true, arena[:e.bytes]); err != nil {
				t.Fatal(err)
			}
			if err := e.randomActions(acts[:16]); err != nil {
				t.Fatal(err)
			}
			before := string(arena[:e.bytes])
			wantCode(t, "reset into a short arena", e.reset(2, true, arena[:e.bytes-8]), "bad_request", "arena")
			wantCode(t, "reset into a long arena", e.reset(2, true, arena), "bad_request", "arena")
			wantCode(t, "step with 15 actions", e.step(acts[:15], arena[:e.bytes]), "bad_request", "actions")
			wantCode(t, "step with 17 actions", e.step(acts[:17], arena[:e.bytes]), "bad_request", "actions")
			wantCode(t, "step into a short arena", e.step(acts[:16], arena[:e.bytes-8]), "bad_request", "arena")
			wantCode(t, "step into no arena", e.step(acts[:16], nil), "bad_request", "arena")
			wantCode(t, "random_actions into 15", e.randomActions(acts[:15]), "bad_request", "actions")
			if string(arena[:e.bytes]) != before {
				t.Fatal("a refused call wrote into the arena")
			}
			if err := e.step(acts[:16], arena[:e.bytes]); err != nil {
				t.Fatalf("the refused calls changed the batch: the actions drawn before them are now %v", err)
			}
		})
	}
}

// TestTheStepPathAllocatesNothing: a step, reset and random_actions as the
// C ABI makes them (handle lookup, buffer views, length checks) allocate
// nothing, and a refused length is answered without touching the batch.
func TestTheStepPathAllocatesNothing(t *testing.T) {
	for _, cfg := range []string{`{"num_envs":1024,"seed":1}`, `{"num_envs":1024,"seed":1,"obs_dtype":"<f4"}`} {
		e, err := newVecEnv([]byte(cfg))
		if err != nil {
			t.Fatal(err)
		}
		h := newHandle(e)
		arena := make([]byte, e.bytes)
		acts := make([]int32, 1024)
		ap, ar := unsafe.Pointer(&acts[0]), unsafe.Pointer(&arena[0])
		if err := vecReset(h, 1, true, ar, int64(len(arena))); err != nil {
			t.Fatal(err)
		}
		step := func() {
			if err := vecRandomActions(h, ap, 4*1024); err != nil {
				t.Fatal(err)
			}
			if err := vecStep(h, ap, 4*1024, ar, int64(len(arena))); err != nil {
				t.Fatal(err)
			}
		}
		if n := testing.AllocsPerRun(20, step); n != 0 {
			t.Errorf("%s: %v allocations per random_actions and step", cfg, n)
		}
		if n := testing.AllocsPerRun(5, func() { _ = vecReset(h, 2, true, ar, int64(len(arena))) }); n != 0 {
			t.Errorf("%s: %v allocations per reset", cfg, n)
		}
		wantCode(t, "vecStep with 1023 actions", vecStep(h, ap, 4*1023, ar, int64(len(arena))), "bad_request", "actions")
		if obj, ok := freeHandle(h).(*vecEnv); ok {
			obj.close()
		}
		wantCode(t, "vecStep on a freed handle", vecStep(h, ap, 4*1024, ar, int64(len(arena))), "not_found", "")
	}
}

func TestStatusAndSizesBuffersAreChecked(t *testing.T) {
	g, e := chanceGameOf([]byte(`{"name":"david_goliath","players":4,"deals":1}`))
	if e != nil {
		t.Fatal(e)
	}
	short := make([]int32, statusLen(g)-1)
	if _, e := statusView(g, unsafe.Pointer(&short[0]), int64(4*len(short))); e == nil {
		t.Error("a status buffer one element short was taken")
	}
	st := &stateHandle{g: g, s: g.NewChanceState()}
	for range 5 {
		_ = st.apply(st.s.AppendLegalActions(nil)[0])
	}
	out := []int32{-7, -7, -7, -7, -7, -7, -7, -7, -7}
	if n := st.history(out[:8]); n != 5 || out[0] != -7 {
		t.Errorf("history into room for 4 pairs = %d, %v; want 5 and nothing written", n, out)
	}
	if n := st.history(out[:10-1]); n != 5 || out[0] != -7 {
		t.Errorf("history into 9 elements = %d, %v; want 5 and nothing written", n, out)
	}
}

// TestStateCallsTakeAGameSpec: the single-state calls choose their game
// as dg_vec_new does (the duel too: it has explicit chance states), and
// refuse a game without explicit chance states.
func TestStateCallsTakeAGameSpec(t *testing.T) {
	for _, spec := range []string{`{}`, `{"name":"david_goliath"}`, `{"players":3,"deals":2,"first_dealer":2}`, `{"name":"` + duel.Name + `"}`} {
		if _, e := chanceGameOf([]byte(spec)); e != nil {
			t.Errorf("chanceGameOf(%s) = %v", spec, e)
		}
	}
	for _, c := range []struct{ spec, field, says string }{
		{`not json`, "game", "game"},
		{`{"name":7}`, "game.name", "string"},
		{`{"name":"chess"}`, "", "chess"},
		{`{"players":9}`, "game.players", "3..6"},
	} {
		_, e := chanceGameOf([]byte(c.spec))
		wantCode(t, c.spec, e, "bad_request", c.field)
		if !strings.Contains(e.Message, c.says) {
			t.Errorf("chanceGameOf(%s): %q, want it to say %q", c.spec, e.Message, c.says)
		}
	}
	// Every shipped game has explicit chance states: a registry with one
	// that has not (the duel's Game alone) for the refusal.
	plain := *duel.SpielType()
	plain.Name = "plain_duel"
	make0 := plain.Make
	plain.Make = func(v env.Values) (env.Game, error) {
		g, err := make0(v)
		return struct{ env.Game }{g}, err // hides ChanceGame
	}
	r := env.NewRegistry()
	if err := r.Register(&plain); err != nil {
		t.Fatal(err)
	}
	gameRegistry.Lock()
	saved := gameRegistry.r
	gameRegistry.r = r
	gameRegistry.Unlock()
	defer func() {
		gameRegistry.Lock()
		gameRegistry.r = saved
		gameRegistry.Unlock()
	}()
	_, e := chanceGameOf([]byte(`{"name":"plain_duel"}`))
	wantCode(t, "a game without explicit chance states", e, "bad_request", "game.name")
	if !strings.Contains(e.Message, "explicit chance") {
		t.Errorf("chanceGameOf(plain_duel): %q, want it to say explicit chance", e.Message)
	}
}

// copyPolicy puts the shipped policy file as <dir>/policy.onnx, the name
// the trainer gives every output.
func copyPolicy(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "policies", file))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "policy.onnx"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPolicyActChecksLengthsAgainstTheLoadedPolicy: a card-game policy
// (90 actions) reloaded under the same name as a duel one (117): buffers
// sized for the first are refused, not overrun.
func TestPolicyActChecksLengthsAgainstTheLoadedPolicy(t *testing.T) {
	defer func() { gameRegistry.Lock(); gameRegistry.r = games.Default(); gameRegistry.Unlock() }()
	if e := loadPolicies(copyPolicy(t, "beat-heuristic.onnx")); e != nil {
		t.Fatal(e)
	}
	const n = 16
	card := policyNamed("policy")
	d, na := card.Meta().ObsSize, card.NumActions()
	obs, mask := make([]uint8, n*d), make([]uint8, n*na)
	for r := range n {
		mask[r*na+r] = 1
	}
	acts, logits := make([]int32, n), make([]float32, n*na)
	if e := policyAct("policy", obs, mask, n, true, 1, 0, acts, logits, true); e != nil {
		t.Fatalf("the card-game policy with its own sizes: %v", e)
	}
	wantCode(t, "logits one row short", policyAct("policy", obs, mask, n, true, 1, 0, acts, logits[:(n-1)*na], true), "bad_request", "logits")
	wantCode(t, "actions one short", policyAct("policy", obs, mask, n, true, 1, 0, acts[:n-1], nil, false), "bad_request", "actions")
	wantCode(t, "obs for 17 rows", policyAct("policy", make([]uint8, (n+1)*d), mask, n, true, 1, 0, acts, nil, false), "bad_request", "obs")

	if e := loadPolicies(copyPolicy(t, "duel.onnx")); e != nil {
		t.Fatal(e)
	}
	if got := policyNamed("policy").NumActions(); got == na {
		t.Fatalf("the duel policy has %d actions, as the card game's: the test shows nothing", got)
	}
	e := policyAct("policy", obs, mask, n, true, 1, 0, acts, logits, true)
	wantCode(t, "the card game's buffers for the reloaded duel policy", e, "bad_request", "")
	if f := e.Details["field"]; f != "obs" && f != "mask" {
		t.Errorf("the refusal names %v (%s), want obs or mask", f, e.Message)
	}
}

// TestFreeingABatchIsSafeAgainstCallsInFlight: goroutines step, reset and
// draw on a batch while it is freed: each call either runs on the live
// batch or answers not_found, and the closed Vec is never touched (the
// engine panics on a send to its closed workers).
func TestFreeingABatchIsSafeAgainstCallsInFlight(t *testing.T) {
	for round := range 50 {
		e, err := newVecEnv([]byte(`{"num_envs":128,"seed":1,"workers":2}`))
		if err != nil {
			t.Fatal(err)
		}
		h := newHandle(e)
		var wg, started sync.WaitGroup
		for g := range 3 {
			wg.Add(1)
			started.Add(1)
			go func() {
				defer wg.Done()
				arena := make([]byte, e.bytes)
				acts := make([]int32, 128)
				for calls := 0; ; calls++ {
					if calls == 2 {
						started.Done()
					}
					v, err := lookup[*vecEnv](h)
					if err != nil {
						return // freed before this call looked it up
					}
					switch g {
					case 0:
						err = v.reset(uint64(round), true, arena)
					case 1:
						if err = v.randomActions(acts); err == nil {
							err = v.step(acts, arena)
						}
					default:
						_, err = v.record(0)
					}
					if err != nil {
						if err.Code != "not_found" && err.Code != "illegal_action" {
							t.Errorf("round %d: a call racing the free answered %v", round, err)
						}
						if err.Code == "not_found" {
							return
						}
					}
				}
			}()
		}
		started.Wait() // every goroutine has made two calls: none can meet the free before that
		if obj, ok := freeHandle(h).(*vecEnv); ok {
			obj.close()
		}
		wg.Wait()
	}
}

func TestMemoryBudgetIsCheckedAtCreation(t *testing.T) {
	reg := games.Default()
	typ, err := reg.Lookup(card.GameName)
	if err != nil {
		t.Fatal(err)
	}
	g, err := typ.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	start := reservedBytes() // batches other tests left open
	cost := env.CostOf(1000, g, false, false).Bytes
	budget := start + cost + cost/2 // one batch of 1000 envs fits, two do not
	cfg := []byte(`{"num_envs":1000,"seed":1,"memory_budget":` + itoa(budget) + `}`)
	a, e := newVecEnv(cfg)
	if e != nil {
		t.Fatalf("a batch within memory_budget: %v", e)
	}
	_, e = newVecEnv(cfg)
	wantCode(t, "a second batch past memory_budget", e, "limit", "memory_budget")
	a.close()
	a.close() // twice gives back once
	b, e := newVecEnv(cfg)
	if e != nil {
		t.Fatalf("after the first batch was freed: %v", e)
	}
	b.close()
	_, e = newVecEnv([]byte(`{"num_envs":1000,"memory_budget":` + itoa(cost-1) + `}`))
	wantCode(t, "one batch over the whole memory_budget", e, "too_large", "memory_budget")
	_, e = newVecEnv([]byte(`{"num_envs":1,"memory_budget":0}`))
	wantCode(t, "memory_budget 0", e, "bad_request", "memory_budget")

	big := env.CostOf(env.MaxNumEnvs, g, true, false).Bytes
	if big <= env.DefaultMemoryBudget {
		t.Fatalf("%d float32 envs cost %d bytes, within the default budget: pick a larger case", env.MaxNumEnvs, big)
	}
	_, e = newVecEnv([]byte(`{"num_envs":1048576,"obs_dtype":"<f4"}`))
	wantCode(t, "2^20 float32 envs under the default budget", e, "too_large", "memory_budget")
	if left := reservedBytes(); left != start {
		t.Errorf("%d bytes reserved after every batch of this test was freed or refused, %d before", left, start)
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func reservedBytes() int64 {
	reserved.Lock()
	defer reserved.Unlock()
	return reserved.bytes
}

// TestOneStateHandleFromManyGoroutines applies, reads and clones one state
// handle from several goroutines while it is freed: calls are serialised
// per handle (run with -race), and a call after the free finds nothing.
func TestOneStateHandleFromManyGoroutines(t *testing.T) {
	g, e := chanceGameOf([]byte(`{"players":3,"deals":1}`))
	if e != nil {
		t.Fatal(e)
	}
	h := newStateHandle(g, g.NewChanceState())
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status := make([]int32, statusLen(g))
			for range 40 {
				st, unlock := lockState(h)
				if st == nil {
					return // freed
				}
				if !st.s.IsTerminal() {
					if e := st.apply(st.s.AppendLegalActions(nil)[0]); e != nil {
						t.Error(e)
					}
				}
				st.writeStatus(status)
				c := st.s.Clone()
				unlock()
				_ = c.Serialize()
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		freeHandle(h)
	}()
	wg.Wait()
	if st, _ := lockState(h); st != nil {
		t.Error("a freed state handle was found")
	}
}
