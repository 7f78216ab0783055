package card

import (
	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/obs"
)

// GameName is the card game's name in an env.Registry (the default game).
const GameName = "david_goliath"

// SpielType is the card game as an env.Type: its parameters, and Make
// building a Game that implements env.Game with this package's batch
// kernel (VecEnv) behind env.NewVec.
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

// NewVec implements env.Vectorizer with VecEnv, this game's kernel.
func (g *SpielGame) NewVec(cfg env.VecConfig) (env.Vec, error) {
	seats, err := cfg.Check(g.G.params.Players)
	if err != nil {
		return nil, err
	}
	vc := VecConfig{Params: g.G.params, NumEnvs: cfg.NumEnvs, Seed: cfg.Seed, LearnerSeats: seats,
		Opponent: cfg.Opponent, Opponents: cfg.Opponents, Reward: RewardMode(cfg.Reward), Workers: cfg.Workers, Packed: cfg.Packed}
	if cfg.Bots != nil {
		vc.Bots = make([]StateBot, len(cfg.Bots))
		for s, b := range cfg.Bots {
			if b == nil {
				continue
			}
			sb, ok := b.(StateBot)
			if !ok {
				return nil, &env.ConfigError{Field: "opponents", Value: cfg.Opponents[s], Reason: "not a bot of " + GameName}
			}
			vc.Bots[s] = sb
		}
	}
	if cfg.Bot != nil {
		sb, ok := cfg.Bot.(StateBot)
		if !ok {
			return nil, &env.ConfigError{Field: "opponent", Value: cfg.Opponent, Reason: "not a bot of " + GameName}
		}
		vc.Bot = sb
	}
	v, err := NewVecEnv(vc)
	if err != nil {
		return nil, err
	}
	return &SpielVec{V: v, g: g}, nil
}

// SpielVec is a *VecEnv as an env.Vec.
type SpielVec struct {
	V *VecEnv
	g *SpielGame
}

func (v *SpielVec) Game() env.Game                 { return v.g }
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

// Record implements env.Vec: the card game's record (Extra) with its
// actions and totals.
func (v *SpielVec) Record(k int) (finished, current *env.Record, err error) {
	fin, cur, err := v.V.Record(k)
	if err != nil {
		return nil, nil, err
	}
	return v.g.record(fin), v.g.record(cur), nil
}

func (g *SpielGame) record(r *Record) *env.Record {
	if r == nil {
		return nil
	}
	out := &env.Record{Game: GameName, Values: g.Values(), Extra: r}
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

// SpielState is a *State as an env.State.
type SpielState struct {
	S      *State
	g      *SpielGame
	seed   uint64
	seeded bool
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
	return &c
}

// Seed implements env.Seeded for states made by NewInitialState: the
// seed and the actions replay the game.
func (s *SpielState) Seed() (uint64, bool) { return s.seed, s.seeded }

// Costly implements env.Costly: the search bot thinks for milliseconds a
// move, so a server caps the envs it plays in.
func (SearchBot) Costly() bool { return true }
