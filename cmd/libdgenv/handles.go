package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/policy"
	"github.com/davidgoliath/dgenv/server/wire"
)

// Objects live in Go and C holds only their handles (positive integers):
// the cgo rules forbid C keeping Go pointers, and a handle is checked, so
// a stale or made-up one is an error instead of a crash.
var handles = struct {
	sync.Mutex
	next int64
	m    map[int64]any
}{m: map[int64]any{}}

func newHandle(obj any) int64 {
	handles.Lock()
	defer handles.Unlock()
	handles.next++
	handles.m[handles.next] = obj
	return handles.next
}

func lookup[T any](h int64) (T, *env.Error) {
	handles.Lock()
	obj, ok := handles.m[h]
	handles.Unlock()
	t, isT := obj.(T)
	if !ok || !isT {
		return t, &env.Error{Code: env.CodeNotFound, Message: fmt.Sprintf("handle %d: unknown (freed, or never made)", h)}
	}
	return t, nil
}

// freeHandle forgets h and returns what it held (nil if nothing).
func freeHandle(h int64) any {
	handles.Lock()
	defer handles.Unlock()
	obj := handles.m[h]
	delete(handles.m, h)
	return obj
}

func liveHandles() int {
	handles.Lock()
	defer handles.Unlock()
	return len(handles.m)
}

// Policies loaded into this process: each is also the bot "policy:<name>".
var policies = struct {
	sync.Mutex
	m map[string]*policy.Policy
}{m: map[string]*policy.Policy{}}

// loadPolicies loads every policy of dir (as dgserver --policies does) and
// registers them as bots.
func loadPolicies(dir string) *env.Error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return env.FieldError("policies", "policies: %v", err)
	}
	defer root.Close()
	gameRegistry.Lock()
	defer gameRegistry.Unlock()
	ps, err := policy.LoadFS(gameRegistry.r, root.FS(), nil)
	if err != nil {
		return env.FieldError("policies", "policies: %v", err)
	}
	// The policies' bots are bots of their games in this library's registry.
	if err := policy.Register(gameRegistry.r, ps); err != nil {
		return env.FieldError("policies", "policies: %v", err)
	}
	policies.Lock()
	for name, p := range ps {
		policies.m[name] = p
	}
	policies.Unlock()
	return nil
}

func policyList() []byte {
	policies.Lock()
	list := make([]wire.PolicyInfo, 0, len(policies.m))
	for name, p := range policies.m {
		list = append(list, wire.PolicyInfoOf(name, p))
	}
	policies.Unlock()
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	b, _ := json.Marshal(list)
	return b
}

// policyNamed is the policy loaded as name (nil when none is).
func policyNamed(name string) *policy.Policy {
	policies.Lock()
	defer policies.Unlock()
	return policies.m[name]
}

// policyAct is POST /v1/policies/{name}/act in process: obs [n, D] as
// bytes, mask [n, A], actions [n] written, and logits [n, A] too when
// wantLogits. D and A are those of the policy loaded as name when it is
// looked up here, once: every buffer must have exactly its length for
// them (a policy reloaded under the same name for another game has
// another A, and the caller's buffers are then refused, not overrun).
func policyAct(name string, obsU8, mask []uint8, n int, greedy bool, temp float64, seed uint64, actions []int32, logits []float32, wantLogits bool) *env.Error {
	p := policyNamed(name)
	if p == nil {
		return &env.Error{Code: env.CodeNotFound, Message: fmt.Sprintf("policy %q is not loaded", name)}
	}
	if n < 1 {
		return env.FieldError("obs", "obs: want at least one row")
	}
	if !(temp > 0) {
		return env.FieldError("temperature", "temperature %v: must be > 0", temp)
	}
	d, na := p.Meta().ObsSize, p.NumActions()
	// n*d and n*na cannot overflow: n is at most obs's length.
	if n > len(obsU8) {
		return env.FieldError("obs", "obs: %d bytes for %d rows", len(obsU8), n)
	}
	game := p.Meta().GameName
	e := firstError(
		wantLen("obs", len(obsU8), n*d, fmt.Sprintf("uint8 [%d, %d]: policy %q's observations of %s", n, d, name, game)),
		wantLen("mask", len(mask), n*na, fmt.Sprintf("uint8 [%d, %d]: policy %q's %s actions", n, na, name, game)),
		wantLen("actions", len(actions), n, fmt.Sprintf("int32 [%d]", n)))
	if e == nil && wantLogits {
		e = wantLen("logits", len(logits), n*na, fmt.Sprintf("float32 [%d, %d]: policy %q's %s actions", n, na, name, game))
	}
	if e != nil {
		return e
	}
	for r := range n {
		legal := false
		for _, v := range mask[r*na : (r+1)*na] {
			if v > 1 {
				return env.FieldError("mask", "mask row %d: values must be 0 or 1", r)
			}
			legal = legal || v == 1
		}
		if !legal {
			return env.FieldError("mask", "mask row %d has no legal action", r)
		}
	}
	if logits == nil {
		logits = make([]float32, n*na)
	}
	if err := p.Logits(obsU8, n, logits); err != nil {
		if errors.Is(err, policy.ErrNonFinite) { // the policy's fault, not the caller's
			return &env.Error{Code: env.CodeInternal, Message: err.Error()}
		}
		return env.FieldError("obs", "%v", err)
	}
	for r := range n {
		rng := env.NewRNG(seed, uint64(r))
		actions[r] = int32(policy.Choose(logits[r*na:(r+1)*na], mask[r*na:(r+1)*na], greedy, temp, &rng))
	}
	return nil
}
