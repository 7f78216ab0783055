// Package env is the game-neutral core every game of this module plugs
// into: the game interface every engine implements, and the registry that
// finds a game by name (OpenSpiel's Game and State in spirit, in Go
// idioms), the batch engine, match play and statistics, and a session's
// cost. It imports no game: each game is a package of its own (env/card,
// env/duel, env/testgame).
//
// A Type is a kind of game: its name, its integer parameters (name, default,
// range, meaning) and a constructor. Type.New validates parameters and
// returns a Game, or a *ParamError naming the parameter. A Game is one
// configuration (immutable, safe to share): sizes, utilities, the published
// observation layout, and NewInitialState. A State is one game in progress:
// the seat to act, legal actions and mask, ApplyAction (checked) and
// ApplyUnchecked (the fast path), Clone, Serialize, Returns, and the
// observation of any seat.
//
// The vectorised env (Vec, built by NewVec) steps N States at once with
// opponents played by Bots: one engine for every game, with its workers,
// skip, auto-reset, observation targets, rewards and records. A game adds
// speed or exactness through narrow optional interfaces the engine calls
// per env (vec_optional.go: the card game's bit-set encoder, its float32
// deal rewards, its one random stream and ring of records per env).
//
// Registries are values: a server, a benchmark or a test builds the Registry
// it serves. Nothing here is process-global. The package is pure: no I/O.
package env

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/davidgoliath/dgenv/obs"
)

// TerminalPlayer is CurrentPlayer's answer once the game is over
// (OpenSpiel's kTerminalPlayerId) in the card game and the duel.
const TerminalPlayer = -4

// Param describes one integer parameter of a game type.
type Param struct {
	Name     string
	Default  int
	Min, Max int // inclusive; a game may narrow the range further (say, below players)
	Doc      string
}

// ErrParams is wrapped by every parameter error.
var ErrParams = errors.New("invalid game parameter")

// ParamError names the parameter that is wrong ("name" for an unknown game).
type ParamError struct {
	Name   string
	Value  any
	Reason string
}

func (e *ParamError) Error() string {
	return fmt.Sprintf("game parameter %q = %v: %s", e.Name, e.Value, e.Reason)
}

// Unwrap makes errors.Is(err, ErrParams) true.
func (e *ParamError) Unwrap() error { return ErrParams }

// Values are a game's parameters by name, every one present once filled.
type Values map[string]int

// Type is a registered kind of game.
type Type struct {
	Name    string
	Doc     string
	Players []int   // allowed seat counts, ascending
	Params  []Param // in the order they are listed
	// ZeroSum says the game's returns sum to zero in every game (OpenSpiel's
	// kZeroSum utility): its "zero_sum" reward is then the returns' change
	// itself, as its "points" reward is (see ZeroSumReward).
	ZeroSum bool
	// Make builds the game from a full set of values (each within its
	// Param's range); it returns a *ParamError for a combination it refuses.
	Make func(v Values) (Game, error)
}

// Fill checks given values against the type's parameters and fills in the
// defaults. given may come from a decoded JSON or msgpack object: every
// value must be an integer (a float with no fraction is one).
func (t *Type) Fill(given map[string]any) (Values, error) {
	v := make(Values, len(t.Params))
	keys := make([]string, 0, len(given))
	for k := range given {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		i := slices.IndexFunc(t.Params, func(p Param) bool { return p.Name == k })
		if i < 0 {
			return nil, &ParamError{k, given[k], fmt.Sprintf("unknown parameter of %s (known: %s)", t.Name, strings.Join(t.ParamNames(), ", "))}
		}
		n, ok := AsInt(given[k])
		if !ok {
			return nil, &ParamError{k, given[k], "must be an integer"}
		}
		p := t.Params[i]
		if n < p.Min || n > p.Max {
			return nil, &ParamError{k, n, fmt.Sprintf("must be %d..%d", p.Min, p.Max)}
		}
		v[k] = n
	}
	for _, p := range t.Params {
		if _, ok := v[p.Name]; !ok {
			v[p.Name] = p.Default
		}
	}
	return v, nil
}

