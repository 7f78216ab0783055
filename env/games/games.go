// Package games builds the registry of the games this module ships: the
// card game (david_goliath, the default) and the duel, each with its bots.
// It is wiring, not a global: every call returns a new Registry. This is
// the one place that names the games: server/, cmd/ and python/ reach them
// through the registry only.
//
// A build with the tag testgame (make build's bin/*-testgame binaries and
// libdgenv-testgame.so) also registers the test games (testgame.go): the
// proof that a game plugs in with no line of its own outside its package
// and this one.
package games

import (
	"maps"
	"slices"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
	"github.com/davidgoliath/dgenv/env/duel"
)

// registrars register one game each, in the registry's order (the first
// is the default game).
var registrars = []func(*env.Registry) error{
	func(r *env.Registry) error { return register(r, card.SpielType(), card.Bots()) },
	func(r *env.Registry) error {
		return register(r, duel.SpielType(), withSearch(duel.Bots(), DuelSearch(), "heuristic"))
	},
}

// DuelSearch is the duel's search bot before its playout bot is set: its
// budget (worlds a decision), margin, playout horizon (15 actions, about 5
// rounds, then the wounds' estimate) and inference (up to 16 candidates a
// world, for one in which the heuristic explains the opponent's plays
// since its last draw): docs/duel.md, "Bots and their strength".
func DuelSearch() env.Search { return env.Search{Worlds: 128, Z: 2, Horizon: 15, Infer: 16} }

// withSearch adds to a game's bots the generic search (env.Search) as
// "search", cfg with its playouts played by the bot named rollout.
func withSearch(bots map[string]env.BotFactory, cfg env.Search, rollout string) map[string]env.BotFactory {
	bots["search"] = env.SearchFactory(cfg, bots[rollout])
	return bots
}

// Default returns a new registry of the shipped games: the card game (the
// default) with package card's bots (random, heuristic, search) and the
// duel with its own (random, heuristic) and the generic search (env.Search,
// heuristic playouts, DuelSearch's budget), then the test games in a testgame
// build. Trained policies are added by whoever loads them
// (policy.Register).
func Default() *env.Registry {
	r := env.NewRegistry()
	for _, add := range registrars {
		if err := add(r); err != nil {
			panic(err) // a wiring bug: the names are this package's constants
		}
	}
	return r
}

// register adds t and its bots (in name order, so a registry's contents do
// not depend on map order).
func register(r *env.Registry, t *env.Type, bots map[string]env.BotFactory) error {
	if err := r.Register(t); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(bots)) {
		if err := r.RegisterBot(t.Name, name, bots[name]); err != nil {
			return err
		}
	}
	return nil
}
