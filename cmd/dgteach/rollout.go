package main

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/policy"
)

// The table's own values (-teacher rollout): each legal action is valued in
// the game as it really is, not in sampled worlds. The action is played in
// a copy of the true state, then the rollout table's bots (-rollout-table,
// default the table) play every seat, each from its own observation, until
// the returns change (the card game: the end of the deal) or the game ends;
// the value is the acting seat's change less the mean of the others'
// (env.ZeroSum, the units of the search's values and of ret), averaged
// over -rollouts playouts. The playouts of every action share their random
// numbers (common random numbers).
//
// The true state is one world drawn from the real posterior of what the
// acting seat knows (the deal as it was dealt, and the other seats' plays
// as their bots made them), so a network fitted to these labels learns,
// averaged over the deals that look the same to the seat, the value of
// each card against these opponents when the seat then plays as its
// rollout bot: an approximate policy iteration step. Unlike the search's
// values, no seat's future plays see a whole world (no strategy fusion) and
// the other seats are modelled by what they are, not by the heuristic. The
// price is one world a label: more labels must average its noise.

//
// -rollout-sampled starts each playout from a world drawn from what the
// acting seat knows (env.Resampler: the hidden hands dealt anew) instead
// of the true state, every action of a decision played in the same worlds:
// values any player could compute, which differ from the true state's by
// the worlds' noise rather than by what the seat cannot know.
// -rollout-top K with -rollout-policy NAME values only the K legal actions
// that policy ranks highest (its greedy order, the lowest id on ties):
// the playouts then go where that policy would choose, K / legal of the
// cost. The others get NaN from ActionValues and are written unvalued
// (the shards' "valued" array).

// rolloutValuer is the -teacher rollout teacher of one game (game: its
// number k, which seats the table as shard does, by position).
type rolloutValuer struct {
	bots     []env.Bot // the rollout table, by table position
	rollouts int
	orders   int // -orders
	game     int
	sampled  bool           // -rollout-sampled: playouts from worlds resampled for the acting seat
	top      int            // -rollout-top: actions valued (0 = every legal one)
	ranker   *policy.Policy // -rollout-policy: whose logits rank them
}

// ActionValues implements valuer (not env.ActionValuer: unless sampled, it
// reads the hidden hands, which is the point). s is left as it was. With
// top, the legal actions outside the ranker's top get NaN.
func (v rolloutValuer) ActionValues(s env.State, rng *env.RNG, legal []int, dst []float64) {
	p := len(v.bots)
	me := s.CurrentPlayer()
	before, after := make([]float64, p), make([]float64, p)
	s.WriteReturns(before)
	seeds := make([]uint64, v.rollouts)
	for r := range seeds {
		seeds[r] = rng.Uint64()
	}
	starts := make([]env.State, len(seeds)) // each playout's first state: s, or a world drawn for me
	for r, seed := range seeds {
		starts[r] = s
		if v.sampled {
			wr := env.NewRNG(seed, uint64(r)|1<<32)
			starts[r] = s.(env.Resampler).ResampleWorld(me, &wr)
		}
	}
	valued := v.ranked(s, me, legal)
	var sim env.State
	for j, a := range legal {
		if !valued[j] {
			dst[j] = math.NaN()
			continue
		}
		sum := 0.0
		for r, seed := range seeds {
			if c, ok := sim.(env.Copier); ok {
				c.CopyFrom(starts[r])
			} else {
				sim = starts[r].Clone()
			}
			sim.ApplyUnchecked(a)
			rr := env.NewRNG(seed, uint64(r))
			for {
				sim.WriteReturns(after)
				if sim.IsTerminal() || changed(before, after) {
					break
				}
				seat := sim.CurrentPlayer()
				sim.ApplyUnchecked(v.bots[position(seat, v.game, p, v.orders)].Act(sim, &rr))
			}
			total := 0.0
			for k := range after {
				total += after[k] - before[k]
			}
			sum += env.ZeroSum(after[me]-before[me], total, p)
		}
		dst[j] = sum / float64(len(seeds))
	}
}

