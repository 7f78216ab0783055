package card

import (
	"math"

	"github.com/davidgoliath/dgenv/env"
)

// HeuristicBot is a rule-based player that knows the scoring. For every legal
// card it estimates the chance of ending the trick highest (taking the other
// cards) or lowest (taking the highest card), from the cards still unseen,
// and what each outcome adds to its own deal score: a single high card of a
// colour it holds at most one of is worth its face value, a third card of a
// valuable colour costs the pair, cheap cards of a colour it already holds
// three of cost nothing. It plays the card with the best expected gain, and
// on a tie keeps its extreme cards (the ones that can win or steal) for later.
// It looks only at its own hand and the public table. It is deterministic.
type HeuristicBot struct{}

// pileSketch is a prize pile by colour as count and sum of values, so cards
// whose value is only estimated can be added.
type pileSketch struct {
	n   [NumColours]int
	sum [NumColours]float64
}

func sketch(m *[NumColours]uint32) pileSketch {
	var ps pileSketch
	for c, bitsC := range m {
		ps.n[c] = popcount(bitsC)
		for b := bitsC; b != 0; b &= b - 1 {
			ps.sum[c] += float64(trailingZeros(b) + 1)
		}
	}
	return ps
}

func (ps *pileSketch) add(colour int, value float64) {
	ps.n[colour]++
	ps.sum[colour] += value
}

func (ps *pileSketch) score() float64 {
	s := 0.0
	for c := range NumColours {
		s += ColourPoints(ps.n[c], ps.sum[c])
	}
	return s
}

// Act implements env.Bot.
func (b HeuristicBot) Act(s env.State, rng *RNG) int { return b.ActState(stateOf(s), rng) }

// ActState implements StateBot.
func (HeuristicBot) ActState(s *State, _ *RNG) Action {
	b := &s.b
	np := int(b.Players)
	me := s.current()
	trick := b.Trick[:b.TrickLen]
	rest := np - 1 - len(trick) // players after me in this trick

	// Unseen cards: the deck less my hand, every prize pile and the trick.
	var seen [NumColours]uint32
	for c := range NumColours {
		seen[c] = b.Hands[me][c]
		for seat := range np {
			seen[c] |= b.Prizes[seat][c]
		}
	}
	for _, c := range trick {
		seen[c/MaxValue] |= 1 << (c % MaxValue)
	}
	deck := uint32(1)<<DeckValues(np) - 1
	var hist [MaxValue + 2]int
	unseen := 0
	for c := range NumColours {
		for m := deck &^ seen[c]; m != 0; m &= m - 1 {
			hist[trailingZeros(m)+1]++
			unseen++
		}
	}
	// less[v]: unseen cards below v; sumLess[v] their value sum.
	var less, sumLess [MaxValue + 2]float64
	for v := 1; v <= MaxValue+1; v++ {
		less[v] = less[v-1] + float64(hist[v-1])
		sumLess[v] = sumLess[v-1] + float64(hist[v-1]*(v-1))
	}
	total, totalSum := less[MaxValue+1], sumLess[MaxValue+1]

	maxT, minT, maxAt := 0, MaxValue+1, -1
	for i, c := range trick {
		v := Value(c)
		if v >= maxT {
			maxT, maxAt = v, i
		}
		minT = min(minT, v)
	}
	base := sketch(&b.Prizes[me])
	baseScore := base.score()

	leadOf := -1 // colour led; -1 while leading (then a card leads its own colour)
	if len(trick) > 0 {
		leadOf = Colour(trick[0])
	}
	mid := float64(DeckValues(np)+1) / 2

	best, bestA := math.Inf(-1), -1
	al := s.allowed(me)
	for c := range NumColours {
		if al&(1<<c) == 0 {
			continue
		}
		for m := b.Hands[me][c]; m != 0; m &= m - 1 {
			a := c*MaxValue + trailingZeros(m)
			v := Value(Card(a))
			lead := leadOf
			if lead < 0 {
				lead = c
			}
			ev := 0.0
			if rest == 0 {
				var full [MaxPlayers]Card
				copy(full[:], trick)
				full[len(trick)] = Card(a)
				hi, lo := TrickWinners(full[:np])
				pile := base
				switch len(trick) {
				case hi:
					for i, x := range full[:np] {
						if i != hi {
							pile.add(Colour(x), float64(Value(x)))
						}
					}
				case lo:
					pile.add(Colour(full[hi]), float64(Value(full[hi])))
				}
				ev = pile.score() - baseScore
			} else {
				if v >= maxT { // may end highest: later equal cards beat it
					ph := ipow(less[v]/total, rest)
					if ph > 0 {
						pile := base
						for _, x := range trick {
							pile.add(Colour(x), float64(Value(x)))
						}
						avg := sumLess[v] / less[v]
						for range rest {
							pile.add(lead, avg)
						}
						ev += ph * (pile.score() - baseScore)
					}
				}
				if v <= minT { // may end lowest
					above := total - less[v+1]
					pl := ipow(above/total, rest)
					if pl > 0 {
						pile := base
						avgAbove := (totalSum - sumLess[v+1]) / above
						if maxAt >= 0 && float64(maxT) >= avgAbove {
							pile.add(Colour(trick[maxAt]), float64(maxT))
						} else {
							pile.add(lead, avgAbove)
						}
						ev += pl * (pile.score() - baseScore)
					}
				}
			}
			// Keep extreme cards: they are the ones that win or steal later.
			ev -= 0.01 * math.Abs(float64(v)-mid) / mid
			if ev > best {
				best, bestA = ev, a
			}
		}
	}
	return bestA
}

// ipow is x**n for a small n >= 0 (math.Pow is a general, slower routine).
func ipow(x float64, n int) float64 {
	r := 1.0
	for range n {
		r *= x
	}
	return r
}
