package policy

import (
	"fmt"

	"github.com/davidgoliath/dgenv/env"
)

// GuidedSearch is the search a policy guides in a game whose "search" bot is
// the generic env.Search (the duel's): "search:policy:<name>". It is that
// search, with its worlds, margin and playout bot, except for the action it
// keeps: env.Search plays its playout bot's own choice unless another action
// gains more than Z standard errors over it in the same worlds; here the
// kept choice is the policy's (greedy). The playouts stay the search's
// (the duel: the heuristic, thousands of times cheaper a move than the
// network), so it costs what the search costs, plus one forward pass.
//
// The policy's choice is env.Search's Keep.
type GuidedSearch struct {
	Search env.Search // the game's search: its Rollout plays the playouts
	Policy Bot        // chooses the action kept unless another is clearly better
}

// Act implements env.Bot: the search's decision with the policy's action as
// the one kept. Like env.Search it is deterministic given rng and safe for
// concurrent use.
func (g *GuidedSearch) Act(s env.State, rng *env.RNG) int {
	sr := g.Search
	sr.Keep = &g.Policy
	return sr.Act(s, rng)
}

// Costly implements env.Costly: a decision costs a search's.
func (*GuidedSearch) Costly() bool { return true }

// WithSamples implements env.Sampler: the same guided search with n worlds.
func (g *GuidedSearch) WithSamples(n int) env.Bot {
	c := *g
	c.Search.Worlds = n
	return &c
}

// guidedSearchFactory makes "search:policy:<name>" for a game whose "search"
// bot in reg is an *env.Search; for another game it reports false.
func guidedSearchFactory(reg *env.Registry, game string, p *Policy) (env.BotFactory, bool) {
	typ, err := reg.Lookup(game)
	if err != nil {
		return nil, false
	}
	g, err := typ.Default()
	if err != nil {
		return nil, false
	}
	if b, err := reg.NewBot(g, "search"); err != nil {
		return nil, false
	} else if _, ok := b.(*env.Search); !ok {
		return nil, false
	}
	return func(g env.Game) (env.Bot, error) {
		if err := p.Check(g); err != nil {
			return nil, err
		}
		b, err := reg.NewBot(g, "search")
		if err != nil {
			return nil, err
		}
		s, ok := b.(*env.Search)
		if !ok {
			return nil, fmt.Errorf("search:policy:%s: the game's search is a %T, not an env.Search", p.Name(), b)
		}
		return &GuidedSearch{Search: *s, Policy: Bot{Policy: p, Greedy: true}}, nil
	}, true
}
