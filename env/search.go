package env

import (
	"fmt"
	"math"
	"slices"
)

// The search bot of any game whose states resample from an information
// state: determinized flat Monte-Carlo (PIMC). For a decision it samples
// worlds consistent with what the seat to act knows, plays each legal
// action in every world, finishes each game with playouts by a given bot,
// and keeps the action with the best mean return for the acting seat.

// Resampler is implemented by states that can deal anew what a seat cannot
// see (the duel: the opponent's hand and the deck order).
type Resampler interface {
	// ResampleWorld returns a new state, consistent with everything player
	// knows in this one (own hand, the public table, every action), with
	// the hidden part and the chance to come drawn from rng. It leaves the
	// receiver as it was. (ChanceState.ResampleFromInfostate is the
	// OpenSpiel-shaped sibling: a seed and an error, a ChanceState back.)
	ResampleWorld(player int, rng *RNG) State
}

// Copier is implemented by states that copy another state of their game
// into themselves, reusing their own memory (a Clone that allocates
// nothing once the receiver has grown): the search plays its playouts in
// one scratch state this way. A state without it is cloned per playout.
type Copier interface {
	// CopyFrom makes the receiver equal to src, a state of the same game
	// (what src.Clone() would return); src is not changed.
	CopyFrom(src State)
}

// Estimator is implemented by states that can guess how a game not yet
// over will end: the search's playouts with a Horizon stop there and take
// the guess (the duel: the difference of the wounds).
type Estimator interface {
	// EstimateReturns writes into dst[:NumPlayers] an estimate of each
	// seat's final return (within the game's utility range); for a
	// terminal state, the returns.
	EstimateReturns(dst []float64)
}

// Inferrer is implemented by states that can tell how well a sampled
// world explains the other seats' plays: the search then prefers worlds
// in which its model of them (its Rollout bot) would have played as they
// did (the duel: the opponent's hand).
type Inferrer interface {
	// Infer returns, for worlds of ResampleWorld(player) of this state,
	// the number of the other seats' recent plays model would not have
	// made in that world (0: the world explains them all). It uses only
	// what player knows. nil means no inference here (nothing to check).
	Infer(player int, model Bot) func(world State) int
}

// inferProbe is how many worlds Search's inference tries before it gives
// up on a decision whose plays none of their candidates explains.
const inferProbe = 8

// DefaultSearchWorlds is Search's number of worlds when Worlds is 0.
const DefaultSearchWorlds = 8

// Search is determinized flat Monte-Carlo search (PIMC) over the game
// interface, for any game whose states are Resamplers. For a decision of
// seat me with more than one legal action, it draws Worlds worlds from
// rng (ResampleWorld(me)); in each world it plays every legal
// action and lets Rollout play all seats to the end of the game (or to a
// Horizon, then the state's estimate), and it
// chooses the action with the highest mean return of me over the worlds:
// the action Rollout itself (or Keep) would play unless another does strictly
// better (then the lowest of the best), by a clear margin when Z > 0.
// Every action is played in the same worlds with the same playout
// randomness (common random numbers), so their comparison is not blurred
// by luck. It uses only what me knows,
// keeps no per-game state, draws randomness only from rng (the same rng
// state gives the same choice) and is safe for concurrent use. Its
// allocations per decision are the worlds (with Infer, every candidate
// drawn), what the state's Infer prepares, one scratch state (for a
// Copier state; otherwise a clone per playout) and two small slices.
type Search struct {
	Worlds  int // worlds per decision; 0 means DefaultSearchWorlds
	Rollout Bot // plays every seat in the playouts; nil means RandomBot
	// Z > 0 makes Act keep Rollout's own action unless another's mean
	// gain over it in the same worlds exceeds Z standard errors (of that
	// paired difference; with one world, never): with few worlds, the best
	// of many noisy means is mostly luck, and a good Rollout's choice is
	// the safer one.
	Z float64
	// Horizon > 0 stops each playout after Horizon actions (the action
	// searched included) and takes the state's estimate of the returns
	// (Estimator) if the game is not over by then: shorter playouts, so
	// more worlds for the same time, and less noise from a far future
	// the rollout bot plays badly anyway. SearchFactory refuses it for a
	// game whose states do not estimate.
	Horizon int
	// Infer > 1 draws up to Infer candidates for each world, for a state
	// that is an Inferrer, and keeps the first whose plays of the other
	// seats Rollout would have made all (else the one it would have made
	// most of): when the real opponents play like Rollout, the worlds
	// look like what they hold. Candidates cost a resample and a few
	// Rollout decisions each, not playouts. When none of the first 8
	// worlds has a candidate that explains the plays, the rest of the
	// decision samples plainly (opponents unlike Rollout would make every
	// world draw Infer candidates).
	Infer int
	// Keep, when set, chooses the action kept unless another is better
	// (Rollout's own choice when nil): a policy guiding the search
	// (env/policy's search:policy:<name>) while Rollout plays the
	// playouts. It is asked once a decision, on the decision's state.
	Keep Bot
}

