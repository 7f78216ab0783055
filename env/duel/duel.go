// Package duel is the second game of the David & Goliath sources: the
// two-player duel of seed 004 (rules text ../shared/rules/004_*.txt, every
// open point settled in design/DUEL.md). Goliath (seat 0) and David (seat 1)
// move figures on an 8x8 board with rocks and trees, play move, attack,
// defence and event cards from one shared 67-card deck, and react to each
// other's moves and attacks; three wounds kill.
//
// The package is an OpenSpiel-style engine like package card: a Game
// (parameters, sizes, observation layout) makes States (legal actions and
// masks, apply, clone, serialize, observation for any seat, returns), all
// chance drawn from the game's seeded RNG so a seed fixes the game given the
// actions. It must do no I/O and the per-step path (apply, mask,
// observation) allocates nothing.
//
// # Notes on this implementation
//
// Where DUEL.md is silent or ambiguous the engine does the least surprising
// thing; docs/duel.md lists the same points:
//
//  1. A played card is discarded before its effect: a Reinforcements drawn
//     from an empty deck reshuffles a discard pile that already holds it.
//  2. The discard phase (7) is mandatory: pass is not legal there, and the
//     decision is shown even when the player holds a single kind.
//  3. A negate decision offers every k = 0..N-1: the whole path was checked
//     free when the move was chosen.
//  4. A sword card needs David adjacent in its own direction class
//     (orthogonal or diagonal), with or without the spear.
//  5. Rounds count from 0 (public "round" = rounds completed); the game is a
//     draw when round max_rounds ends with no death, and a death ends it at
//     once, mid-round. max_rounds is capped at 250 to fit a byte.
//  6. The observation's phase one-hot is the phase of the decision being
//     asked, whoever observes, and all 0 once terminal; the board is flipped
//     in y for Goliath only (DUEL.md), a mirror image, not a rotation.
//  7. Disarm picks each card of the opponent's hand with equal probability;
//     the discarded card is public.
//  8. Rearm for David takes up to 2 stone tokens walking the squares in
//     order x, then y, several from one square if it holds several.
//  9. A slung stone is spent at once; while Goliath decides whether to
//     defend it is in flight (neither held nor on the board).
//  10. Chance is drawn inside ApplyAction from the state's seeded RNG, not
//     exposed as chance nodes. Serialize writes the seed and the actions
//     and DeserializeState replays them (checking each), so a damaged text
//     cannot make an impossible state; a sampled world also records where
//     it was resampled and from which RNG seeds, and replays the same way.
//  11. Skipped decisions are public: both players learn that the seat asked
//     nothing held no card that would have given it a choice. The state
//     tracks this (kinds lacked, cards drawn since) so ResampleFromInfostate
//     deals only hands consistent with it (and, when the opponent is being
//     asked, a hand that gives it a choice). A skipped sling attack says
//     nothing (it needs two cards), an older fact is dropped when a newer
//     skip follows a draw, and what a pass reveals is not tracked.
//  12. The wound supply is unlimited (DUEL.md's own deviation).
//  13. Stepping a finished game with ApplyUnchecked does nothing.
package duel

import (
	"fmt"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/obs"
)

// Action is an action id, 0..NumActions-1 (see the action table in docs/duel.md).
type Action = int

// Seats and sizes.
const (
	Goliath = 0 // seat 0
	David   = 1 // seat 1

	NumPlayers = 2
	BoardSize  = 8
	NumSquares = BoardSize * BoardSize

	NumKinds   = 30 // card kinds 0..29
	DeckSize   = 67 // cards in the deck
	StartHand  = 7  // cards each player draws at setup
	HandLimit  = 7  // hand limit before wounds
	MaxWounds  = 3  // wounds that kill
	NumStones  = 5  // David's stone tokens
	NumRocks   = 2
	NumTrees   = 2
	NumActions = 117

	// TerminalPlayer is CurrentPlayer's answer once the game is over
	// (OpenSpiel's kTerminalPlayerId), as in package env.
	TerminalPlayer = env.TerminalPlayer
)

