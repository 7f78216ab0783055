// Command libdgenv is the engine as a C shared library, so Python (dgenv's
// in-process transport and its pyspiel game) runs it without a server:
//
//	go build -buildmode=c-shared -o bin/libdgenv.so ./cmd/libdgenv
//
// The ABI is flat and small: objects (batches, single game states) stay in
// Go and C holds integer handles; inputs and outputs are pointers to
// caller-owned memory that Go reads or fills during the call and never
// keeps; every call that can fail returns a negative number and writes a
// JSON error {"code", "message", "details"} (the server's codes) into the
// caller's error buffer. A handle may be used from several threads: calls on
// one handle are serialised, calls on different handles run in parallel.
//
// One Go runtime serves the whole process (load the library once). It does
// not survive fork(): a child must not call into a library its parent
// loaded (the Python side refuses with a clear error).
package main

/*
#include <stdint.h>
*/
import "C"

import (
	"encoding/json"
	"errors"
	"fmt"
	"unsafe"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/server/wire"
)

func main() {}

// abiVersion changes whenever an exported signature or a JSON layout does.
const abiVersion = 2

// bytesAt views n bytes of caller memory (nil when p is nil or n is 0).
func bytesAt(p unsafe.Pointer, n int) []byte {
	if p == nil || n <= 0 {
		return nil
	}
	return unsafe.Slice((*byte)(p), n)
}

// putBytes copies b into the caller's buffer when it fits and returns its
// length (the caller retries with a larger buffer when it did not fit).
func putBytes(buf *C.char, capacity C.int64_t, b []byte) C.int64_t {
	if len(b) <= int(capacity) {
		copy(bytesAt(unsafe.Pointer(buf), int(capacity)), b)
	}
	return C.int64_t(len(b))
}

// fail writes e into the error buffer (cut to fit) and returns -1.
func fail(errbuf *C.char, errcap C.int64_t, e *apiError) C.int64_t {
	b, _ := json.Marshal(e)
	dst := bytesAt(unsafe.Pointer(errbuf), int(errcap))
	if len(b) > len(dst) {
		short, _ := json.Marshal(&apiError{Code: e.Code, Message: e.Message[:min(len(e.Message), max(0, len(dst)-64))]})
		b = short
	}
	if len(b) <= len(dst) {
		copy(dst, b)
		if len(b) < len(dst) {
			dst[len(b)] = 0
		}
	}
	return -1
}

//export dg_abi_version
func dg_abi_version() C.int64_t { return abiVersion }

//export dg_free
func dg_free(h C.int64_t) {
	switch obj := freeHandle(int64(h)).(type) {
	case *vecEnv:
		obj.close()
	}
}

//export dg_live_handles
func dg_live_handles() C.int64_t { return C.int64_t(liveHandles()) }

//export dg_bots
func dg_bots(buf *C.char, capacity C.int64_t) C.int64_t {
	b, _ := json.Marshal(registry().Bots(env.GameName))
	return putBytes(buf, capacity, b)
}

// dg_games writes {"games": [...]} as GET /v1/games answers it: the games
// this library serves, with their parameters, sizes, layout and bots.
//
//export dg_games
func dg_games(buf *C.char, capacity C.int64_t) C.int64_t {
	list, err := wire.GamesOf(registry())
	if err != nil {
		list = nil
	}
	b, _ := json.Marshal(map[string]any{"games": list})
	return putBytes(buf, capacity, b)
}

//export dg_load_policies
func dg_load_policies(dir *C.char, errbuf *C.char, errcap C.int64_t) C.int64_t {
	if e := loadPolicies(C.GoString(dir)); e != nil {
		return fail(errbuf, errcap, e)
	}
	return 0
}

//export dg_policies
func dg_policies(buf *C.char, capacity C.int64_t) C.int64_t {
	return putBytes(buf, capacity, policyList())
}

