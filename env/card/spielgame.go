package card

import (
	"github.com/davidgoliath/dgenv/env"
)

// GameName is the card game's name in an env.Registry (the default game).
const GameName = "david_goliath"

// SpielType is the card game as an env.Type: its parameters, and Make
// building a Game that implements env.Game (and the batch engine's
// optional interfaces, vec.go).
func SpielType() *env.Type {
	t := &env.Type{
		Name:    GameName,
		Doc:     "David & Goliath, the trick-taking card game",
		Players: []int{3, 4, 5, 6},
		Params: []env.Param{
			{Name: "players", Default: 4, Min: MinPlayers, Max: MaxPlayers, Doc: "seats at the table"},
			{Name: "deals", Default: 0, Min: 1, Max: MaxDeals, Doc: "deals in a game, 1..90 when given; by default (0) as many as players"},
			{Name: "first_dealer", Default: 0, Min: 0, Max: MaxPlayers - 1, Doc: "seat that deals the first deal (below players)"},
		},
	}
	t.Make = func(v env.Values) (env.Game, error) {
		g, err := NewGame(Params{Players: v["players"], Deals: v["deals"], FirstDealer: v["first_dealer"]})
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

func (g *SpielGame) Type() *env.Type { return g.t }
func (g *SpielGame) Values() env.Values {
	p := g.G.params
	return env.Values{"players": p.Players, "deals": p.Deals, "first_dealer": p.FirstDealer}
}
func (g *SpielGame) NumDistinctActions() int { return NumActions }
func (g *SpielGame) NumPlayers() int         { return g.G.NumPlayers() }
func (g *SpielGame) MaxGameLength() int      { return g.G.MaxGameLength() }
func (g *SpielGame) MinUtility() float64     { return g.G.MinUtility() }
func (g *SpielGame) MaxUtility() float64     { return g.G.MaxUtility() }
func (g *SpielGame) Observation() env.Layout {
	return env.Layout{Size: g.G.layout.Size, Sections: g.G.layout.Sections}
}

// NewInitialState implements env.Game.
func (g *SpielGame) NewInitialState(seed uint64) env.State {
	return &SpielState{S: g.G.NewInitialState(seed), g: g, seed: seed, seeded: true}
}

// DeserializeState implements env.Game.
func (g *SpielGame) DeserializeState(text string) (env.State, error) {
	s, err := g.G.DeserializeState(text)
	if err != nil {
		return nil, err
	}
	return &SpielState{S: s, g: g}, nil
}

// SpielState is a *State as an env.State.
type SpielState struct {
	S      *State
	g      *SpielGame
	seed   uint64
	seeded bool
	ring   *[2]Record // a batch env's records (env.StreamState), nil otherwise
	recCur uint8      // ring[recCur] is the game in progress
}

func (s *SpielState) Game() env.Game                   { return s.g }
func (s *SpielState) CurrentPlayer() int               { return s.S.CurrentPlayer() }
func (s *SpielState) IsTerminal() bool                 { return s.S.terminal }
func (s *SpielState) IsLegal(a int) bool               { return s.S.IsLegal(a) }
func (s *SpielState) AppendLegalActions(d []int) []int { return s.S.AppendLegalActions(d) }
func (s *SpielState) WriteMask(dst []uint8)            { s.S.WriteMask(dst) }
func (s *SpielState) ApplyAction(a int) error          { return s.S.ApplyAction(a) }
func (s *SpielState) ApplyUnchecked(a int)             { s.S.apply(a) }
func (s *SpielState) WriteObservation(dst []uint8, p int) {
	s.S.WriteObservation(dst, p)
}
func (s *SpielState) Serialize() string                 { return s.S.Serialize() }
func (s *SpielState) History() []int                    { return s.S.History() }
func (s *SpielState) ActionString(player, a int) string { return s.S.ActionString(player, a) }
func (s *SpielState) String() string                    { return s.S.String() }

// WriteReturns implements env.State: the totals of the finished deals.
func (s *SpielState) WriteReturns(dst []float64) {
	for i := range s.g.G.params.Players {
		dst[i] = float64(s.S.b.Totals[i])
	}
}

// Clone implements env.State.
func (s *SpielState) Clone() env.State {
	c := *s
	c.S = s.S.Clone()
	c.ring = nil // the clone's record is its own (State.Clone copies it)
	return &c
}

// ResampleWorld implements env.Resampler: State.ResampleFromInfostate, as
// a state of this game. The world has no seed that replays it.
func (s *SpielState) ResampleWorld(player int, rng *env.RNG) env.State {
	return &SpielState{S: s.S.ResampleFromInfostate(player, rng), g: s.g}
}

var _ env.Resampler = (*SpielState)(nil)

// Seed implements env.Seeded for states made by NewInitialState: the
// seed and the actions replay the game.
func (s *SpielState) Seed() (uint64, bool) { return s.seed, s.seeded }

// Costly implements env.Costly: the search bot thinks for milliseconds a
// move, so a server caps the envs it plays in.
func (SearchBot) Costly() bool { return true }
