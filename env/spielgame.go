package env

import (
	"fmt"

	"github.com/davidgoliath/dgenv/env/spiel"
	"github.com/davidgoliath/dgenv/obs"
)

// GameName is the card game's name in a spiel.Registry (the default game).
const GameName = "david_goliath"

// SpielType is the card game as a spiel.Type: its parameters, and Make
// building a Game that implements spiel.Game with this package's batch
// kernel (VecEnv) behind spiel.NewVec.
func SpielType() *spiel.Type {
	t := &spiel.Type{
		Name:    GameName,
		Doc:     "David & Goliath, the trick-taking card game",
		Players: []int{3, 4, 5, 6},
		Params: []spiel.Param{
			{Name: "players", Default: 4, Min: MinPlayers, Max: MaxPlayers, Doc: "seats at the table"},
			{Name: "deals", Default: 0, Min: 1, Max: MaxDeals, Doc: "deals in a game, 1..90 when given; by default (0) as many as players"},
			{Name: "first_dealer", Default: 0, Min: 0, Max: MaxPlayers - 1, Doc: "seat that deals the first deal (below players)"},
		},
	}
	t.Make = func(v spiel.Values) (spiel.Game, error) {
		g, err := NewGame(Params{Players: v["players"], Deals: v["deals"], FirstDealer: v["first_dealer"]})
		if err != nil {
			return nil, err // a *spiel.ParamError naming the field
		}
		return &SpielGame{G: g, t: t}, nil
	}
	return t
}

// SpielBot makes a spiel.BotFactory of a bot of this package (for a
// registry's card-game bots).
func SpielBot(f BotFactory) spiel.BotFactory {
	return func(g spiel.Game) (spiel.Bot, error) {
		sg, ok := g.(*SpielGame)
		if !ok {
			return nil, fmt.Errorf("plays only %s, not %s", GameName, g.Type().Name)
		}
		b := f()
		if c, ok := b.(GameChecker); ok {
			if err := c.CheckGame(sg.G); err != nil {
				return nil, err
			}
		}
		return CardBot{B: b}, nil
	}
}

// CardBot is a bot of this package as a spiel.Bot.
type CardBot struct{ B Bot }

// Act implements spiel.Bot.
func (b CardBot) Act(s spiel.State, rng *spiel.RNG) int {
	return b.B.Act(s.(*SpielState).S, rng)
}

// Costly implements spiel.Costly: search thinks for milliseconds a move.
func (b CardBot) Costly() bool {
	c, ok := b.B.(spiel.Costly)
	return ok && c.Costly()
}

// SpielGame is a *Game as a spiel.Game.
type SpielGame struct {
	G *Game
	t *spiel.Type
}

func (g *SpielGame) Type() *spiel.Type { return g.t }
func (g *SpielGame) Values() spiel.Values {
	p := g.G.params
	return spiel.Values{"players": p.Players, "deals": p.Deals, "first_dealer": p.FirstDealer}
}
func (g *SpielGame) NumDistinctActions() int { return NumActions }
func (g *SpielGame) NumPlayers() int         { return g.G.NumPlayers() }
func (g *SpielGame) MaxGameLength() int      { return g.G.MaxGameLength() }
func (g *SpielGame) MinUtility() float64     { return g.G.MinUtility() }
func (g *SpielGame) MaxUtility() float64     { return g.G.MaxUtility() }
func (g *SpielGame) Observation() spiel.Layout {
	return spiel.Layout{Size: g.G.layout.Size, Sections: g.G.layout.Sections}
}

// NewInitialState implements spiel.Game.
func (g *SpielGame) NewInitialState(seed uint64) spiel.State {
	return &SpielState{S: g.G.NewInitialState(seed), g: g, seed: seed, seeded: true}
}

// DeserializeState implements spiel.Game.
func (g *SpielGame) DeserializeState(text string) (spiel.State, error) {
	s, err := g.G.DeserializeState(text)
	if err != nil {
		return nil, err
	}
	return &SpielState{S: s, g: g}, nil
}

