package testgame

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/davidgoliath/dgenv/env"
)

// Nim with explicit chance (env.ChanceGame): the seat that moves first,
// which State draws from its seed, is here a chance node of its own, with
// every seat equally likely. This is the rule docs/games.md gives a game
// whose only chance is drawn inside from the seed: name that draw as a
// chance node, rather than have a bridge invent one over seeds. Nim has no
// hidden information, so a resampled state is a copy.
//
// ChanceRun is 0 (one chance node, no run to promise): the bridge asks the
// engine for the probabilities, the path a game with unequal chance takes.

// NewChanceState implements env.ChanceGame.
func (g *Game) NewChanceState() env.ChanceState { return &ChanceState{g: g} }

// ChanceInfo implements env.ChanceGame. The information state is the
// observation, the first seat (one-hot) and every move (one-hot of take per
// move, at most heap moves): the whole history.
func (g *Game) ChanceInfo() env.ChanceInfo {
	obs := g.Observation().Size
	return env.ChanceInfo{MaxChanceOutcomes: g.players, MaxChanceNodes: 1,
		ObservationTensorSize: obs, InformationStateTensorSize: obs + g.players + g.heap*g.take}
}

// ChanceState is a game of Nim with its first seat drawn by a chance node.
type ChanceState struct {
	g     *Game
	s     *State // nil at the chance node
	first int
}

// Game implements env.ChanceState.
func (c *ChanceState) Game() env.Game { return c.g }

// CurrentPlayer implements env.ChanceState.
func (c *ChanceState) CurrentPlayer() int {
	switch {
	case c.s == nil:
		return env.ChancePlayer
	case c.s.IsTerminal():
		return env.TerminalPlayer
	}
	return c.s.CurrentPlayer()
}

// IsTerminal implements env.ChanceState.
func (c *ChanceState) IsTerminal() bool { return c.s != nil && c.s.IsTerminal() }

// AppendLegalActions implements env.ChanceState: at the chance node, the seats.
func (c *ChanceState) AppendLegalActions(dst []int) []int {
	if c.s == nil {
		for seat := range c.g.players {
			dst = append(dst, seat)
		}
		return dst
	}
	return c.s.AppendLegalActions(dst)
}

// AppendChanceOutcomes implements env.ChanceState.
func (c *ChanceState) AppendChanceOutcomes(dst []env.ChanceOutcome) []env.ChanceOutcome {
	if c.s != nil {
		return dst
	}
	for seat := range c.g.players {
		dst = append(dst, env.ChanceOutcome{Action: seat, Prob: 1 / float64(c.g.players)})
	}
	return dst
}

// ChanceRun implements env.ChanceState (see the top of the file).
func (c *ChanceState) ChanceRun() int { return 0 }

// ApplyAction implements env.ChanceState. The chance outcome is the first
// seat, which State's seed chooses the same way (seed mod players).
func (c *ChanceState) ApplyAction(a int) error {
	if c.s == nil {
		if a < 0 || a >= c.g.players {
			return &env.IllegalActionError{Env: -1, Player: env.ChancePlayer, Action: a, Legal: c.AppendLegalActions(nil)}
		}
		c.s = &State{g: c.g}
		c.s.Reset(uint64(a))
		c.first = a
		return nil
	}
	if !c.s.IsLegal(a) {
		return &env.IllegalActionError{Env: -1, Player: c.CurrentPlayer(), Action: a, Legal: c.AppendLegalActions(nil)}
	}
	c.s.ApplyUnchecked(a)
	return nil
}

// ActionString implements env.ChanceState.
func (c *ChanceState) ActionString(player, a int) string {
	if player == env.ChancePlayer {
		return fmt.Sprintf("seat %d moves first", a)
	}
	return fmt.Sprintf("take %d", a+1)
}

// WriteReturns implements env.ChanceState.
func (c *ChanceState) WriteReturns(dst []float64) {
	if c.s == nil {
		clear(dst[:c.g.players])
		return
	}
	c.s.WriteReturns(dst)
}