// Card kinds (DUEL.md's deck table).
const (
	KindMoveOrth1 = iota
	KindMoveOrth2
	KindMoveOrth3
	KindMoveDiag1
	KindMoveDiag2
	KindMoveAny1
	KindMoveAny2
	KindNegate
	KindThrustOrth
	KindThrustDiag
	KindSlashOrth
	KindSlashDiag
	KindChopOrth
	KindChopDiag
	KindThrow2
	KindThrow3
	KindThrow4
	KindSling2
	KindSling3
	KindSling4
	KindSling5
	KindStoneFast
	KindStoneCurved
	KindStoneSinker
	KindBlock
	KindDodge
	KindDuck
	KindReinforcements
	KindDisarm
	KindRearm
)

// Action id ranges (DUEL.md's action table).
const (
	ActPass    = 0
	ActMove    = 1  // 1 + 8*kind + direction, kind 0..6
	ActNegate  = 57 // 57 + k, stop after k squares
	ActSword   = 60 // 60 + (kind - 8)
	ActThrow   = 66 // 66 + (kind - 14)
	ActSling   = 69 // 69 + 3*(sling kind - 17) + (stone kind - 21)
	ActDefend  = 81 // 81 + (kind - 24): block, dodge, duck
	ActEvent   = 84 // 84 + (kind - 27)
	ActDiscard = 87 // 87 + kind
)

// Attack types as the observation's pending-attack slot numbers them.
const (
	AttackThrust = 1 + iota
	AttackSlash
	AttackChop
	AttackThrow
	AttackFast
	AttackCurved
	AttackSinker
)

// Copies of each kind in the deck.
var Copies = [NumKinds]uint8{
	3, 3, 2, 3, 2, 3, 2, // moves
	4,                // negate
	2, 2, 2, 2, 2, 2, // swords
	2, 1, 1, // throws
	2, 2, 2, 2, // slings
	3, 3, 3, // stones
	2, 2, 2, // defences
	2, 2, 2, // events
}

// KindNames are short card names, indexed by kind.
var KindNames = [NumKinds]string{
	"move-orth-1", "move-orth-2", "move-orth-3", "move-diag-1", "move-diag-2", "move-any-1", "move-any-2",
	"negate",
	"thrust-orth", "thrust-diag", "slash-orth", "slash-diag", "chop-orth", "chop-diag",
	"throw-2", "throw-3", "throw-4",
	"sling-2", "sling-3", "sling-4", "sling-5",
	"stone-fast", "stone-curved", "stone-sinker",
	"block", "dodge", "duck",
	"reinforcements", "disarm", "rearm",
}

// DirNames name the eight directions; N is +y (towards David's... rank 8).
var DirNames = [8]string{"N", "NE", "E", "SE", "S", "SW", "W", "NW"}

// AttackNames name the attack types, indexed by type id (0 unused).
var AttackNames = [8]string{"-", "thrust", "slash", "chop", "throw", "fast", "curved", "sinker"}

var (
	dirX = [8]int{0, 1, 1, 1, 0, -1, -1, -1}
	dirY = [8]int{1, 1, 0, -1, -1, -1, 0, 1}
)

// moveLen and moveDirs: squares a move kind goes, and its directions as a bit set.
var (
	moveLen  = [7]int{1, 2, 3, 1, 2, 1, 2}
	moveDirs = [7]uint8{orthDirs, orthDirs, orthDirs, diagDirs, diagDirs, 0xff, 0xff}
)

const (
	orthDirs = 0b01010101 // N, E, S, W
	diagDirs = 0b10101010 // NE, SE, SW, NW
)

// stops[d][t]: defence d (0 block, 1 dodge, 2 duck) stops attack type t.
var stops = [3][8]bool{
	{AttackThrust: true, AttackChop: true, AttackThrow: true, AttackFast: true, AttackSinker: true},
	{AttackThrust: true, AttackSlash: true, AttackThrow: true, AttackFast: true, AttackCurved: true},
	{AttackSlash: true, AttackChop: true, AttackCurved: true, AttackSinker: true},
}

