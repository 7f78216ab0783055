package card

import (
	"fmt"

	"github.com/davidgoliath/dgenv/env"
)

// PlayGame plays one whole game with bots[seat] at each seat. The deals come
// from dealSeed alone (so the same dealSeed replays the same deals under any
// seating) and the bots' randomness from botSeed. It returns the totals.
func PlayGame(g *Game, bots []Bot, dealSeed, botSeed uint64) ([]int, error) {
	if len(bots) != g.params.Players {
		return nil, fmt.Errorf("%d bots for %d seats", len(bots), g.params.Players)
	}
	s := &State{game: g, rng: NewRNG(dealSeed, 0)}
	s.newGame()
	var rngs [MaxPlayers]RNG
	for i := range bots {
		rngs[i] = NewRNG(botSeed, uint64(i))
	}
	for !s.terminal {
		p := s.current()
		a := bots[p].Act(s, &rngs[p])
		if !s.IsLegal(a) {
			return nil, fmt.Errorf("bot at seat %d chose illegal action %d (legal %v)", p, a, s.LegalActions())
		}
		s.apply(a)
	}
	return s.Totals(), nil
}

// PlayMatch plays a match of the card game with params on all cores. The result depends only on the
// configuration, never on the number of workers.
func PlayMatch(params Params, cfg env.MatchConfig) (*env.MatchResult, error) {
	g, err := NewGame(params)
	if err != nil {
		return nil, err
	}
	p := g.params.Players
	if len(cfg.Agents) != p {
		return nil, fmt.Errorf("%d agents for %d seats", len(cfg.Agents), p)
	}
	bots := make([]Bot, p)
	for i, name := range cfg.Agents {
		if bots[i], err = NewBot(name); err != nil {
			return nil, err
		}
		if err := checkBot(name, bots[i], g); err != nil {
			return nil, err
		}
	}
	if cfg.Games < 1 {
		return nil, fmt.Errorf("games = %d: must be >= 1", cfg.Games)
	}
	seated := func(rot int) []Bot {
		out := make([]Bot, p)
		for i := range p {
			out[env.SeatOf(i, rot, p)] = bots[i]
		}
		return out
	}
	return env.RunMatch(cfg, p, func(rot int, dealSeed, botSeed uint64) ([]int, error) {
		return PlayGame(g, seated(rot), dealSeed, botSeed)
	})
}