// WriteRewards implements env.ChanceState: the returns come with the last
// move.
func (c *ChanceState) WriteRewards(dst []float64) {
	if c.IsTerminal() {
		c.s.WriteReturns(dst)
		return
	}
	clear(dst[:c.g.players])
}

// ObservationTensor implements env.ChanceState: State's observation, all
// zeros but the heap before the first seat is drawn.
func (c *ChanceState) ObservationTensor(player int, dst []float32) {
	n := c.g.Observation().Size
	clear(dst[:n])
	if c.s == nil {
		dst[0] = float32(c.g.heap)
		return
	}
	var buf [2 + 3]uint8 // players <= 3
	c.s.WriteObservation(buf[:], player)
	for i := range n {
		dst[i] = float32(buf[i])
	}
}

// InformationStateTensor implements env.ChanceState (see ChanceInfo).
func (c *ChanceState) InformationStateTensor(player int, dst []float32) {
	c.ObservationTensor(player, dst)
	n := c.g.Observation().Size
	rest := dst[n:c.g.ChanceInfo().InformationStateTensorSize]
	clear(rest)
	if c.s == nil {
		return
	}
	rest[c.first] = 1
	for i, a := range c.s.hist {
		rest[c.g.players+i*c.g.take+a] = 1
	}
}

// ObservationString implements env.ChanceState.
func (c *ChanceState) ObservationString(player int) string {
	return fmt.Sprintf("player %d: %s", player, c)
}

// InformationStateString implements env.ChanceState: the whole history
// (nothing is hidden).
func (c *ChanceState) InformationStateString(player int) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "player %d:", player)
	for _, pa := range c.AppendHistory(nil) {
		sb.WriteByte(' ')
		sb.WriteString(c.ActionString(pa.Player, pa.Action))
		sb.WriteByte(';')
	}
	return sb.String()
}

func (c *ChanceState) String() string {
	if c.s == nil {
		return fmt.Sprintf("heap %d, first seat to draw", c.g.heap)
	}
	return c.s.String()
}

// AppendHistory implements env.ChanceState.
func (c *ChanceState) AppendHistory(dst []env.PlayerAction) []env.PlayerAction {
	if c.s == nil {
		return dst
	}
	dst = append(dst, env.PlayerAction{Player: env.ChancePlayer, Action: c.first})
	p := c.first
	for _, a := range c.s.hist {
		dst = append(dst, env.PlayerAction{Player: p, Action: a})
		p = (p + 1) % c.g.players
	}
	return dst
}

// Clone implements env.ChanceState.
func (c *ChanceState) Clone() env.ChanceState {
	d := *c
	if c.s != nil {
		d.s = c.s.Clone().(*State)
	}
	return &d
}

// Serialize implements env.ChanceState: "nim <players> <heap> <take>:"
// and every action, chance included, in order.
func (c *ChanceState) Serialize() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "nim %d %d %d:", c.g.players, c.g.heap, c.g.take)
	for _, pa := range c.AppendHistory(nil) {
		sb.WriteByte(' ')
		sb.WriteString(strconv.Itoa(pa.Action))
	}
	return sb.String()
}

// DeserializeChanceState implements env.ChanceGame.
func (g *Game) DeserializeChanceState(text string) (env.ChanceState, error) {
	head, acts, ok := strings.Cut(text, ":")
	want := fmt.Sprintf("nim %d %d %d", g.players, g.heap, g.take)
	if !ok || head != want {
		return nil, fmt.Errorf("nim state %q: want %q, a colon and the actions", text, want)
	}
	c := g.NewChanceState()
	for i, f := range strings.Fields(acts) {
		a, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("nim state: action %d: %q is not a number", i, f)
		}
		if err := c.ApplyAction(a); err != nil {
			return nil, fmt.Errorf("nim state: action %d: %w", i, err)
		}
	}
	return c, nil
}

// ResampleFromInfostate implements env.ChanceState: nothing is hidden.
func (c *ChanceState) ResampleFromInfostate(player int, _ uint64) (env.ChanceState, error) {
	if player < 0 || player >= c.g.players {
		return nil, fmt.Errorf("player %d: not a seat of a game of %d", player, c.g.players)
	}
	return c.Clone(), nil
}