// SearchFactory makes, for a game whose states are Resamplers, a copy of
// cfg whose playouts the bot rollout makes for that game plays (nil:
// cfg.Rollout, or RandomBot). A game whose states cannot resample gets
// an error saying so.
func SearchFactory(cfg Search, rollout BotFactory) BotFactory {
	return func(g Game) (Bot, error) {
		s0 := g.NewInitialState(0)
		if _, ok := s0.(Resampler); !ok {
			return nil, fmt.Errorf("search plays only games whose states resample from an information state (env.Resampler); %s's do not", g.Type().Name)
		}
		if _, ok := s0.(Estimator); cfg.Horizon > 0 && !ok {
			return nil, fmt.Errorf("search with a horizon needs states that estimate their returns (env.Estimator); %s's do not", g.Type().Name)
		}
		s := cfg
		if rollout != nil {
			r, err := rollout(g)
			if err != nil {
				return nil, fmt.Errorf("search's playouts: %w", err)
			}
			s.Rollout = r
		}
		return &s, nil
	}
}

// Costly implements env.Costly: a decision plays worlds x legal actions
// games to the end.
func (*Search) Costly() bool { return true }

// WithSamples implements env.Sampler: the same search with n worlds.
func (b *Search) WithSamples(n int) Bot {
	c := *b
	c.Worlds = n
	return &c
}

// Act implements Bot. s must be a Resampler (SearchFactory checks its game).
func (b *Search) Act(s State, rng *RNG) int {
	var buf [64]int
	legal := s.AppendLegalActions(buf[:0])
	if len(legal) == 1 {
		return legal[0]
	}
	var sbuf, qbuf [64]float64
	sum, sq := sbuf[:0], qbuf[:0]
	if len(legal) <= len(sbuf) {
		sum, sq = sbuf[:len(legal)], qbuf[:len(legal)]
	} else {
		sum, sq = make([]float64, len(legal)), make([]float64, len(legal))
	}
	keep := b.Keep
	if keep == nil {
		keep = b.rollout()
	}
	pref := slices.Index(legal, keep.Act(s, rng))
	worlds := b.Worlds
	if worlds <= 0 {
		worlds = DefaultSearchWorlds
	}
	b.run(s, rng, legal, pref, worlds, sum, sq)
	return legal[bestGain(sum, sq, worlds, pref, b.Z)]
}

// bestGain is the index of the best mean gain over pref (sum and sq of n
// paired differences, as run adds them), pref if none is positive (by
// more than z standard errors when z > 0; with one world, none is):
// the lowest index of the best.
func bestGain(sum, sq []float64, worlds, pref int, z float64) int {
	n := float64(worlds)
	best, bestMean := pref, 0.0
	for j := range sum {
		mean := sum[j] / n
		if j == pref || mean <= bestMean {
			continue
		}
		if z > 0 {
			if n < 2 { // no standard error from one world
				continue
			}
			v := max(sq[j]/n-mean*mean, 0) * n / (n - 1)
			if mean <= z*math.Sqrt(v/n) {
				continue
			}
		}
		best, bestMean = j, mean
	}
	return best
}