//export dg_policy_act
func dg_policy_act(name *C.char, obsU8 unsafe.Pointer, obsLen C.int64_t, mask unsafe.Pointer, n C.int64_t,
	greedy C.int32_t, temperature C.double, seed C.uint64_t, actions unsafe.Pointer, logits unsafe.Pointer,
	errbuf *C.char, errcap C.int64_t) C.int64_t {
	rows := int(n)
	if rows < 1 {
		return fail(errbuf, errcap, badRequest("obs", "obs: want at least one row"))
	}
	// The mask and logits rows are the policy's game's actions wide (0 for
	// a policy not loaded: policyAct then answers not_found).
	na := policyActions(C.GoString(name))
	acts := unsafe.Slice((*int32)(actions), rows)
	var lg []float32
	if logits != nil {
		lg = unsafe.Slice((*float32)(logits), rows*na)
	}
	e := policyAct(C.GoString(name), bytesAt(obsU8, int(obsLen)), bytesAt(mask, rows*na), rows,
		greedy != 0, float64(temperature), uint64(seed), acts, lg)
	if e != nil {
		return fail(errbuf, errcap, e)
	}
	return 0
}

//export dg_vec_new
func dg_vec_new(cfg *C.char, cfgLen C.int64_t, errbuf *C.char, errcap C.int64_t) C.int64_t {
	e, err := newVecEnv(C.GoBytes(unsafe.Pointer(cfg), C.int(cfgLen)))
	if err != nil {
		return fail(errbuf, errcap, err)
	}
	return C.int64_t(newHandle(e))
}

//export dg_vec_info
func dg_vec_info(h C.int64_t, buf *C.char, capacity C.int64_t, errbuf *C.char, errcap C.int64_t) C.int64_t {
	e, err := lookup[*vecEnv](int64(h))
	if err != nil {
		return fail(errbuf, errcap, err)
	}
	return putBytes(buf, capacity, e.info())
}

//export dg_vec_reset
func dg_vec_reset(h C.int64_t, seed C.uint64_t, hasSeed C.int32_t, arena unsafe.Pointer, errbuf *C.char, errcap C.int64_t) C.int64_t {
	e, err := lookup[*vecEnv](int64(h))
	if err != nil {
		return fail(errbuf, errcap, err)
	}
	e.reset(uint64(seed), hasSeed != 0, bytesAt(arena, e.bytes))
	return 0
}

//export dg_vec_step
func dg_vec_step(h C.int64_t, actions unsafe.Pointer, arena unsafe.Pointer, errbuf *C.char, errcap C.int64_t) C.int64_t {
	e, err := lookup[*vecEnv](int64(h))
	if err != nil {
		return fail(errbuf, errcap, err)
	}
	if err := e.step(unsafe.Slice((*int32)(actions), e.spec.NumEnvs), bytesAt(arena, e.bytes)); err != nil {
		return fail(errbuf, errcap, err)
	}
	return 0
}

// dg_vec_random_actions writes a uniformly random legal action for every
// env's current state into actions (int32 [N]); the draws are seeded from
// the batch's seed and re-seeded by a seeded reset.
//
//export dg_vec_random_actions
func dg_vec_random_actions(h C.int64_t, actions unsafe.Pointer, errbuf *C.char, errcap C.int64_t) C.int64_t {
	e, err := lookup[*vecEnv](int64(h))
	if err != nil {
		return fail(errbuf, errcap, err)
	}
	if err := e.randomActions(unsafe.Slice((*int32)(actions), e.spec.NumEnvs)); err != nil {
		return fail(errbuf, errcap, err)
	}
	return 0
}

//export dg_vec_record
func dg_vec_record(h C.int64_t, k C.int64_t, buf *C.char, capacity C.int64_t, errbuf *C.char, errcap C.int64_t) C.int64_t {
	e, err := lookup[*vecEnv](int64(h))
	if err != nil {
		return fail(errbuf, errcap, err)
	}
	b, err := e.record(int(k))
	if err != nil {
		return fail(errbuf, errcap, err)
	}
	return putBytes(buf, capacity, b)
}

// statusLen is the length of a status array: current player, terminal (0
// or 1), the number of legal actions, then the legal actions.
const statusLen = 3 + env.NumActions

func (st *spielState) writeStatus(out unsafe.Pointer) {
	if out == nil {
		return
	}
	s := unsafe.Slice((*int32)(out), statusLen)
	s[0] = int32(st.currentPlayer())
	s[1] = 0
	if st.terminal() {
		s[1] = 1
	}
	n := len(st.legal(s[3:3]))
	s[2] = int32(n)
}

