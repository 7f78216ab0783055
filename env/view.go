package env

import (
	"errors"
	"fmt"
)

// Describer is implemented by states that describe their position for
// people (the browser page, docs/web.md): everything a picture of the
// position needs, in the game's own terms, and words for each action. It
// is the one definition a front end draws from: it never re-derives a
// position from the observation tensor, nor knows the rules. The duel
// implements it.
type Describer interface {
	// Describe returns the position with every hand face up (a front end
	// hides what its viewer may not see), as fields with RecordFielder's
	// value rules. It includes the legal actions of the seat to act, each
	// with its words.
	Describe() []Field
	// DescribeAction says what the seat to act does by the legal action a,
	// and what comes of it, in a sentence.
	DescribeAction(a int) string
}

// ErrNotDescribed is returned for a record of a game whose states are not
// Describers.
var ErrNotDescribed = errors.New("the game does not describe its positions")

// Step is one action of a described record: the seat that played it, the
// action, and Describer.DescribeAction's words for it.
type Step struct {
	Seat   int
	Action int
	Text   string
}

// Describe replays r as Replay does (checking every action and the
// returns) and describes it from action from on: positions[j] is the
// position after from+j actions, up to the last one; steps[j] is the action
// played in positions[j]. from is 0..len(r.Actions).
func (r *Record) Describe(reg *Registry, from int) (positions [][]Field, steps []Step, err error) {
	return r.describe(reg, from, true)
}

// DescribeOpenEnded is Describe for a record that does not say whether its
// game ended (one read back from the wire, whose records carry no such
// flag: the server's POST /v1/positions): every action and the returns are
// checked as Describe checks them, and r.Terminal is set from the replay.
func (r *Record) DescribeOpenEnded(reg *Registry, from int) (positions [][]Field, steps []Step, err error) {
	return r.describe(reg, from, false)
}

func (r *Record) describe(reg *Registry, from int, checkEnd bool) (positions [][]Field, steps []Step, err error) {
	if from < 0 || from > len(r.Actions) {
		return nil, nil, fmt.Errorf("describe: from %d: the record has %d actions (want 0..%d)", from, len(r.Actions), len(r.Actions))
	}
	t, err := reg.Lookup(r.Game)
	if err != nil {
		return nil, nil, err
	}
	given := make(map[string]any, len(r.Values))
	for k, v := range r.Values {
		given[k] = v
	}
	g, err := t.New(given)
	if err != nil {
		return nil, nil, err
	}
	if _, ok := g.NewInitialState(0).(Describer); !ok {
		return nil, nil, fmt.Errorf("%s: %w", r.Game, ErrNotDescribed)
	}
	positions = make([][]Field, 0, len(r.Actions)-from+1)
	steps = make([]Step, 0, len(r.Actions)-from)
	end, err := r.replay(reg, func(i int, s State) error {
		if i < from {
			return nil
		}
		d := s.(Describer)
		positions = append(positions, d.Describe())
		a := r.Actions[i]
		steps = append(steps, Step{Seat: s.CurrentPlayer(), Action: a, Text: d.DescribeAction(a)})
		return nil
	}, checkEnd)
	if err != nil {
		return nil, nil, err
	}
	return append(positions, end.(Describer).Describe()), steps, nil
}
