package card

import (
	"github.com/davidgoliath/dgenv/env"
)

// The card game's glue to the batch engine (env.NewVec): the optional
// interfaces of env/vec_optional.go, implemented by SpielGame and the
// states it makes for a batch.

// MaskBytes is the size of one packed legal-action mask: 90 bits.
const MaskBytes = (NumActions + 7) / 8

// NewStreamStates implements env.StreamGame: the states of n envs in one
// block, each env's SpielState next to its State (one pointer hop less
// per call: measured at N = 4096), and their rings of two records each in
// another. Each env deals all its games from one stream (a Reset with seed
// derives it from (seed, 2i), its bots' from (seed, 2i+1)).
func (g *SpielGame) NewStreamStates(n int) []env.StreamState {
	type slot struct {
		sp SpielState
		st State
	}
	slots := make([]slot, n)
	rings := make([][2]Record, n)
	out := make([]env.StreamState, n)
	for i := range n {
		for k := range rings[i] {
			rings[i][k].reset(g.G.params)
		}
		sl := &slots[i]
		sl.st.game = g.G
		sl.sp = SpielState{S: &sl.st, g: g, ring: &rings[i]}
		out[i] = &sl.sp
	}
	return out
}

// StartStream implements env.StreamState.
func (s *SpielState) StartStream(seed uint64, i int) env.RNG {
	*s.S = State{game: s.g.G, rng: NewRNG(seed, uint64(i)*2)}
	s.recCur = 0
	s.S.rec = &s.ring[0]
	s.ring[1].reset(s.g.G.params)
	return NewRNG(seed, uint64(i)*2+1)
}

// NextGame implements env.StreamState: the game's record goes to the ring
// slot that does not hold the game just finished.
func (s *SpielState) NextGame(restart bool) {
	if restart {
		s.recCur = 0
	} else {
		s.recCur ^= 1
	}
	s.S.rec = &s.ring[s.recCur]
	s.S.newGame()
}

// Records implements env.StreamState: the card game's record (Extra) with
// its actions and totals.
func (s *SpielState) Records() (finished, current *env.Record) {
	s.S.syncRecord()
	return s.g.record(s.ring[s.recCur^1].Clone()), s.g.record(s.ring[s.recCur].Clone())
}

// ApplyRewarded implements env.StepRewarder: at a deal's end each seat
// gets its deal points (or, zero_sum, env.ZeroSumReward of them), in float32.
func (s *SpielState) ApplyRewarded(a int, mode env.RewardMode, rew []float32) bool {
	st := s.S
	st.apply(a)
	if !st.dealEnded {
		return false
	}
	p := len(rew)
	var sum int32
	for seat := range p {
		sum += st.lastDeal[seat]
	}
	for seat := range p {
		r := float32(st.lastDeal[seat])
		if mode == env.RewardZeroSum {
			r = env.ZeroSumReward(s.g.t, r, float32(sum), p)
		}
		rew[seat] += r
	}
	return st.terminal
}

// WriteRow implements env.RowWriter.
func (s *SpielState) WriteRow(mask, obs []uint8) int {
	st := s.S
	p := st.CurrentPlayer()
	st.WriteMask(mask)
	if obs != nil {
		st.game.layout.EncodePlanes(obs, &st.b, &st.pl, p)
	}
	return p
}

// WriteObservationBits implements env.BitsWriter: the packed observation
// encoded straight from the table's bit sets.
func (s *SpielState) WriteObservationBits(bits, extra []uint8, player int) {
	s.g.G.layout.EncodeBits(bits, extra, &s.S.b, player)
}

// record is a card-game record as an env.Record.
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
