package duel

import (
	"fmt"

	"github.com/davidgoliath/dgenv/env"
)

// The duel's bots are env.Bots: Act takes the env.State the engine, the
// arena and dgeval hand them (this game's *SpielState). ActState is the
// same choice on the duel's own *State, for code (tests, examples) that
// holds one. A bot uses only what its seat knows (its own hand and the
// public table), keeps no per-game state and draws randomness only from
// rng, so one value serves many games and goroutines.

// Bots are the duel's bots for a registry (env/games registers them).
func Bots() map[string]env.BotFactory {
	return map[string]env.BotFactory{
		"random":    factory(RandomBot{}),
		"heuristic": factory(HeuristicBot{}),
	}
}

// factory makes b a registry's env.BotFactory, refusing other games.
func factory(b env.Bot) env.BotFactory {
	return func(g env.Game) (env.Bot, error) {
		if _, ok := g.(*SpielGame); !ok {
			return nil, fmt.Errorf("plays only %s, not %s", Name, g.Type().Name)
		}
		return b, nil
	}
}

// stateOf is the duel's state inside an env.State of this game (a
// registry hands a duel bot only this game's states).
func stateOf(s env.State) *State {
	ss, ok := s.(*SpielState)
	if !ok {
		panic(fmt.Sprintf("duel: a bot of %s was given a %T", Name, s))
	}
	return ss.S
}

// RandomBot plays uniformly among the legal actions.
type RandomBot struct{}

// Act implements env.Bot. No allocation.
func (b RandomBot) Act(s env.State, rng *env.RNG) int { return b.ActState(stateOf(s), rng) }

// ActState is Act on the duel's own state.
func (RandomBot) ActState(s *State, rng *env.RNG) Action {
	var buf [NumActions]Action
	l := s.AppendLegalActions(buf[:0])
	return l[rng.IntN(len(l))]
}

// HeuristicBot is a rule-based player. Goliath closes in (or fetches his
// spear) and David keeps to sling range out of sword reach (or fetches his
// stones); each attacks whenever it can, defends with a card that stops
// the attack, negates a move that would put the mover where it hurts, plays
// Rearm, Disarm and Reinforcements when they help, and discards the cards
// its role cannot use first. It reads only its own hand and public facts,
// and is deterministic (rng breaks no ties).
type HeuristicBot struct{}

// Act implements env.Bot. No allocation.
func (b HeuristicBot) Act(s env.State, rng *env.RNG) int { return b.ActState(stateOf(s), rng) }

// ActState is Act on the duel's own state.
func (HeuristicBot) ActState(s *State, _ *env.RNG) Action {
	var buf [NumActions]Action
	legal := s.AppendLegalActions(buf[:0])
	if len(legal) == 1 {
		return legal[0]
	}
	t := &s.t
	p := int(stagePlayer[t.stage])
	h := &t.hand[p]
	best, bestScore := legal[0], -1<<30
	for _, a := range legal {
		var sc int
		switch t.stage {
		case stEventG, stEventD:
			sc = [4]int{0, 3, 2, 4}[eventRank(a)]
		case stMoveG, stMoveD:
			sc = -2 // a card spent
			dest := int(t.pos[p])
			var pick int
			if a != ActPass {
				k, d := (a-ActMove)/8, (a-ActMove)%8
				dest, pick = s.walk(p, int(t.pos[p]), d, moveLen[k])
				sc = 0
			}
			sc += s.placeScore(p, h, dest, int(t.pos[1-p])) + 30*pick
		case stNegateD, stNegateG:
			mover := 1 - p
			n := int(t.moveLen)
			sc = 0
			if a != ActPass {
				n = a - ActNegate
				sc = -6
			}
			dest, pick := s.walk(mover, int(t.moveFrom), int(t.moveDir), n)
			// Good for p is bad for the mover, whose hand p cannot see:
			// rate the mover as holding every card.
			sc -= s.placeScore(mover, &allCards, dest, int(t.pos[p])) + 30*pick
		case stAttackG:
			switch {
			case a == ActPass:
				sc = 0
			case a >= ActThrow:
				sc = 50 // the spear may be lost: a sword is better
			default:
				sc = 60 + int(h[KindThrustOrth+a-ActSword])
			}
		case stAttackD:
			if a == ActPass {
				sc = 0
			} else {
				sling, stone := (a-ActSling)/3, KindStoneFast+(a-ActSling)%3
				sc = 100 - 10*sling + int(h[stone]) // keep the long slings
			}
		case stDefendD, stDefendG:
			if a == ActPass {
				sc = 0
			} else {
				sc = 100 + int(h[KindBlock+a-ActDefend])
			}
		case stDiscardG, stDiscardD:
			k := a - ActDiscard
			sc = -(10*kindValue(p, k, s) - 4*int(h[k]))
		}
		if sc > bestScore {
			best, bestScore = a, sc
		}
	}
	return best
}

