package duel

import (
	"github.com/davidgoliath/dgenv/env"
)

// Name is the duel's name in an env.Registry.
const Name = "duel"

// SpielType is the duel as an env.Type. Sessions of it use the generic
// spiel Vec (States reset in place, nothing allocated per step).
func SpielType() *env.Type {
	t := &env.Type{
		Name:    Name,
		Doc:     "the two-player duel: Goliath and David on an 8x8 board (docs/duel.md)",
		Players: []int{NumPlayers},
		ZeroSum: true, // +1 win, -1 loss, 0 draw: DUEL.md's zero_sum and points are the same
		Params: []env.Param{
			{Name: "max_rounds", Default: 100, Min: 1, Max: MaxMaxRounds, Doc: "rounds before the game is a draw"},
		},
	}
	t.Make = func(v env.Values) (env.Game, error) {
		g, err := NewGame(Params{MaxRounds: v["max_rounds"]})
		if err != nil {
			return nil, err // a *env.ParamError naming the field
		}
		return &SpielGame{G: g, t: t}, nil
	}
	return t
}

// SpielGame is a *Game as an env.Game.
type SpielGame struct {
	G *Game
	t *env.Type
}

func (g *SpielGame) Type() *env.Type         { return g.t }
func (g *SpielGame) Values() env.Values      { return env.Values{"max_rounds": g.G.params.MaxRounds} }
func (g *SpielGame) NumDistinctActions() int { return NumActions }
func (g *SpielGame) NumPlayers() int         { return NumPlayers }
func (g *SpielGame) MaxGameLength() int      { return g.G.MaxGameLength() }
func (g *SpielGame) MinUtility() float64     { return g.G.MinUtility() }
func (g *SpielGame) MaxUtility() float64     { return g.G.MaxUtility() }
func (g *SpielGame) Observation() env.Layout {
	return env.Layout{Size: ObsSize, Sections: g.G.layout}
}

// NewInitialState implements env.Game.
func (g *SpielGame) NewInitialState(seed uint64) env.State {
	return &SpielState{S: g.G.NewInitialState(seed), g: g}
}

// DeserializeState implements env.Game.
func (g *SpielGame) DeserializeState(text string) (env.State, error) {
	s, err := g.G.DeserializeState(text)
	if err != nil {
		return nil, err
	}
	return &SpielState{S: s, g: g}, nil
}

// SpielState is a *State as an env.State (and env.Seeded, env.Resetter).
type SpielState struct {
	S *State
	g *SpielGame
}

func (s *SpielState) Game() env.Game                      { return s.g }
func (s *SpielState) CurrentPlayer() int                  { return s.S.CurrentPlayer() }
func (s *SpielState) IsTerminal() bool                    { return s.S.IsTerminal() }
func (s *SpielState) IsLegal(a int) bool                  { return s.S.IsLegal(a) }
func (s *SpielState) AppendLegalActions(d []int) []int    { return s.S.AppendLegalActions(d) }
func (s *SpielState) WriteMask(dst []uint8)               { s.S.WriteMask(dst) }
func (s *SpielState) ApplyAction(a int) error             { return s.S.ApplyAction(a) }
func (s *SpielState) ApplyUnchecked(a int)                { s.S.ApplyUnchecked(a) }
func (s *SpielState) WriteReturns(dst []float64)          { s.S.WriteReturns(dst) }
func (s *SpielState) WriteObservation(dst []uint8, p int) { s.S.WriteObservation(dst, p) }
func (s *SpielState) Serialize() string                   { return s.S.Serialize() }
func (s *SpielState) History() []int                      { return s.S.History() }
func (s *SpielState) ActionString(player, a int) string   { return s.S.ActionString(player, a) }
func (s *SpielState) String() string                      { return s.S.String() }
func (s *SpielState) Clone() env.State                    { return &SpielState{S: s.S.Clone(), g: s.g} }
func (s *SpielState) Reset(seed uint64)                   { s.S.Reset(seed) }

// Seed implements env.Seeded: a state resampled from an infostate has
// no single seed that replays it.
func (s *SpielState) Seed() (uint64, bool) { return s.S.Seed(), len(s.S.resamples) == 0 }

// The generic search's interfaces, checked at compile time (a rename on
// either side breaks the build, not the search at run time).
var (
	_ env.Resampler = (*SpielState)(nil)
	_ env.Copier    = (*SpielState)(nil)
	_ env.Estimator = (*SpielState)(nil)
	_ env.Inferrer  = (*SpielState)(nil)
)

// EstimateReturns implements env.Estimator (the search's playouts with a
// horizon): a game not over is worth, to each seat, the wounds it has
// dealt less those it has taken, over the wounds that kill (between -1
// and 1, as the returns are; a win is the three wounds that end it).
func (s *SpielState) EstimateReturns(dst []float64) {
	if s.S.IsTerminal() {
		s.S.WriteReturns(dst)
		return
	}
	d := float64(int(s.S.t.wounds[1])-int(s.S.t.wounds[0])) / MaxWounds
	dst[0], dst[1] = d, -d
}

// ResampleWorld implements env.Resampler (the generic search): the
// duel's own ResampleFromInfostate, as a state of this game.
func (s *SpielState) ResampleWorld(player int, rng *env.RNG) env.State {
	return &SpielState{S: s.S.ResampleFromInfostate(player, rng), g: s.g}
}

// CopyFrom implements env.Copier: s becomes what src.Clone() would be,
// in s's own memory (nothing allocated once its slices have grown).
func (s *SpielState) CopyFrom(src env.State) {
	o := stateOf(src)
	hist, res := s.S.hist[:0], s.S.resamples[:0]
	*s.S = *o
	s.S.hist = append(hist, o.hist...)
	s.S.resamples = append(res, o.resamples...)
	s.g = src.(*SpielState).g
}
