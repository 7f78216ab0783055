package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/server/wire"
)

// The single-state calls (dg_state_*): one game in progress with explicit
// chance nodes (env.ChanceState), for the pyspiel bridge. They serve every
// game of the registry that implements env.ChanceGame, chosen by a game
// spec as dg_vec_new's "game" is; the states are the games' own, and this
// file only checks buffers and locks handles.

// stateHandle is a state behind a handle: calls on it are serialised by mu.
// legal and outcomes are its scratch lists.
type stateHandle struct {
	mu       sync.Mutex
	g        env.ChanceGame
	s        env.ChanceState
	legal    []int
	outcomes []env.ChanceOutcome
}

func newStateHandle(g env.ChanceGame, s env.ChanceState) int64 {
	return newHandle(&stateHandle{g: g, s: s})
}

// chanceGameOf makes the game a spec names ({"name": ..., <params>}, the
// default game when there is no name), or says why not: not JSON, an
// unknown game or parameter, or a game without explicit chance states.
func chanceGameOf(spec []byte) (env.ChanceGame, *env.Error) {
	var gs wire.GameSpec
	if err := json.Unmarshal(spec, &gs); err != nil {
		return nil, env.FieldError("game", "game: %v", err)
	}
	name, given, e := splitGameSpec(gs)
	if e != nil {
		return nil, e
	}
	g, e := env.NewGameOf(registry(), name, given)
	if e != nil {
		return nil, e
	}
	cg, ok := g.(env.ChanceGame)
	if !ok {
		return nil, env.FieldError("game.name", "game.name: %s has no states with explicit chance nodes (env.ChanceGame), so no single-state or OpenSpiel interface", g.Type().Name)
	}
	return cg, nil
}

// statusLen is the length of a game's status array (int32): current
// player, terminal (0 or 1), the number n of legal actions (chance
// outcomes at a chance node), ChanceRun, then the n legal actions.
func statusLen(g env.ChanceGame) int {
	return statusHead + max(g.NumDistinctActions(), g.ChanceInfo().MaxChanceOutcomes)
}

// statusHead is the fields of a status before the legal actions.
const statusHead = 4

// statusView is the caller's status buffer (int32 [statusLen(g)]), or why not.
func statusView(g env.ChanceGame, p unsafe.Pointer, nbytes int64) ([]int32, *env.Error) {
	s, e := view[int32]("status", p, nbytes)
	if want := statusLen(g); e == nil && len(s) < want {
		e = env.FieldError("status", "status: %d elements, want %d (int32: player, terminal, count, chance run, legal actions)", len(s), want)
	}
	return s, e
}

// writeStatus writes the status into s (len >= statusLen).
func (h *stateHandle) writeStatus(s []int32) {
	st := h.s
	s[0] = int32(st.CurrentPlayer())
	s[1] = 0
	if st.IsTerminal() {
		s[1] = 1
	}
	h.legal = st.AppendLegalActions(h.legal[:0])
	s[2] = int32(len(h.legal))
	s[3] = int32(st.ChanceRun())
	for i, a := range h.legal {
		s[statusHead+i] = int32(a)
	}
}

// gameInfo is dg_state_sizes' answer: what a pyspiel game needs of g.
type gameInfo struct {
	Game                       wire.GameSpec  `json:"game"` // every parameter, defaults filled
	Doc                        string         `json:"doc"`
	Players                    []int          `json:"players"` // the seat counts of the type
	Params                     map[string]int `json:"params"`  // the type's parameters and their defaults
	NumPlayers                 int            `json:"num_players"`
	NumDistinctActions         int            `json:"num_distinct_actions"`
	MaxChanceOutcomes          int            `json:"max_chance_outcomes"`
	MaxChanceNodes             int            `json:"max_chance_nodes"`
	MaxGameLength              int            `json:"max_game_length"`
	MinUtility                 float64        `json:"min_utility"`
	MaxUtility                 float64        `json:"max_utility"`
	ObservationTensorSize      int            `json:"observation_tensor_size"`
	InformationStateTensorSize int            `json:"information_state_tensor_size"`
	StatusLen                  int            `json:"status_len"`
}