// ParamNames lists the parameters' names in order.
func (t *Type) ParamNames() []string {
	names := make([]string, len(t.Params))
	for i, p := range t.Params {
		names[i] = p.Name
	}
	return names
}

// New validates given and makes the game.
func (t *Type) New(given map[string]any) (Game, error) {
	v, err := t.Fill(given)
	if err != nil {
		return nil, err
	}
	return t.Make(v)
}

// Default makes the game of the default parameters.
func (t *Type) Default() (Game, error) { return t.New(nil) }

// Game is one configuration of a game: immutable, safe to share.
type Game interface {
	// Type is the registered type this game is of.
	Type() *Type
	// Values are the parameters, defaults filled (as NewGame normalised them).
	Values() Values
	NumDistinctActions() int
	NumPlayers() int
	// MaxGameLength bounds the number of actions in a game.
	MaxGameLength() int
	MinUtility() float64
	MaxUtility() float64
	// Observation is the published tensor layout: size, and the named
	// sections (offset, shape, value range) covering it in order.
	Observation() Layout
	NewInitialState(seed uint64) State
	// DeserializeState reads what State.Serialize wrote.
	DeserializeState(text string) (State, error)
}

// Layout is an observation tensor's layout: Size uint8 elements in named
// sections, in order, each with its value range.
type Layout struct {
	Size     int
	Sections []obs.Section
}

// Packing is how the layout travels bit-packed (sections with Max 1 as
// bits, the others as bytes).
func (l Layout) Packing() obs.Packing { return obs.PackingOf(l.Size, l.Sections) }

// State is one game in progress. It is not safe for concurrent use.
type State interface {
	Game() Game
	// CurrentPlayer is the seat to act, or -1 once terminal.
	CurrentPlayer() int
	IsTerminal() bool
	IsLegal(a int) bool
	// AppendLegalActions appends the legal actions, ascending.
	AppendLegalActions(dst []int) []int
	// WriteMask writes 1 for each legal action and 0 elsewhere into
	// dst[:NumDistinctActions].
	WriteMask(dst []uint8)
	// ApplyAction plays a for the seat to act, or returns an error (and
	// changes nothing) if a is not legal.
	ApplyAction(a int) error
	// ApplyUnchecked plays a legal action without checking it.
	ApplyUnchecked(a int)
	// WriteReturns writes each seat's return so far into dst[:NumPlayers]
	// (final once terminal). A step's rewards are the change of returns.
	WriteReturns(dst []float64)
	// WriteObservation writes the observation of seat player into
	// dst[:Observation().Size] (any seat, whoever is to act).
	WriteObservation(dst []uint8, player int)
	Clone() State
	// Serialize writes the state as text DeserializeState reads back.
	Serialize() string
	// History lists the actions played since NewInitialState.
	History() []int
	ActionString(player, a int) string
	String() string
}

// Returns is WriteReturns into a new slice.
func Returns(s State) []float64 {
	r := make([]float64, s.Game().NumPlayers())
	s.WriteReturns(r)
	return r
}

// LegalActions is AppendLegalActions into a new slice.
func LegalActions(s State) []int { return s.AppendLegalActions(nil) }

// Seeded is a State whose chance is drawn from the seed given to
// NewInitialState: that seed and History replay the game.
type Seeded interface {
	// Seed is the seed, and false when this state cannot be replayed from
	// one (one deserialized, or resampled from an infostate).
	Seed() (uint64, bool)
}

// Record is a game's record, the same for every game: the game, the
// actions in play order and the returns (final when Terminal). Seed is set
// (HasSeed) for games whose chance comes from NewInitialState's seed; then
// Replay re-plays the record and checks it. Extra holds a game's own form
// (the card game's deals), for the wire to show.
type Record struct {
	Game     string
	Values   Values
	Actions  []int
	Returns  []float64
	Terminal bool
	HasSeed  bool
	Seed     uint64
	Extra    any
}

// RecordOf records a state of a Seeded game (or, with no seed, only its
// actions and returns).
func RecordOf(s State) *Record {
	g := s.Game()
	r := &Record{Game: g.Type().Name, Values: g.Values(), Actions: s.History(), Returns: Returns(s), Terminal: s.IsTerminal()}
	if sd, ok := s.(Seeded); ok {
		r.Seed, r.HasSeed = sd.Seed()
	}
	return r
}

