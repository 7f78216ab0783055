package card

import "github.com/davidgoliath/dgenv/env"

// ResampleFromInfostate returns a copy of the state in which the cards that
// player cannot see are dealt anew to the other seats, consistently with
// everything player knows: player's own hand, every card played (prize piles
// and the current trick), how many cards each seat still holds, and the
// colours each seat has shown to be out of. The deals still to come are
// reshuffled from rng too, since nobody knows them yet. Search bots
// (determinized MCTS, PIMC) sample worlds with it.
//
// Cards are placed one at a time in random order, each to a random seat
// allowed to hold it (weighted by free places), and a placement is taken
// only if the rest can still be placed: by Hall's theorem that holds when
// every set of colours has at least as many free places among the seats
// allowed any of them as it has cards left, 31 sums over five colours.
func (s *State) ResampleFromInfostate(player int, rng env.Source) *State {
	out := s.Clone()
	if s.terminal {
		return out
	}
	b := &out.b
	np := int(b.Players)

	var pool [NumActions]Card // cards player cannot see
	n := 0
	var need [MaxPlayers]int // cards each other seat holds
	for seat := range np {
		if seat == player {
			continue
		}
		for c := range NumColours {
			m := b.Hands[seat][c]
			need[seat] += popcount(m)
			for ; m != 0; m &= m - 1 {
				pool[n] = CardID(c, trailingZeros(m)+1)
				n++
			}
			b.Hands[seat][c] = 0
		}
	}
	for i := n - 1; i > 0; i-- {
		j := intN(rng, i+1)
		pool[i], pool[j] = pool[j], pool[i]
	}
	var left [NumColours]int // cards of each colour still to place
	for _, c := range pool[:n] {
		left[Colour(c)]++
	}
	for _, c := range pool[:n] {
		col := Colour(c)
		left[col]--
		var tried uint8
		for {
			// Pick a seat allowed this colour with free places, weighted by them.
			total := 0
			for seat := range np {
				if seat != player && need[seat] > 0 && b.Voids[seat]&(1<<col) == 0 && tried&(1<<seat) == 0 {
					total += need[seat]
				}
			}
			if total == 0 {
				panic("env: ResampleFromInfostate found no consistent deal (state is inconsistent)")
			}
			k := intN(rng, total)
			seat := 0
			for ; seat < np; seat++ {
				if seat != player && need[seat] > 0 && b.Voids[seat]&(1<<col) == 0 && tried&(1<<seat) == 0 {
					if k < need[seat] {
						break
					}
					k -= need[seat]
				}
			}
			need[seat]--
			if feasible(&left, &need, &b.Voids, np, player) {
				b.Hands[seat][col] |= 1 << (c % MaxValue)
				break
			}
			need[seat]++
			tried |= 1 << seat
		}
	}

	out.pl.Sync(b)

	// The resampled world's own deal record: hands are what each seat now
	// holds plus what it has played this deal.
	if r := out.rec; r != nil && len(r.Deals) > 0 {
		d := &r.Deals[len(r.Deals)-1]
		var dealt [MaxPlayers][NumColours]uint32
		for seat := range np {
			dealt[seat] = b.Hands[seat]
		}
		for _, pl := range d.Plays[:d.NumPlays] {
			dealt[pl.Seat][pl.Card/MaxValue] |= 1 << (pl.Card % MaxValue)
		}
		for seat := range np {
			i := 0
			for c := range NumColours {
				for m := dealt[seat][c]; m != 0; m &= m - 1 {
					d.Hands[seat][i] = CardID(c, trailingZeros(m)+1)
					i++
				}
			}
		}
	}
	out.rng = NewRNG(rng.Uint64(), rng.Uint64())
	out.forced = nil
	return out
}

// feasible checks Hall's condition: for every non-empty set S of colours,
// the cards of S still to place fit in the free places of the seats that
// may hold some colour of S.
func feasible(left *[NumColours]int, need *[MaxPlayers]int, voids *[MaxPlayers]uint8, np, player int) bool {
	for set := 1; set < 1<<NumColours; set++ {
		cards := 0
		for c := range NumColours {
			if set&(1<<c) != 0 {
				cards += left[c]
			}
		}
		if cards == 0 {
			continue
		}
		room := 0
		for seat := range np {
			if seat != player && int(^voids[seat])&set != 0 {
				room += need[seat]
			}
		}
		if cards > room {
			return false
		}
	}
	return true
}