func gameInfoOf(g env.ChanceGame) gameInfo {
	t, ci := g.Type(), g.ChanceInfo()
	params := make(map[string]int, len(t.Params))
	for _, p := range t.Params {
		params[p.Name] = p.Default
	}
	return gameInfo{Game: wire.GameOf(g), Doc: t.Doc, Players: t.Players, Params: params,
		NumPlayers: g.NumPlayers(), NumDistinctActions: g.NumDistinctActions(),
		MaxChanceOutcomes: ci.MaxChanceOutcomes, MaxChanceNodes: ci.MaxChanceNodes, MaxGameLength: g.MaxGameLength(),
		MinUtility: g.MinUtility(), MaxUtility: g.MaxUtility(),
		ObservationTensorSize: ci.ObservationTensorSize, InformationStateTensorSize: ci.InformationStateTensorSize,
		StatusLen: statusLen(g)}
}

// Tensor kinds of dg_state_tensor, and string kinds of dg_state_string.
const (
	kindObservation = 0
	kindInfoState   = 1
	kindState       = 2 // strings only: the whole state
)

// tensorSize is the size of a tensor kind of g (-1 for an unknown kind).
func tensorSize(g env.ChanceGame, kind int) int {
	switch kind {
	case kindObservation:
		return g.ChanceInfo().ObservationTensorSize
	case kindInfoState:
		return g.ChanceInfo().InformationStateTensorSize
	}
	return -1
}

// tensor writes player's tensor of kind into out (as long as the game's
// size) and returns its size; -1 for an unknown player or kind, or an out
// too short.
func (h *stateHandle) tensor(player, kind int, out []float32) int {
	n := tensorSize(h.g, kind)
	if n < 0 || player < 0 || player >= h.g.NumPlayers() || len(out) < n {
		return -1
	}
	if kind == kindObservation {
		h.s.ObservationTensor(player, out[:n])
	} else {
		h.s.InformationStateTensor(player, out[:n])
	}
	return n
}

// str is a string of kind for player (any player for kindState), and
// false for an unknown player or kind.
func (h *stateHandle) str(player, kind int) (string, bool) {
	if kind != kindState && (player < 0 || player >= h.g.NumPlayers()) {
		return "", false
	}
	switch kind {
	case kindObservation:
		return h.s.ObservationString(player), true
	case kindInfoState:
		return h.s.InformationStateString(player), true
	case kindState:
		return h.s.String(), true
	}
	return "", false
}

// history writes the (player, action) pairs of every action so far into
// out when they fit (len >= 2 per action), and returns their number.
func (h *stateHandle) history(out []int32) int {
	hist := h.s.AppendHistory(nil)
	if 2*len(hist) <= len(out) {
		for i, pa := range hist {
			out[2*i], out[2*i+1] = int32(pa.Player), int32(pa.Action)
		}
	}
	return len(hist)
}

// chanceProbs writes the probabilities of the chance outcomes, in the
// status's order, into out when they fit, and returns their number (0 at
// a node that is not chance).
func (h *stateHandle) chanceProbs(out []float64) int {
	h.outcomes = h.s.AppendChanceOutcomes(h.outcomes[:0])
	if len(h.outcomes) <= len(out) {
		for i, o := range h.outcomes {
			out[i] = o.Prob
		}
	}
	return len(h.outcomes)
}

// apply applies action a, or says why not.
func (h *stateHandle) apply(a int) *env.Error {
	if err := h.s.ApplyAction(a); err != nil {
		return illegalAction(err)
	}
	return nil
}

// illegalAction is the illegal_action error of a refused action, with
// who, what and what was legal as details when the game says.
func illegalAction(err error) *env.Error {
	e := &env.Error{Code: env.CodeIllegalAction, Message: err.Error()}
	var ia *env.IllegalActionError
	if errors.As(err, &ia) {
		legal := ia.Legal
		if legal == nil {
			legal = []int{}
		}
		e.Details = map[string]any{"player": ia.Player, "action": ia.Action, "legal": legal}
	}
	return e
}

// lockState looks up a state handle and locks it: nil when unknown.
func lockState(h int64) (*stateHandle, func()) {
	st, err := lookup[*stateHandle](h)
	if err != nil {
		return nil, nil
	}
	st.mu.Lock()
	return st, st.mu.Unlock
}

func stateNotFound(h int64) *env.Error {
	return &env.Error{Code: env.CodeNotFound, Message: fmt.Sprintf("state handle %d: unknown", h)}
}
