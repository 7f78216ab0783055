package duel

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrBadSerialization is wrapped by every Deserialize error.
var ErrBadSerialization = errors.New("bad serialized duel state")

const serialHeader = "duel v1"

// Serialize writes the state as text: the parameters, the seed and every
// action so far. Every chance outcome comes from the seed's RNG, so this
// fixes the state exactly; Deserialize replays it, checking every action.
//
//	duel v1
//	params 100            max_rounds
//	seed 42
//	actions 0 17 57 ...   action ids in order
//	resample 12 1 <a> <b> a sampled world: after 12 actions, seat 1's
//	                      unseen cards were dealt from NewRNG(a, b)
func (s *State) Serialize() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s\nparams %d\nseed %d\nactions", serialHeader, s.game.params.MaxRounds, s.seed)
	for _, a := range s.hist {
		sb.WriteByte(' ')
		sb.WriteString(strconv.Itoa(int(a)))
	}
	sb.WriteByte('\n')
	for _, r := range s.resamples {
		fmt.Fprintf(&sb, "resample %d %d %d %d\n", r.At, r.Player, r.A, r.B)
	}
	return sb.String()
}

// DeserializeState rebuilds a state written by Serialize. The parameters in
// the text must be this game's.
func (g *Game) DeserializeState(text string) (*State, error) {
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	bad := func(line int, format string, args ...any) error {
		return fmt.Errorf("%w: line %d: %s", ErrBadSerialization, line, fmt.Sprintf(format, args...))
	}
	if len(lines) < 4 || lines[0] != serialHeader {
		return nil, bad(1, "want the header %q and params, seed and actions lines", serialHeader)
	}
	f := strings.Fields(lines[1])
	if len(f) != 2 || f[0] != "params" {
		return nil, bad(2, "want \"params <max_rounds>\"")
	}
	mr, err := strconv.Atoi(f[1])
	if err != nil || mr != g.params.MaxRounds {
		return nil, bad(2, "max_rounds %q is not this game's %d", f[1], g.params.MaxRounds)
	}
	f = strings.Fields(lines[2])
	if len(f) != 2 || f[0] != "seed" {
		return nil, bad(3, "want \"seed <uint64>\"")
	}
	seed, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return nil, bad(3, "seed %q: %v", f[1], err)
	}
	f = strings.Fields(lines[3])
	if len(f) == 0 || f[0] != "actions" {
		return nil, bad(4, "want \"actions <ids>\"")
	}
	actions := make([]Action, len(f)-1)
	for i, w := range f[1:] {
		a, err := strconv.Atoi(w)
		if err != nil {
			return nil, bad(4, "action %d: %q is not an integer", i, w)
		}
		actions[i] = a
	}
	var rs []Resample
	for i, l := range lines[4:] {
		var r Resample
		if n, err := fmt.Sscanf(l, "resample %d %d %d %d", &r.At, &r.Player, &r.A, &r.B); n != 4 || err != nil {
			return nil, bad(5+i, "want \"resample <at> <player> <a> <b>\"")
		}
		rs = append(rs, r)
	}
	s, err := replay(g, seed, actions, rs)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadSerialization, err)
	}
	return s, nil
}

// replay plays actions from seed, resampling where rs says.
func replay(g *Game, seed uint64, actions []Action, rs []Resample) (*State, error) {
	for i, r := range rs {
		if r.At < 0 || r.At > len(actions) || i > 0 && r.At < rs[i-1].At || r.Player < 0 || r.Player >= NumPlayers {
			return nil, fmt.Errorf("resample %d: at %d player %d is out of order or range", i, r.At, r.Player)
		}
	}
	s := g.NewInitialState(seed)
	next := 0
	for i := 0; i <= len(actions); i++ {
		for ; next < len(rs) && rs[next].At == i; next++ {
			if s.t.over {
				return nil, fmt.Errorf("resample %d: the game is over", next)
			}
			s.resample(rs[next])
			s.resamples = append(s.resamples, rs[next])
		}
		if i < len(actions) {
			if err := s.ApplyAction(actions[i]); err != nil {
				return nil, fmt.Errorf("action %d: %w", i, err)
			}
		}
	}
	return s, nil
}

// Record is a game as it happened: enough to rebuild it (the seed and the
// actions; every chance outcome follows from the seed) and its outcome, to
// check a rebuild against.
type Record struct {
	Params   Params
	Seed     uint64
	Actions  []Action
	Rounds   int  // rounds completed
	Terminal bool // the game was over
	Winner   int  // -1: draw or running
	Wounds   [2]int
	// Resamples is set for a sampled world (ResampleFromInfostate).
	Resamples []Resample
}

// Record returns the game record so far.
func (s *State) Record() *Record {
	return &Record{
		Params: s.game.params, Seed: s.seed, Actions: s.History(),
		Rounds: int(s.t.round), Terminal: s.t.over, Winner: int(s.t.winner),
		Wounds:    [2]int{int(s.t.wounds[0]), int(s.t.wounds[1])},
		Resamples: append([]Resample(nil), s.resamples...),
	}
}

// ErrReplayMismatch is wrapped when a replayed record does not end as recorded.
var ErrReplayMismatch = errors.New("replay does not match the record")

// Replay rebuilds the game from the record, checking every action's
// legality and that the rebuilt game ends as recorded (rounds, terminal,
// winner, wounds). It returns the rebuilt state.
func (r *Record) Replay() (*State, error) {
	g, err := NewGame(r.Params)
	if err != nil {
		return nil, err
	}
	s, err := replay(g, r.Seed, r.Actions, r.Resamples)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	got := s.Record()
	if got.Rounds != r.Rounds || got.Terminal != r.Terminal || got.Winner != r.Winner || got.Wounds != r.Wounds {
		return nil, fmt.Errorf("%w: rebuilt rounds %d terminal %v winner %d wounds %v, recorded %d %v %d %v",
			ErrReplayMismatch, got.Rounds, got.Terminal, got.Winner, got.Wounds, r.Rounds, r.Terminal, r.Winner, r.Wounds)
	}
	return s, nil
}