// rollout is the bot of the playouts.
func (b *Search) rollout() Bot {
	if b.Rollout == nil {
		return RandomBot{}
	}
	return b.Rollout
}

// ActionValues implements env.ActionValuer: the mean return of the seat to
// act over the worlds after each legal action (see Search). s is left as
// it was.
func (b *Search) ActionValues(s State, rng *RNG, legal []int, dst []float64) {
	var qbuf [64]float64
	sq := qbuf[:0]
	if len(legal) <= len(qbuf) {
		sq = qbuf[:len(legal)]
	} else {
		sq = make([]float64, len(legal))
	}
	worlds := b.Worlds
	if worlds <= 0 {
		worlds = DefaultSearchWorlds
	}
	b.run(s, rng, legal, -1, worlds, dst, sq)
	n := float64(worlds)
	for j := range dst {
		dst[j] /= n
	}
}

// run plays every legal action in each of worlds worlds. It adds to sum[j] (and its square to sq[j]) the return of the
// seat to act after legal[j] less, when pref >= 0, its return after
// legal[pref] in the same world.
func (b *Search) run(s State, rng *RNG, legal []int, pref, worlds int, sum, sq []float64) {
	rs, ok := s.(Resampler)
	if !ok {
		panic(fmt.Sprintf("env: Search: a %T does not resample (env.Resampler)", s))
	}
	rollout := b.rollout()
	me := s.CurrentPlayer()
	var rbuf [8]float64
	ret := rbuf[:0]
	if np := s.Game().NumPlayers(); np <= len(rbuf) {
		ret = rbuf[:np]
	} else {
		ret = make([]float64, np)
	}
	clear(sum)
	clear(sq)
	var scratch State
	// playout plays a in world w (in w itself when last) and returns me's
	// final return.
	playout := func(w State, a int, k int, seed uint64, last bool) float64 {
		var p State
		switch {
		case last:
			p = w
		case scratch == nil:
			p = w.Clone()
			if _, ok := p.(Copier); ok {
				scratch = p
			}
		default:
			scratch.(Copier).CopyFrom(w)
			p = scratch
		}
		p.ApplyUnchecked(a)
		r := NewRNG(seed, uint64(k))
		for n := 1; !p.IsTerminal(); n++ {
			if n == b.Horizon {
				p.(Estimator).EstimateReturns(ret)
				return ret[me]
			}
			p.ApplyUnchecked(rollout.Act(p, &r))
		}
		p.WriteReturns(ret)
		return ret[me]
	}
	var explain func(State) int
	unexplained := 0 // worlds no candidate explained
	if inf, ok := s.(Inferrer); ok && b.Infer > 1 {
		explain = inf.Infer(me, rollout)
	}
	for k := range worlds {
		w := rs.ResampleWorld(me, rng)
		if explain != nil {
			miss := explain(w)
			for try := 1; try < b.Infer && miss > 0; try++ {
				c := rs.ResampleWorld(me, rng)
				if m := explain(c); m < miss {
					w, miss = c, m
				}
			}
			if miss > 0 {
				unexplained++
			}
			if k == inferProbe-1 && unexplained == inferProbe {
				// Not one candidate of the first worlds explains the
				// plays: the others do not play like Rollout (a random
				// opponent, a network), and inferring would cost Infer
				// draws a world for nothing. The rest of the decision
				// samples plainly.
				explain = nil
			}
		}
		seed := rng.Uint64()
		base := 0.0
		if pref >= 0 {
			base = playout(w, legal[pref], k, seed, false)
		}
		for j, a := range legal {
			if j == pref {
				continue
			}
			last := j == len(legal)-1 || (j == len(legal)-2 && pref == len(legal)-1)
			d := playout(w, a, k, seed, last) - base
			sum[j] += d
			sq[j] += d * d
		}
	}
}