// ranked reports, per legal action, whether it is valued: all of them, or
// with top the top ranker's logits rank highest for seat me.
func (v rolloutValuer) ranked(s env.State, me int, legal []int) []bool {
	valued := make([]bool, len(legal))
	if v.top == 0 || v.top >= len(legal) {
		for j := range valued {
			valued[j] = true
		}
		return valued
	}
	obs := make([]uint8, v.ranker.Meta().ObsSize)
	logits := make([]float32, v.ranker.NumActions())
	s.WriteObservation(obs, me)
	if err := v.ranker.Logits(obs, 1, logits); err != nil {
		panic(err) // non-finite logits: dgteach's shard turns a panic into the run's error
	}
	order := make([]int, len(legal))
	for j := range order {
		order[j] = j
	}
	slices.SortStableFunc(order, func(x, y int) int { // legal is in increasing id: stable keeps the lowest id first on ties
		return cmp.Compare(logits[legal[y]], logits[legal[x]])
	})
	for _, j := range order[:v.top] {
		valued[j] = true
	}
	return valued
}

func changed(before, after []float64) bool {
	for k := range before {
		if before[k] != after[k] {
			return true
		}
	}
	return false
}

// parseSeats reads -label-seats: table positions, comma-separated ("" = all).
func parseSeats(spec string, p int) ([]bool, error) {
	on := make([]bool, p)
	if spec == "" {
		for i := range on {
			on[i] = true
		}
		return on, nil
	}
	for _, f := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 || n >= p {
			return nil, fmt.Errorf("-label-seats %q: want table positions 0..%d, comma-separated", spec, p-1)
		}
		on[n] = true
	}
	return on, nil
}

// rolloutTeacher is -teacher's name for the table's own values.
const rolloutTeacher = "rollout"

// newRolloutValuer makes the -teacher rollout teacher: the bots of
// -rollout-table (default the table) from the registry.
func newRolloutValuer(c config, reg *env.Registry, g env.Game, loaded map[string]*policy.Policy) (rolloutValuer, error) {
	if c.rollouts < 1 {
		return rolloutValuer{}, fmt.Errorf("-rollouts %d: must be >= 1", c.rollouts)
	}
	if c.prior != "" {
		return rolloutValuer{}, fmt.Errorf("-prior: the teacher %s takes no prior (its playouts are the table's bots)", rolloutTeacher)
	}
	if c.rolloutWorlds < 0 {
		return rolloutValuer{}, fmt.Errorf("-rollout-worlds %d: must be >= 0", c.rolloutWorlds)
	}
	names := c.table
	flag := "-table"
	if c.rolloutTable != "" {
		names, flag = strings.Split(c.rolloutTable, ","), "-rollout-table"
	}
	if len(names) != g.NumPlayers() {
		return rolloutValuer{}, fmt.Errorf("%s names %d bots for %d players", flag, len(names), g.NumPlayers())
	}
	bots := make([]env.Bot, len(names))
	sampled := false
	for i, name := range names {
		b, err := reg.NewBot(g, name)
		if err != nil {
			return rolloutValuer{}, fmt.Errorf("%s %s: %w", flag, name, err)
		}
		if sm, ok := b.(env.Sampler); ok && c.rolloutWorlds > 0 {
			b, sampled = sm.WithSamples(c.rolloutWorlds), true
		}
		bots[i] = b
	}
	if c.rolloutWorlds > 0 && !sampled {
		return rolloutValuer{}, fmt.Errorf("-rollout-worlds %d: no bot of %s %s samples worlds (env.Sampler, e.g. search)", c.rolloutWorlds, flag, strings.Join(names, ","))
	}
	v := rolloutValuer{bots: bots, rollouts: c.rollouts, orders: c.orders, sampled: c.rolloutSampled, top: c.rolloutTop}
	if c.rolloutSampled {
		if _, ok := g.NewInitialState(0).(env.Resampler); !ok {
			return rolloutValuer{}, fmt.Errorf("-rollout-sampled: the states of %s cannot be dealt anew (no env.Resampler)", g.Type().Name)
		}
	}
	switch {
	case c.rolloutTop < 0:
		return rolloutValuer{}, fmt.Errorf("-rollout-top %d: must be >= 0 (0: every legal action)", c.rolloutTop)
	case (c.rolloutTop > 0) != (c.rolloutPolicy != ""):
		return rolloutValuer{}, fmt.Errorf("-rollout-top and -rollout-policy: give both (the policy ranks the actions valued) or neither")
	case c.rolloutTop > 0:
		r, ok := loaded[c.rolloutPolicy]
		if !ok {
			return rolloutValuer{}, fmt.Errorf("-rollout-policy %q: no such policy in -policies", c.rolloutPolicy)
		}
		if err := r.Check(g); err != nil {
			return rolloutValuer{}, fmt.Errorf("-rollout-policy %s: %w", c.rolloutPolicy, err)
		}
		v.ranker = r
	}
	return v, nil
}
