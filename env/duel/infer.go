package duel

import (
	"github.com/davidgoliath/dgenv/env"
)

// Infer implements env.Inferrer (the generic search's Infer): it weighs a
// world of ResampleWorld(player) by the opponent's plays since its last
// draw, each replayed with the hand the world gives it then (its hand in
// the world plus the cards it has played since, all of them face up) and
// checked against model's choice. Only decisions with a choice count,
// and only since the last draw, since the cards drawn are not known.
//
// The positions of those plays come from replaying this game's history
// from its seed; the opponent's true hand in them serves only to tell
// what it played since (its hand then less its hand now, public cards),
// and is replaced by the world's. A state that does not replay from its
// seed (a sampled world, one deserialized without it) gets nil: no
// inference.
func (s *SpielState) Infer(player int, model env.Bot) func(world env.State) int {
	o := 1 - player
	if s.S.t.over || player < 0 || player >= NumPlayers || len(s.S.resamples) > 0 {
		return nil
	}
	type play struct {
		t      table // the position before it, the opponent's hand the true one
		action Action
	}
	var plays []play
	r := s.S.game.NewInitialState(s.S.seed)
	for _, a := range s.S.hist {
		size := r.t.handSize[o]
		if r.CurrentPlayer() == o && r.hasChoice() {
			plays = append(plays, play{r.t, Action(a)})
		}
		if !r.IsLegal(Action(a)) {
			return nil // not this game's history from its seed
		}
		r.ApplyUnchecked(Action(a))
		if r.t.handSize[o] > size {
			plays = plays[:0] // a draw: its cards are not known
		}
	}
	if r.t != s.S.t || len(plays) == 0 {
		return nil
	}
	now := s.S.t.hand[o]
	scratch := &SpielState{S: &State{game: s.S.game}, g: s.g}
	var rng env.RNG // the model may draw; it sees the same numbers in every world
	return func(world env.State) int {
		hand := stateOf(world).t.hand[o]
		miss := 0
		for _, p := range plays {
			scratch.S.t = p.t
			for k := range NumKinds {
				scratch.S.t.hand[o][k] = hand[k] + p.t.hand[o][k] - now[k]
			}
			rng = env.NewRNG(uint64(p.action), 0)
			if model.Act(scratch, &rng) != p.action {
				miss++
			}
		}
		return miss
	}
}