// FieldStarter is implemented by games whose records replay without a
// seed, from the fields of their own record form (RecordFielder): the card
// game, whose batch envs draw their games from a stream of their own, so
// that its records carry each deal's hands instead of a seed.
type FieldStarter interface {
	// StartFromFields returns the state a record's actions start from, its
	// chance fixed by fields: the game's record fields as a front end
	// decoded them from JSON or msgpack (RecordFielder's names; numbers of
	// any integer type or integral floats, arrays as []any or typed
	// slices, objects as map[string]any).
	StartFromFields(fields map[string]any) (State, error)
}

// Replay plays r's actions in the game reg makes of r's type and values,
// checking every action and the returns. The game starts from
// NewInitialState(r.Seed) when r has a seed, else, for a FieldStarter
// game, from r.Extra given as the decoded fields (map[string]any).
func (r *Record) Replay(reg *Registry) (State, error) {
	return r.replay(reg, nil, true)
}

// replay is Replay calling visit (unless nil) before each action, with the
// state that action is played in. Unless checkEnd, r.Terminal is not
// checked but set from the replay (a record that does not say whether its
// game ended: DescribeOpenEnded).
func (r *Record) replay(reg *Registry, visit func(i int, s State) error, checkEnd bool) (State, error) {
	fields, _ := r.Extra.(map[string]any)
	if !r.HasSeed && fields == nil {
		return nil, errors.New("record: no seed to replay from")
	}
	t, err := reg.Lookup(r.Game)
	if err != nil {
		return nil, err
	}
	given := make(map[string]any, len(r.Values))
	for k, v := range r.Values {
		given[k] = v
	}
	g, err := t.New(given)
	if err != nil {
		return nil, err
	}
	var s State
	if r.HasSeed {
		s = g.NewInitialState(r.Seed)
	} else if fs, ok := g.(FieldStarter); ok {
		if s, err = fs.StartFromFields(fields); err != nil {
			return nil, fmt.Errorf("record: %w", err)
		}
	} else {
		return nil, fmt.Errorf("record: no seed to replay from, and %s does not start from its record's fields", r.Game)
	}
	for i, a := range r.Actions {
		if visit != nil {
			if err := visit(i, s); err != nil {
				return nil, err
			}
		}
		if err := s.ApplyAction(a); err != nil {
			return nil, fmt.Errorf("record: action %d (%d): %w", i, a, err)
		}
	}
	if !checkEnd {
		r.Terminal = s.IsTerminal()
	}
	if s.IsTerminal() != r.Terminal {
		return nil, fmt.Errorf("record: replay terminal = %v, record says %v", s.IsTerminal(), r.Terminal)
	}
	got := Returns(s)
	if len(got) != len(r.Returns) {
		return nil, fmt.Errorf("record: %d returns for %d players", len(r.Returns), len(got))
	}
	for i := range got {
		if math.Abs(got[i]-r.Returns[i]) > 1e-9 {
			return nil, fmt.Errorf("record: seat %d returns %v on replay, record says %v", i, got[i], r.Returns[i])
		}
	}
	return s, nil
}

// AsInt reads an integer from a decoded JSON or msgpack value.
func AsInt(v any) (int, bool) {
	switch x := v.(type) {
	case int:
		return x, true
	case int8:
		return int(x), true
	case int16:
		return int(x), true
	case int32:
		return int(x), true
	case int64:
		return int(x), x >= math.MinInt32 && x <= math.MaxInt32
	case uint8:
		return int(x), true
	case uint16:
		return int(x), true
	case uint32:
		return int(x), x <= math.MaxInt32
	case uint64:
		return int(x), x <= math.MaxInt32
	case float64:
		return int(x), x == math.Trunc(x) && math.Abs(x) < 1<<31
	case float32:
		return int(x), float64(x) == math.Trunc(float64(x)) && math.Abs(float64(x)) < 1<<31
	}
	return 0, false
}