// eventRank maps pass, reinforcements, disarm, rearm to 0..3.
func eventRank(a Action) int {
	if a == ActPass {
		return 0
	}
	return 1 + a - ActEvent
}

// kindValue is how much a card of kind k is worth to seat p (0: useless).
func kindValue(p, k int, s *State) int {
	switch {
	case k <= KindMoveAny2:
		if k >= KindMoveAny1 {
			return 5
		}
		return 4
	case k == KindNegate:
		return 4
	case k >= KindBlock && k <= KindDuck:
		return 7
	case k >= KindReinforcements:
		if k == KindRearm && p == Goliath && s.t.spearSq < 0 {
			return 1
		}
		return 3
	case p == Goliath && k <= KindChopDiag:
		return 6
	case p == Goliath && k <= KindThrow4:
		return 4
	case p == David && k >= KindSling2 && k <= KindStoneSinker:
		return 6
	}
	return 0 // the other role's weapon
}

// walk follows a path of n squares from from in dir and returns where it
// ends and how many of p's own tokens it picks up.
func (s *State) walk(p, from, dir, n int) (dest, pick int) {
	x, y := from%8, from/8
	for range n {
		x += dirX[dir]
		y += dirY[dir]
		sq := Square(x, y)
		if p == Goliath && int(s.t.spearSq) == sq {
			pick++
		} else if p == David {
			pick += int(s.t.stonesOn[sq])
		}
	}
	return Square(x, y), pick
}

// allCards stands for a hand the bot cannot see: every kind present.
var allCards = func() (h [NumKinds]uint8) {
	for k := range h {
		h[k] = 1
	}
	return h
}()

// placeScore rates seat p standing on sq with the opponent on opp, from
// p's side, p holding hand h: in reach of an attack of its own is good,
// in reach of the opponent's is bad, and a missing weapon is worth fetching.
func (s *State) placeScore(p int, h *[NumKinds]uint8, sq, opp int) int {
	t := &s.t
	li := lines[sq][opp]
	dist := max(abs(sq%8-opp%8), abs(sq/8-opp/8))
	clear := li.dir >= 0 && li.between&t.trees == 0
	sc := 0
	if p == Goliath {
		if t.spearSq >= 0 {
			sp := int(t.spearSq)
			return -4 * max(abs(sq%8-sp%8), abs(sq/8-sp/8))
		}
		if dist == 1 {
			diag := li.dir%2 == 1
			for k := KindThrustOrth; k <= KindChopDiag; k++ {
				if h[k] > 0 && (k%2 == 1) == diag {
					sc += 20
					break
				}
			}
		}
		if clear && dist >= 2 && dist <= 4 && h[KindThrow2+dist-2] > 0 {
			sc += 12
		}
		return sc - 2*dist
	}
	// David.
	if dist == 1 {
		sc -= 20
	}
	if clear && t.spearSq < 0 && dist >= 2 && dist <= 4 {
		sc -= 5
	}
	canSling := false
	if t.stonesHeld > 0 && clear && h[KindStoneFast]+h[KindStoneCurved]+h[KindStoneSinker] > 0 {
		for k := KindSling2; k <= KindSling5; k++ {
			if h[k] > 0 && dist <= k-KindSling2+2 {
				canSling = true
			}
		}
	}
	if canSling {
		sc += 15
	}
	if t.stonesHeld == 0 && t.stonesLeft > 0 {
		best := 16
		for q, c := range t.stonesOn {
			if c > 0 {
				best = min(best, max(abs(sq%8-q%8), abs(sq/8-q/8)))
			}
		}
		sc -= 3 * best
	}
	// Keep some room: not too far to threaten, not so near to be reached.
	return sc - abs(dist-3)
}
