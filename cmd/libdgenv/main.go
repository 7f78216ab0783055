// Command libdgenv is the engine as a C shared library, so Python (dgenv's
// in-process transport and its pyspiel game) runs it without a server:
//
//	go build -buildmode=c-shared -o bin/libdgenv.so ./cmd/libdgenv
//
// The ABI is flat and small: objects (batches, single game states) stay in
// Go and C holds integer handles; inputs and outputs are pointers to
// caller-owned memory that Go reads or fills during the call and never
// keeps. Every buffer is passed with its length in bytes, and Go checks the
// length against what it will read or write: a buffer of the wrong size is
// an error, never read or written past its end (no size computed by the
// caller is trusted, and no string is read up to a NUL). Every call that can
// fail returns a negative number and, where it has one, writes a JSON error
// {"code", "message", "details"} (the server's codes) into the caller's
// error buffer.
//
// Threads: every call may come from any thread. Calls on one handle are
// serialised (one at a time, in Go), calls on different handles run in
// parallel, and freeing a handle is safe against calls on it in flight: a
// call that finds it freed answers not_found.
//
// Memory: a batch is refused at creation when its worst case (env.CostOf,
// the server's estimate) and every live batch's together would pass the
// memory budget its config names (memory_budget, default that of the
// server: 2 GiB).
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
	"unsafe"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/server/wire"
)

func main() {}

// abiVersion changes whenever an exported signature or a JSON layout does.
const abiVersion = 4

// bytesAt views n bytes of caller memory (nil when p is nil or n is 0).
func bytesAt(p unsafe.Pointer, n int64) []byte {
	if p == nil || n <= 0 {
		return nil
	}
	return unsafe.Slice((*byte)(p), n)
}

// putBytes copies b into the caller's buffer when it fits and returns its
// length (the caller retries with a larger buffer when it did not fit).
func putBytes(buf *C.char, capacity C.int64_t, b []byte) C.int64_t {
	if dst := bytesAt(unsafe.Pointer(buf), int64(capacity)); len(b) <= len(dst) {
		copy(dst, b)
	}
	return C.int64_t(len(b))
}