func spielParams(players, deals, firstDealer C.int64_t) env.Params {
	return env.Params{Players: int(players), Deals: int(deals), FirstDealer: int(firstDealer)}
}

//export dg_state_new
func dg_state_new(players, deals, firstDealer C.int64_t, errbuf *C.char, errcap C.int64_t) C.int64_t {
	st, err := newSpielState(spielParams(players, deals, firstDealer))
	if err != nil {
		return fail(errbuf, errcap, badRequest("", "%v", err))
	}
	return C.int64_t(newHandle(st))
}

//export dg_state_sizes
func dg_state_sizes(players, deals C.int64_t, out unsafe.Pointer) C.int64_t {
	g, err := env.NewGame(spielParams(players, deals, 0))
	if err != nil {
		return -1
	}
	s := unsafe.Slice((*int64)(out), 4)
	s[0] = int64(tensorSize(g, kindObservation))
	s[1] = int64(tensorSize(g, kindInfoState))
	s[2] = int64(2 * g.MaxGameLength()) // every card is dealt by a chance node, then played
	s[3] = int64(g.MaxUtility())
	return 0
}

func lockState(h C.int64_t) (*spielState, func()) {
	st, err := lookup[*spielState](int64(h))
	if err != nil {
		return nil, nil
	}
	st.mu.Lock()
	return st, st.mu.Unlock
}

//export dg_state_clone
func dg_state_clone(h C.int64_t) C.int64_t {
	st, unlock := lockState(h)
	if st == nil {
		return -1
	}
	c := st.clone()
	unlock()
	return C.int64_t(newHandle(c))
}

//export dg_state_apply
func dg_state_apply(h C.int64_t, action C.int64_t, status unsafe.Pointer, errbuf *C.char, errcap C.int64_t) C.int64_t {
	st, unlock := lockState(h)
	if st == nil {
		return fail(errbuf, errcap, &apiError{Code: "not_found", Message: fmt.Sprintf("state handle %d: unknown", h)})
	}
	defer unlock()
	if err := st.apply(int(action)); err != nil {
		e := &apiError{Code: "illegal_action", Message: err.Error()}
		var ia *env.IllegalActionError
		if errors.As(err, &ia) {
			legal := ia.Legal
			if legal == nil {
				legal = []int{}
			}
			e.Details = map[string]any{"player": ia.Player, "action": ia.Action, "legal": legal}
		}
		return fail(errbuf, errcap, e)
	}
	st.writeStatus(status)
	return 0
}

//export dg_state_status
func dg_state_status(h C.int64_t, status unsafe.Pointer) C.int64_t {
	st, unlock := lockState(h)
	if st == nil {
		return -1
	}
	defer unlock()
	st.writeStatus(status)
	return 0
}

//export dg_state_tensor
func dg_state_tensor(h, player, kind C.int64_t, dst unsafe.Pointer, size C.int64_t) C.int64_t {
	st, unlock := lockState(h)
	if st == nil {
		return -1
	}
	defer unlock()
	n := tensorSize(st.g, int(kind))
	if player < 0 || int(player) >= st.players() || int(size) < n || (kind != kindObservation && kind != kindInfoState) {
		return -1
	}
	st.tensor(int(player), int(kind), unsafe.Slice((*float32)(dst), n))
	return C.int64_t(n)
}

// String kinds of dg_state_string.
const (
	stringObservation = 0
	stringInfoState   = 1
	stringState       = 2
)

//export dg_state_string
func dg_state_string(h, player, kind C.int64_t, buf *C.char, capacity C.int64_t) C.int64_t {
	st, unlock := lockState(h)
	if st == nil {
		return -1
	}
	defer unlock()
	if kind != stringState && (player < 0 || int(player) >= st.players()) {
		return -1
	}
	var s string
	switch kind {
	case stringObservation:
		s = st.observationString(int(player))
	case stringInfoState:
		s = st.infoStateString(int(player))
	case stringState:
		s = st.String()
	default:
		return -1
	}
	return putBytes(buf, capacity, []byte(s))
}

