package duel

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/davidgoliath/dgenv/env"
)

// setup describes a position for a rule test. Squares are names ("e8");
// cards are kinds. The deck holds every other card, in kind order (so the
// top card, drawn first, is the highest kind left).
type setup struct {
	goliath, david string
	rocks, trees   []string
	goliathHand    []int
	davidHand      []int
	spear          string // "" while Goliath holds it
	stonesHeld     int
	stonesOn       map[string]int
	wounds         [2]int
	stage          int
	maxRounds      int
}

func sq(tb testing.TB, name string) int {
	tb.Helper()
	if len(name) != 2 || name[0] < 'a' || name[0] > 'h' || name[1] < '1' || name[1] > '8' {
		tb.Fatalf("bad square %q", name)
	}
	return Square(int(name[0]-'a'), int(name[1]-'1'))
}

// position builds the state and runs the engine to the first decision from
// the given stage (skipping decisions with pass only, as the engine does).
func position(tb testing.TB, u setup) *State {
	tb.Helper()
	if u.maxRounds == 0 {
		u.maxRounds = 1 // the game ends with this round: nothing is drawn after the action tested
	}
	g := MustNewGame(Params{MaxRounds: u.maxRounds})
	s := g.NewInitialState(1)
	t := &s.t
	*t = table{spearSq: -1, winner: -1}
	t.pos = [2]uint8{uint8(sq(tb, u.goliath)), uint8(sq(tb, u.david))}
	for _, r := range u.rocks {
		t.rocks |= 1 << sq(tb, r)
	}
	for _, r := range u.trees {
		t.trees |= 1 << sq(tb, r)
	}
	left := Copies
	for p, hand := range [][]int{u.goliathHand, u.davidHand} {
		for _, k := range hand {
			if left[k] == 0 {
				tb.Fatalf("setup: more than %d cards of kind %s", Copies[k], KindNames[k])
			}
			left[k]--
			t.hand[p][k]++
			t.handSize[p]++
		}
	}
	for k := range NumKinds {
		for range left[k] {
			t.deck[t.deckLen] = uint8(k)
			t.deckLen++
		}
	}
	if u.spear != "" {
		t.spearSq = int8(sq(tb, u.spear))
	}
	t.stonesHeld = uint8(u.stonesHeld)
	for name, n := range u.stonesOn {
		t.stonesOn[sq(tb, name)] += uint8(n)
		t.stonesLeft += uint8(n)
	}
	t.wounds = [2]uint8{uint8(u.wounds[0]), uint8(u.wounds[1])}
	t.stage = uint8(u.stage)
	s.hist = s.hist[:0]
	s.advance()
	return s
}

func apply(tb testing.TB, s *State, actions ...Action) {
	tb.Helper()
	for _, a := range actions {
		if err := s.ApplyAction(a); err != nil {
			tb.Fatalf("ApplyAction(%d %s) in %s phase: %v\n%s", a, ActionName(a), s.Phase(), err, s)
		}
	}
}

func wantLegal(tb testing.TB, s *State, want ...Action) {
	tb.Helper()
	if got := s.LegalActions(); !slices.Equal(got, want) {
		tb.Fatalf("LegalActions() = %v, want %v\n%s", names(got), names(want), s)
	}
}

func names(as []Action) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = ActionName(a)
	}
	return out
}

func wantStage(tb testing.TB, s *State, player int, ph Phase) {
	tb.Helper()
	if s.CurrentPlayer() != player || s.Phase() != ph {
		tb.Fatalf("to act: %d %s, want %d %s\n%s", s.CurrentPlayer(), s.Phase(), player, ph, s)
	}
}

func move(kind, dir int) Action        { return ActMove + 8*kind + dir }
func sling(kind, stone int) Action     { return ActSling + 3*(kind-KindSling2) + stone - KindStoneFast }
func sword(kind int) Action            { return ActSword + kind - KindThrustOrth }
func throw(kind int) Action            { return ActThrow + kind - KindThrow2 }
func defend(kind int) Action           { return ActDefend + kind - KindBlock }
func event(kind int) Action            { return ActEvent + kind - KindReinforcements }
func discardOf(kind int) Action        { return ActDiscard + kind }
func total(s *State) int               { return cardCount(s) }
func newRNG(seed uint64) env.RNG       { return env.NewRNG(seed, 99) }
func (s *State) tableCopy() table      { return s.t }
func dirOf(name string) int            { return slices.Index(DirNames[:], name) }
func sqName(s *State, seat int) string { return SquareName(s.Position(seat)) }

// cardCount counts every card: both hands, the deck and the discard pile.
func cardCount(s *State) int {
	n := int(s.t.deckLen)
	for k := range NumKinds {
		n += int(s.t.hand[0][k]) + int(s.t.hand[1][k]) + int(s.t.discards[k])
	}
	return n
}

func errorsIs(err error) bool { return errors.Is(err, ErrParams) }

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// stateBot is a duel bot as the tests call it, on the duel's own *State.
type stateBot interface {
	ActState(s *State, rng *env.RNG) Action
}