// fail writes e into the error buffer (cut to fit) and returns -1.
func fail(errbuf *C.char, errcap C.int64_t, e *env.Error) C.int64_t {
	b, _ := json.Marshal(wire.ErrorOf(e))
	dst := bytesAt(unsafe.Pointer(errbuf), int64(errcap))
	if len(b) > len(dst) {
		short, _ := json.Marshal(wire.Error{Code: string(e.Code), Message: e.Message[:min(len(e.Message), max(0, len(dst)-64))]})
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

// result is 0, or fail's -1 for e.
func result(e *env.Error, errbuf *C.char, errcap C.int64_t) C.int64_t {
	if e != nil {
		return fail(errbuf, errcap, e)
	}
	return 0
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
	reg := registry()
	t, _ := reg.Lookup("") // the default game (the first registered); dg_games lists every game's bots
	b, _ := json.Marshal(reg.Bots(t.Name))
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
func dg_load_policies(dir *C.char, dirLen C.int64_t, errbuf *C.char, errcap C.int64_t) C.int64_t {
	d, e := text("policies", unsafe.Pointer(dir), int64(dirLen))
	if e == nil {
		e = loadPolicies(d)
	}
	return result(e, errbuf, errcap)
}

//export dg_policies
func dg_policies(buf *C.char, capacity C.int64_t) C.int64_t {
	return putBytes(buf, capacity, policyList())
}

// dg_policy_shape writes the observation size and the action count (int64
// [2]) of the policy loaded as name; -1 when none is (or out is too short).
// What it says may change when policies are reloaded: dg_policy_act checks
// every length against the policy it acts with.
//
//export dg_policy_shape
func dg_policy_shape(name *C.char, nameLen C.int64_t, out unsafe.Pointer, outLen C.int64_t) C.int64_t {
	n, e := text("policy", unsafe.Pointer(name), int64(nameLen))
	if e != nil {
		return -1
	}
	s, e := view[int64]("out", out, int64(outLen))
	p := policyNamed(n)
	if e != nil || len(s) < 2 || p == nil {
		return -1
	}
	s[0], s[1] = int64(p.Meta().ObsSize), int64(p.NumActions())
	return 0
}

// dg_policy_act is POST /v1/policies/{name}/act in process: obs uint8
// [n, D], mask uint8 [n, A] (D and A the policy's), actions int32 [n]
// written, and logits float32 [n, A] when not null.
//
//export dg_policy_act
func dg_policy_act(name *C.char, nameLen C.int64_t, obsU8 unsafe.Pointer, obsLen C.int64_t,
	mask unsafe.Pointer, maskLen C.int64_t, n C.int64_t, greedy C.int32_t, temperature C.double, seed C.uint64_t,
	actions unsafe.Pointer, actionsLen C.int64_t, logits unsafe.Pointer, logitsLen C.int64_t,
	errbuf *C.char, errcap C.int64_t) C.int64_t {
	pn, e := text("policy", unsafe.Pointer(name), int64(nameLen))
	if e != nil {
		return fail(errbuf, errcap, e)
	}
	o, e1 := view[uint8]("obs", obsU8, int64(obsLen))
	m, e2 := view[uint8]("mask", mask, int64(maskLen))
	a, e3 := view[int32]("actions", actions, int64(actionsLen))
	var lg []float32
	var e4 *env.Error
	if logits != nil {
		lg, e4 = view[float32]("logits", logits, int64(logitsLen))
	}
	if e := firstError(e1, e2, e3, e4); e != nil {
		return fail(errbuf, errcap, e)
	}
	return result(policyAct(pn, o, m, int(n), greedy != 0, float64(temperature), uint64(seed), a, lg, logits != nil), errbuf, errcap)
}

//export dg_vec_new
func dg_vec_new(cfg *C.char, cfgLen C.int64_t, errbuf *C.char, errcap C.int64_t) C.int64_t {
	body, e := view[byte]("config", unsafe.Pointer(cfg), int64(cfgLen))
	if e != nil {
		return fail(errbuf, errcap, e)
	}
	v, e := newVecEnv(body) // json.Unmarshal keeps nothing of body
	if e != nil {
		return fail(errbuf, errcap, e)
	}
	return C.int64_t(newHandle(v))
}

//export dg_vec_info
func dg_vec_info(h C.int64_t, buf *C.char, capacity C.int64_t, errbuf *C.char, errcap C.int64_t) C.int64_t {
	e, err := lookup[*vecEnv](int64(h))
	if err != nil {
		return fail(errbuf, errcap, err)
	}
	return putBytes(buf, capacity, e.info())
}

// dg_vec_reset resets every env and writes the answer into arena (the
// arena's bytes of dg_vec_info).
//
//export dg_vec_reset
func dg_vec_reset(h C.int64_t, seed C.uint64_t, hasSeed C.int32_t, arena unsafe.Pointer, arenaLen C.int64_t,
	errbuf *C.char, errcap C.int64_t) C.int64_t {
	return result(vecReset(int64(h), uint64(seed), hasSeed != 0, arena, int64(arenaLen)), errbuf, errcap)
}

// dg_vec_step plays actions (int32 [N]) and writes the answer into arena.
//
//export dg_vec_step
func dg_vec_step(h C.int64_t, actions unsafe.Pointer, actionsLen C.int64_t, arena unsafe.Pointer, arenaLen C.int64_t,
	errbuf *C.char, errcap C.int64_t) C.int64_t {
	return result(vecStep(int64(h), actions, int64(actionsLen), arena, int64(arenaLen)), errbuf, errcap)
}

// dg_vec_random_actions writes a uniformly random legal action for every
// env's current state into actions (int32 [N]); the draws are seeded from
// the batch's seed and re-seeded by a seeded reset.
//
//export dg_vec_random_actions
func dg_vec_random_actions(h C.int64_t, actions unsafe.Pointer, actionsLen C.int64_t, errbuf *C.char, errcap C.int64_t) C.int64_t {
	return result(vecRandomActions(int64(h), actions, int64(actionsLen)), errbuf, errcap)
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

// The single-state calls: see spiel.go. A game is chosen by a game spec,
// JSON {"name": ..., <params>} as dg_vec_new's "game" (spec, specLen bytes).

// dg_state_new makes the first node of a game of the spec: a handle, or -1
// and the error (bad_request naming the field: a bad spec, or a game
// without explicit chance states).
//
//export dg_state_new
func dg_state_new(spec *C.char, specLen C.int64_t, errbuf *C.char, errcap C.int64_t) C.int64_t {
	g, e := stateGame(spec, specLen)
	if e != nil {
		return fail(errbuf, errcap, e)
	}
	return C.int64_t(newStateHandle(g, g.NewChanceState()))
}

// stateGame is the chance game of the caller's spec.
func stateGame(spec *C.char, specLen C.int64_t) (env.ChanceGame, *env.Error) {
	body, e := view[byte]("game", unsafe.Pointer(spec), int64(specLen))
	if e != nil {
		return nil, e
	}
	return chanceGameOf(body) // json.Unmarshal keeps nothing of body
}

// dg_state_sizes writes, as JSON, what a pyspiel game needs of the game of
// the spec (spiel.go's gameInfo: the game with its parameters filled, the
// type's seat counts and parameter defaults, sizes, utilities, tensor
// sizes, the status length) and returns its length; -1 and the error for
// a bad spec.
//
//export dg_state_sizes
func dg_state_sizes(spec *C.char, specLen C.int64_t, buf *C.char, capacity C.int64_t, errbuf *C.char, errcap C.int64_t) C.int64_t {
	g, e := stateGame(spec, specLen)
	if e != nil {
		return fail(errbuf, errcap, e)
	}
	b, err := json.Marshal(gameInfoOf(g))
	if err != nil {
		return fail(errbuf, errcap, &env.Error{Code: env.CodeInternal, Message: err.Error()})
	}
	return putBytes(buf, capacity, b)
}

//export dg_state_clone
func dg_state_clone(h C.int64_t) C.int64_t {
	st, unlock := lockState(int64(h))
	if st == nil {
		return -1
	}
	c := st.s.Clone()
	unlock()
	return C.int64_t(newStateHandle(st.g, c))
}

// dg_state_apply applies action and writes the status (int32
// [status_len]) into status.
//
//export dg_state_apply
func dg_state_apply(h C.int64_t, action C.int64_t, status unsafe.Pointer, statusBytes C.int64_t, errbuf *C.char, errcap C.int64_t) C.int64_t {
	st, unlock := lockState(int64(h))
	if st == nil {
		return fail(errbuf, errcap, stateNotFound(int64(h)))
	}
	defer unlock()
	out, e := statusView(st.g, status, int64(statusBytes))
	if e != nil {
		return fail(errbuf, errcap, e)
	}
	if e := st.apply(int(action)); e != nil {
		return fail(errbuf, errcap, e)
	}
	st.writeStatus(out)
	return 0
}

//export dg_state_status
func dg_state_status(h C.int64_t, status unsafe.Pointer, statusBytes C.int64_t) C.int64_t {
	st, unlock := lockState(int64(h))
	if st == nil {
		return -1
	}
	defer unlock()
	out, e := statusView(st.g, status, int64(statusBytes))
	if e != nil {
		return -1
	}
	st.writeStatus(out)
	return 0
}

// dg_state_tensor writes a tensor of player (float32, its size returned)
// into dst; -1 when dst is too short, or player or kind unknown.
//
//export dg_state_tensor
func dg_state_tensor(h, player, kind C.int64_t, dst unsafe.Pointer, dstLen C.int64_t) C.int64_t {
	out, e := view[float32]("dst", dst, int64(dstLen))
	if e != nil {
		return -1
	}
	st, unlock := lockState(int64(h))
	if st == nil {
		return -1
	}
	defer unlock()
	return C.int64_t(st.tensor(int(player), int(kind), out))
}

// dg_state_string writes a string of player (kind 0 observation, 1
// information state, 2 the whole state for any player) into buf when it
// fits and returns its length; -1 for an unknown handle, player or kind.
//
//export dg_state_string
func dg_state_string(h, player, kind C.int64_t, buf *C.char, capacity C.int64_t) C.int64_t {
	st, unlock := lockState(int64(h))
	if st == nil {
		return -1
	}
	defer unlock()
	s, ok := st.str(int(player), int(kind))
	if !ok {
		return -1
	}
	return putBytes(buf, capacity, []byte(s))
}

// dg_state_action_string writes the name of action of player (-1: a chance
// outcome) into buf when it fits and returns its length.
//
//export dg_state_action_string
func dg_state_action_string(h, player, action C.int64_t, buf *C.char, capacity C.int64_t) C.int64_t {
	st, unlock := lockState(int64(h))
	if st == nil {
		return -1
	}
	defer unlock()
	return putBytes(buf, capacity, []byte(st.s.ActionString(int(player), int(action))))
}

// dg_state_chance_outcomes writes the probabilities (float64 [n]) of the
// chance outcomes, in the order of the status's legal actions, when they
// fit, and returns their number n (0 at a node that is not chance).
//
//export dg_state_chance_outcomes
func dg_state_chance_outcomes(h C.int64_t, probs unsafe.Pointer, probsLen C.int64_t) C.int64_t {
	out, e := view[float64]("probs", probs, int64(probsLen))
	if e != nil {
		return -1
	}
	st, unlock := lockState(int64(h))
	if st == nil {
		return -1
	}
	defer unlock()
	return C.int64_t(st.chanceProbs(out))
}

// dg_state_returns writes each player's returns (which 0) or last rewards
// (float64 [players]) and returns the number of players.
//
//export dg_state_returns
func dg_state_returns(h, which C.int64_t, dst unsafe.Pointer, dstLen C.int64_t) C.int64_t {
	out, e := view[float64]("dst", dst, int64(dstLen))
	if e != nil {
		return -1
	}
	st, unlock := lockState(int64(h))
	if st == nil {
		return -1
	}
	defer unlock()
	p := st.g.NumPlayers()
	if len(out) < p {
		return -1
	}
	if which == 0 {
		st.s.WriteReturns(out[:p])
	} else {
		st.s.WriteRewards(out[:p])
	}
	return C.int64_t(p)
}

//export dg_state_serialize
func dg_state_serialize(h C.int64_t, buf *C.char, capacity C.int64_t) C.int64_t {
	st, unlock := lockState(int64(h))
	if st == nil {
		return -1
	}
	defer unlock()
	return putBytes(buf, capacity, []byte(st.s.Serialize()))
}

// dg_state_deserialize reads a state's text (txt, n bytes) for the game of
// the spec: a handle, or -1 and the error.
//
//export dg_state_deserialize
func dg_state_deserialize(spec *C.char, specLen C.int64_t, txt *C.char, n C.int64_t, errbuf *C.char, errcap C.int64_t) C.int64_t {
	g, e := stateGame(spec, specLen)
	if e != nil {
		return fail(errbuf, errcap, e)
	}
	s, e := text("state", unsafe.Pointer(txt), int64(n))
	if e != nil {
		return fail(errbuf, errcap, e)
	}
	st, err := g.DeserializeChanceState(s)
	if err != nil {
		return fail(errbuf, errcap, env.FieldError("state", "%v", err))
	}
	return C.int64_t(newStateHandle(g, st))
}

//export dg_state_resample
func dg_state_resample(h, player C.int64_t, seed C.uint64_t, errbuf *C.char, errcap C.int64_t) C.int64_t {
	st, unlock := lockState(int64(h))
	if st == nil {
		return fail(errbuf, errcap, stateNotFound(int64(h)))
	}
	if p := st.g.NumPlayers(); player < 0 || int(player) >= p {
		unlock()
		return fail(errbuf, errcap, env.FieldError("player", "player %d: must be 0..%d", player, p-1))
	}
	r, err := st.s.ResampleFromInfostate(int(player), uint64(seed))
	unlock()
	if err != nil {
		return fail(errbuf, errcap, &env.Error{Code: env.CodeInternal, Message: err.Error()})
	}
	return C.int64_t(newStateHandle(st.g, r))
}

// dg_state_history writes (player, action) pairs (int32 [2, n]) of every
// action so far into out when they fit, and returns their number n.
//
//export dg_state_history
func dg_state_history(h C.int64_t, out unsafe.Pointer, outLen C.int64_t) C.int64_t {
	s, e := view[int32]("out", out, int64(outLen))
	if e != nil {
		return -1
	}
	st, unlock := lockState(int64(h))
	if st == nil {
		return -1
	}
	defer unlock()
	return C.int64_t(st.history(s))
}

// dg_state_apply_many applies the actions (int32 [n]) in order (a run of
// chance outcomes, a deal, in one call); on an error the actions before it
// stay applied.
//
//export dg_state_apply_many
func dg_state_apply_many(h C.int64_t, actions unsafe.Pointer, actionsLen C.int64_t, status unsafe.Pointer, statusBytes C.int64_t,
	errbuf *C.char, errcap C.int64_t) C.int64_t {
	acts, e := view[int32]("actions", actions, int64(actionsLen))
	if e != nil {
		return fail(errbuf, errcap, e)
	}
	st, unlock := lockState(int64(h))
	if st == nil {
		return fail(errbuf, errcap, stateNotFound(int64(h)))
	}
	defer unlock()
	out, e := statusView(st.g, status, int64(statusBytes))
	if e != nil {
		return fail(errbuf, errcap, e)
	}
	for _, a := range acts {
		if e := st.apply(int(a)); e != nil {
			return fail(errbuf, errcap, e)
		}
	}
	st.writeStatus(out)
	return 0
}

// dg_state_rollout plays n random games to the end from the state
// (env.RandomRollout) and writes each player's mean return (float64
// [players]) into out: an MCTS evaluator's rollouts in one call.
//
//export dg_state_rollout
func dg_state_rollout(h, n C.int64_t, seed C.uint64_t, out unsafe.Pointer, outLen C.int64_t) C.int64_t {
	sum, e := view[float64]("out", out, int64(outLen))
	if e != nil || n < 1 {
		return -1
	}
	st, unlock := lockState(int64(h))
	if st == nil {
		return -1
	}
	defer unlock()
	p := st.g.NumPlayers()
	if len(sum) < p {
		return -1
	}
	sum = sum[:p]
	clear(sum)
	if env.RandomRollout(st.s, int(n), uint64(seed), sum) != nil {
		return -1
	}
	for i := range sum {
		sum[i] /= float64(n)
	}
	return C.int64_t(p)
}