// NewVec implements spiel.Vectorizer with VecEnv, this game's kernel.
func (g *SpielGame) NewVec(cfg spiel.VecConfig) (spiel.Vec, error) {
	seats, err := cfg.Check(g.G.params.Players)
	if err != nil {
		return nil, err
	}
	vc := VecConfig{Params: g.G.params, NumEnvs: cfg.NumEnvs, Seed: cfg.Seed, LearnerSeats: seats,
		Opponent: cfg.Opponent, Opponents: cfg.Opponents, Reward: RewardMode(cfg.Reward), Workers: cfg.Workers, Packed: cfg.Packed}
	if cfg.Bots != nil {
		vc.Bots = make([]Bot, len(cfg.Bots))
		for s, b := range cfg.Bots {
			if b == nil {
				continue
			}
			cb, ok := b.(CardBot)
			if !ok {
				return nil, &spiel.ConfigError{Field: "opponents", Value: cfg.Opponents[s], Reason: "not a bot of " + GameName}
			}
			vc.Bots[s] = cb.B
		}
	}
	if cfg.Bot != nil {
		cb, ok := cfg.Bot.(CardBot)
		if !ok {
			return nil, &spiel.ConfigError{Field: "opponent", Value: cfg.Opponent, Reason: "not a bot of " + GameName}
		}
		vc.Bot = cb.B
	}
	v, err := NewVecEnv(vc)
	if err != nil {
		return nil, err
	}
	return &SpielVec{V: v, g: g}, nil
}

// SpielVec is a *VecEnv as a spiel.Vec.
type SpielVec struct {
	V *VecEnv
	g *SpielGame
}

func (v *SpielVec) Game() spiel.Game               { return v.g }
func (v *SpielVec) NumEnvs() int                   { return v.V.n }
func (v *SpielVec) LearnerSeats() []int            { return v.V.LearnerSeats() }
func (v *SpielVec) Obs() []uint8                   { return v.V.obsBuf }
func (v *SpielVec) Mask() []uint8                  { return v.V.mask }
func (v *SpielVec) Player() []int8                 { return v.V.player }
func (v *SpielVec) Rewards() []float32             { return v.V.rewards }
func (v *SpielVec) Done() []uint8                  { return v.V.done }
func (v *SpielVec) Scores() []int32                { return v.V.scores }
func (v *SpielVec) Episode() []int64               { return v.V.episode }
func (v *SpielVec) ObsBits() []uint8               { return v.V.obsBits }
func (v *SpielVec) ObsExtra() []uint8              { return v.V.obsXtra }
func (v *SpielVec) MaskBits() []uint8              { return v.V.maskBit }
func (v *SpielVec) Packing() obs.Packing           { return v.V.packing }
func (v *SpielVec) Reset(seed uint64)              { v.V.Reset(seed) }
func (v *SpielVec) ResetContinue()                 { v.V.ResetContinue() }
func (v *SpielVec) Step(a []int32) error           { return v.V.Step(a) }
func (v *SpielVec) Err() error                     { return v.V.Err() }
func (v *SpielVec) SetObsTarget(dst []uint8) error { return v.V.SetObsTarget(dst) }
func (v *SpielVec) Close()                         { v.V.Close() }

// Record implements spiel.Vec: the card game's record (Extra) with its
// actions and totals.
func (v *SpielVec) Record(k int) (finished, current *spiel.Record, err error) {
	fin, cur, err := v.V.Record(k)
	if err != nil {
		return nil, nil, err
	}
	return v.g.record(fin), v.g.record(cur), nil
}

func (g *SpielGame) record(r *Record) *spiel.Record {
	if r == nil {
		return nil
	}
	out := &spiel.Record{Game: GameName, Values: g.Values(), Extra: r}
	terminal := len(r.Deals) == r.Params.Deals
	for i := range r.Deals {
		d := &r.Deals[i]
		for _, pl := range d.Plays[:d.NumPlays] {
			out.Actions = append(out.Actions, int(pl.Card))
		}
		terminal = terminal && d.Done
	}
	out.Terminal = terminal
	for _, t := range r.Totals() {
		out.Returns = append(out.Returns, float64(t))
	}
	return out
}

// SpielState is a *State as a spiel.State.
type SpielState struct {
	S      *State
	g      *SpielGame
	seed   uint64
	seeded bool
}

func (s *SpielState) Game() spiel.Game                 { return s.g }
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

// WriteReturns implements spiel.State: the totals of the finished deals.
func (s *SpielState) WriteReturns(dst []float64) {
	for i := range s.g.G.params.Players {
		dst[i] = float64(s.S.b.Totals[i])
	}
}

// Clone implements spiel.State.
func (s *SpielState) Clone() spiel.State {
	c := *s
	c.S = s.S.Clone()
	return &c
}

// Seed implements spiel.Seeded for states made by NewInitialState: the
// seed and the actions replay the game.
func (s *SpielState) Seed() (uint64, bool) { return s.seed, s.seeded }

// Costly implements spiel.Costly: the search bot thinks for milliseconds a
// move, so a server caps the envs it plays in.
func (SearchBot) Costly() bool { return true }