// Stops reports whether defence kind (KindBlock..KindDuck) stops attack type t.
func Stops(kind, attack int) bool {
	if kind < KindBlock || kind > KindDuck || attack < 1 || attack > 7 {
		return false
	}
	return stops[kind-KindBlock][attack]
}

// Square is y*8 + x.
func Square(x, y int) int { return y*BoardSize + x }

// SquareName is "e8" for (4, 7).
func SquareName(sq int) string {
	return string([]byte{byte('a' + sq%BoardSize), byte('1' + sq/BoardSize)})
}

// line geometry between every pair of squares, computed once.
type lineInfo struct {
	dir     int8   // 0..7, -1 when not on a common line
	dist    uint8  // squares along the line (Chebyshev distance)
	between uint64 // squares strictly between
}

var lines [NumSquares][NumSquares]lineInfo

func init() {
	for a := range NumSquares {
		for b := range NumSquares {
			li := lineInfo{dir: -1}
			ax, ay, bx, by := a%8, a/8, b%8, b/8
			dx, dy := bx-ax, by-ay
			if a != b && (dx == 0 || dy == 0 || dx == dy || dx == -dy) {
				n := max(abs(dx), abs(dy))
				sx, sy := sign(dx), sign(dy)
				for d := range 8 {
					if dirX[d] == sx && dirY[d] == sy {
						li.dir = int8(d)
					}
				}
				li.dist = uint8(n)
				for i := 1; i < n; i++ {
					li.between |= 1 << Square(ax+i*sx, ay+i*sy)
				}
			}
			lines[a][b] = li
		}
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func sign(x int) int {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

// Params are the game parameters.
type Params struct {
	MaxRounds int // rounds before a draw, 1..MaxMaxRounds; 0 means 100
}

// MaxMaxRounds bounds max_rounds so the round fits the observation's byte.
const MaxMaxRounds = 250

// DefaultParams is a game of at most 100 rounds.
func DefaultParams() Params { return Params{MaxRounds: 100} }

// ErrParams is wrapped by every parameter error: the game interface's
// (env.ErrParams), one for every game.
var ErrParams = env.ErrParams

// ParamError names the parameter that is wrong: env.ParamError, so the
// server maps every game's parameter errors to the wire the same way.
type ParamError = env.ParamError

// Normalized fills the defaults and validates.
func (p Params) Normalized() (Params, error) {
	if p.MaxRounds == 0 {
		p.MaxRounds = 100
	}
	if p.MaxRounds < 1 || p.MaxRounds > MaxMaxRounds {
		return p, &ParamError{Name: "max_rounds", Value: p.MaxRounds, Reason: fmt.Sprintf("must be 1..%d", MaxMaxRounds)}
	}
	return p, nil
}

// ParseParams reads parameters from a map such as a decoded JSON object;
// missing keys take their defaults, unknown keys and non-integers are errors.
func ParseParams(m map[string]any) (Params, error) {
	p := DefaultParams()
	for k, v := range m {
		switch k {
		case "max_rounds":
			n, ok := env.AsInt(v)
			if !ok {
				return p, &ParamError{Name: k, Value: v, Reason: "must be an integer"}
			}
			if n == 0 {
				return p, &ParamError{Name: k, Value: v, Reason: fmt.Sprintf("must be 1..%d", MaxMaxRounds)}
			}
			p.MaxRounds = n
		default:
			return p, &ParamError{Name: k, Value: v, Reason: "unknown parameter (known: max_rounds)"}
		}
	}
	return p.Normalized()
}

// Observation sizes and the offsets of each section (DUEL.md).
const (
	BoardPlanes = 6                        // own, opponent, rocks, trees, spear, stones
	BoardLen    = BoardPlanes * NumSquares // 384
	OffBoard    = 0                        // 6 planes of 8x8
	OffHand     = OffBoard + BoardLen      // 384: own cards per kind
	OffDiscards = OffHand + NumKinds       // 414: discard pile per kind
	OffPublic   = OffDiscards + NumKinds   // 444: 8 public numbers
	OffPhase    = OffPublic + 8            // 452: 6 one-hot + 3 pending
	ObsSize     = OffPhase + 9             // 461
	publicLen   = OffPhase - OffPublic     // 8
	phaseLen    = ObsSize - OffPhase       // 9
)

// MaxHandCards bounds a hand between actions: the limit 7, one draw and a
// Reinforcements' two.
const MaxHandCards = HandLimit + 3

// Game is a duel configuration. It is immutable and safe to share.
type Game struct {
	params Params
	layout []obs.Section
}

// NewGame validates p and returns the game.
func NewGame(p Params) (*Game, error) {
	p, err := p.Normalized()
	if err != nil {
		return nil, err
	}
	pubMax := max(DeckSize, p.MaxRounds)
	return &Game{params: p, layout: []obs.Section{
		{Name: "board", Offset: OffBoard, Shape: []int{BoardPlanes, BoardSize, BoardSize}, Min: 0, Max: NumStones,
			Doc: "planes: own figure, opponent figure, rocks, trees, spear token on the board, stone tokens on the board (count); y flipped for Goliath"},
		{Name: "hand", Offset: OffHand, Shape: []int{NumKinds}, Min: 0, Max: 4, Doc: "own cards per kind"},
		{Name: "discards", Offset: OffDiscards, Shape: []int{NumKinds}, Min: 0, Max: 4, Doc: "the discard pile per kind"},
		{Name: "public", Offset: OffPublic, Shape: []int{publicLen}, Min: 0, Max: pubMax,
			Doc: "opponent hand size, deck size, own wounds, opponent wounds, spear held by Goliath, stone tokens held by David, rounds completed, role (0 Goliath, 1 David)"},
		{Name: "phase", Offset: OffPhase, Shape: []int{phaseLen}, Min: 0, Max: 7,
			Doc: "one-hot event, move, negate, attack, defend, discard; pending move length (1..3), pending attack type (1..7), attacker distance (1..7)"},
	}}, nil
}

// MustNewGame is NewGame for parameters known to be valid.
func MustNewGame(p Params) *Game {
	g, err := NewGame(p)
	if err != nil {
		panic(err)
	}
	return g
}

// Params returns the game's parameters, defaults filled in.
func (g *Game) Params() Params { return g.params }

// NumDistinctActions is 117.
func (g *Game) NumDistinctActions() int { return NumActions }

// NumPlayers is 2.
func (g *Game) NumPlayers() int { return NumPlayers }

// maxDecisionsPerRound bounds the decisions of one round: 2 events, 2 moves,
// 2 negates, 2 attacks, 2 defences, and per player at most 4 discards (a hand
// within its limit L gains at most 3 cards in a round, and a wound lowers
// the limit by 1).
const maxDecisionsPerRound = 10 + 2*4

// MaxGameLength bounds the number of actions in a game.
func (g *Game) MaxGameLength() int { return g.params.MaxRounds*maxDecisionsPerRound + StartHand }

// MinUtility is -1 (a loss).
func (g *Game) MinUtility() float64 { return -1 }

// MaxUtility is +1 (a win).
func (g *Game) MaxUtility() float64 { return 1 }

// UtilitySum is 0: the game is zero-sum.
func (g *Game) UtilitySum() float64 { return 0 }

// ObservationTensorShape is [461].
func (g *Game) ObservationTensorShape() []int { return []int{ObsSize} }

// ObservationSize is 461.
func (g *Game) ObservationSize() int { return ObsSize }

// ObservationLayout lists the observation's sections (a fresh copy).
func (g *Game) ObservationLayout() []obs.Section {
	out := make([]obs.Section, len(g.layout))
	for i, s := range g.layout {
		s.Shape = append([]int(nil), s.Shape...)
		out[i] = s
	}
	return out
}

// NewInitialState sets up a game from seed: obstacles, shuffle, hands, and
// the first round up to the first decision.
func (g *Game) NewInitialState(seed uint64) *State {
	s := &State{game: g, hist: make([]uint8, 0, g.MaxGameLength())}
	s.Reset(seed)
	return s
}
