package duel

import (
	"github.com/davidgoliath/dgenv/env"
)

// ResampleFromInfostate returns a copy of the state in which what player
// cannot see is dealt anew: the opponent's hand (same size) and the deck
// order, from the cards player has not seen (the deck and the opponent's
// hand together), and a fresh RNG for the chance to come. It keeps what
// player knows: own hand, the public board and piles, every action, and
// what skipped decisions revealed (a seat asked nothing held no card that
// would have given it a choice, apart from cards drawn since). Search bots
// (determinized MCTS, PIMC) sample worlds with it. The result records the
// resample, so it serializes and replays like any state.
func (s *State) ResampleFromInfostate(player int, rng env.Source) *State {
	if s.t.over || player < 0 || player >= NumPlayers {
		return s.Clone()
	}
	// A copy like Clone's, its slices sized for a world (a search draws
	// many, plays few actions in most and drops some): not the room of a
	// whole game that Clone keeps.
	out := new(State)
	*out = *s
	out.hist = append(make([]uint8, 0, len(s.hist)+worldRoom), s.hist...)
	out.resamples = append(make([]Resample, 0, len(s.resamples)+1), s.resamples...)
	r := Resample{At: len(out.hist), Player: player, A: rng.Uint64(), B: rng.Uint64()}
	out.resample(r)
	out.resamples = append(out.resamples, r)
	return out
}

// worldRoom is the history a sampled world has room for before it grows
// (a search's playout with a horizon plays about this many actions).
const worldRoom = 32

// resample deals player's unseen cards anew from NewRNG(r.A, r.B), which
// then becomes the state's RNG.
func (s *State) resample(r Resample) {
	t := &s.t
	o := 1 - r.Player
	rng := env.NewRNG(r.A, r.B)
	var pool [DeckSize]uint8
	n := 0
	for k := range NumKinds {
		for range t.hand[o][k] {
			pool[n] = uint8(k)
			n++
		}
		t.hand[o][k] = 0
	}
	n += copy(pool[n:], t.deck[:t.deckLen])
	// When the opponent is being asked, player knows it has a choice:
	// draw again until the dealt hand gives one (the true hand does, so
	// this ends; after many tries the true hand is kept).
	asked := int(stagePlayer[t.stage]) == o && t.stage != stDiscardG && t.stage != stDiscardD
	truth := t.hand[o]
	for try := 0; ; try++ {
		for i := n - 1; i > 0; i-- {
			j := rng.IntN(i + 1)
			pool[i], pool[j] = pool[j], pool[i]
		}
		if s.deal(o, pool[:n]) && (!asked || s.hasChoice()) {
			break
		}
		if try == 1000 {
			t.hand[o] = truth
			m := 0
			for _, k := range pool[:n] {
				if truth[k] > 0 {
					truth[k]--
					continue
				}
				t.deck[m] = k
				m++
			}
			break
		}
	}
	s.rng = rng
}

// deal gives seat o its hand from the shuffled pool (the first cards,
// taking at most wild of the kinds o is known to lack) and puts the rest in
// the deck in pool order. The true hand is one such choice, so the pool
// always suffices; it reports false only for an inconsistent state.
func (s *State) deal(o int, pool []uint8) bool {
	t := &s.t
	t.hand[o] = [NumKinds]uint8{}
	need, wild := int(t.handSize[o]), int(t.wild[o])
	m := 0
	for _, k := range pool {
		lacked := t.lacks[o]&(1<<k) != 0
		if need > 0 && (!lacked || wild > 0) {
			t.hand[o][k]++
			need--
			if lacked {
				wild--
			}
			continue
		}
		t.deck[m] = k
		m++
	}
	return need == 0 && m == int(t.deckLen)
}