//export dg_state_returns
func dg_state_returns(h, which C.int64_t, dst unsafe.Pointer) C.int64_t {
	st, unlock := lockState(h)
	if st == nil {
		return -1
	}
	defer unlock()
	out := unsafe.Slice((*float64)(dst), st.players())
	if which == 0 {
		st.returns(out)
	} else {
		copy(out, st.rewards[:st.players()])
	}
	return C.int64_t(st.players())
}

//export dg_state_serialize
func dg_state_serialize(h C.int64_t, buf *C.char, capacity C.int64_t) C.int64_t {
	st, unlock := lockState(h)
	if st == nil {
		return -1
	}
	defer unlock()
	return putBytes(buf, capacity, []byte(st.serialize()))
}

//export dg_state_deserialize
func dg_state_deserialize(players, deals, firstDealer C.int64_t, text *C.char, n C.int64_t, errbuf *C.char, errcap C.int64_t) C.int64_t {
	st, err := deserializeSpiel(spielParams(players, deals, firstDealer), string(C.GoBytes(unsafe.Pointer(text), C.int(n))))
	if err != nil {
		return fail(errbuf, errcap, badRequest("", "%v", err))
	}
	return C.int64_t(newHandle(st))
}

//export dg_state_resample
func dg_state_resample(h, player C.int64_t, seed C.uint64_t, errbuf *C.char, errcap C.int64_t) C.int64_t {
	st, unlock := lockState(h)
	if st == nil {
		return fail(errbuf, errcap, &apiError{Code: "not_found", Message: fmt.Sprintf("state handle %d: unknown", h)})
	}
	if player < 0 || int(player) >= st.players() {
		unlock()
		return fail(errbuf, errcap, badRequest("player", "player %d: must be 0..%d", player, st.players()-1))
	}
	r, err := st.resample(int(player), uint64(seed))
	unlock()
	if err != nil {
		return fail(errbuf, errcap, &apiError{Code: "internal", Message: err.Error()})
	}
	return C.int64_t(newHandle(r))
}

// dg_state_history writes (player, action) pairs of every action so far
// into out (2*cap int32) when they fit, and returns their number.
//
//export dg_state_history
func dg_state_history(h C.int64_t, out unsafe.Pointer, capacity C.int64_t) C.int64_t {
	st, unlock := lockState(h)
	if st == nil {
		return -1
	}
	defer unlock()
	n := len(st.hist)
	if n <= int(capacity) && n > 0 {
		s := unsafe.Slice((*int32)(out), 2*n)
		for i := range n {
			s[2*i], s[2*i+1] = int32(st.who[i]), st.hist[i]
		}
	}
	return C.int64_t(n)
}

// dg_state_apply_many applies n actions in order (a deal's chance outcomes
// in one call); on an error the actions before it stay applied.
//
//export dg_state_apply_many
func dg_state_apply_many(h C.int64_t, actions unsafe.Pointer, n C.int64_t, status unsafe.Pointer, errbuf *C.char, errcap C.int64_t) C.int64_t {
	st, unlock := lockState(h)
	if st == nil {
		return fail(errbuf, errcap, &apiError{Code: "not_found", Message: fmt.Sprintf("state handle %d: unknown", h)})
	}
	defer unlock()
	var acts []int32
	if n > 0 {
		acts = unsafe.Slice((*int32)(actions), int(n))
	}
	for _, a := range acts {
		if err := st.apply(int(a)); err != nil {
			return fail(errbuf, errcap, &apiError{Code: "illegal_action", Message: err.Error()})
		}
	}
	st.writeStatus(status)
	return 0
}

// dg_state_rollout plays n random games to the end from the state and
// writes each player's mean return into out: an MCTS evaluator's rollouts
// in one call.
//
//export dg_state_rollout
func dg_state_rollout(h, n C.int64_t, seed C.uint64_t, out unsafe.Pointer) C.int64_t {
	st, unlock := lockState(h)
	if st == nil || n < 1 {
		if unlock != nil {
			unlock()
		}
		return -1
	}
	defer unlock()
	sum := unsafe.Slice((*float64)(out), st.players())
	clear(sum)
	st.rollout(int(n), uint64(seed), sum)
	for i := range sum {
		sum[i] /= float64(n)
	}
	return C.int64_t(st.players())
}
