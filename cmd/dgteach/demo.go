package main

import (
	"fmt"
	"path/filepath"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/server/wire"
)

// prepareDemo sets up demonstrations by a teacher without values (the
// duel's bots): the table's bots play the game (through the game
// interface), and every decision with more than one legal action is
// labelled with the choice of the teacher, which sees only what the acting
// seat may know (bots do).
func prepareDemo(c config, reg *env.Registry, g env.Game, teacher env.Bot) (map[string]any, shardFunc, error) {
	var err error
	p := g.NumPlayers()
	if !c.tableSet {
		c.table = make([]string, p)
		for i := range c.table {
			c.table[i] = c.teacher
		}
	}
	if len(c.table) != p {
		return nil, nil, fmt.Errorf("-table names %d bots for %s's %d players", len(c.table), c.game, p)
	}
	bots := make([]env.Bot, p)
	for i, name := range c.table {
		if bots[i], err = reg.NewBot(g, name); err != nil {
			return nil, nil, fmt.Errorf("-table: %w", err)
		}
	}
	lay := g.Observation()
	meta := map[string]any{
		"format": "dgteach-v1", "players": p, "deals": 0, "obs_size": lay.Size,
		"num_actions": g.NumDistinctActions(), "table": c.table, "teacher": c.teacher, "eps": c.eps, "seed": c.seed,
		"shard_games": c.shardGames, "game": wire.GameOf(g), "orders": c.orders,
		"obs": map[string]any{"shape": []int{lay.Size}, "sections": wire.Sections(lay.Sections)},
	}
	return meta, func(i int) (int, error) { return demoShard(c, g, bots, teacher, i) }, nil
}

// demoShard plays games i*G .. (i+1)*G-1 of g and writes shard-%05d.npz:
// the acting seat's observation, mask, the teacher's choice (as action and
// as a 0/1 row q), the action played (the table's bot, the teacher's
// choice when the seat's bot is the teacher, or with chance -eps a uniform
// legal action), the game's outcome for that seat and the seat.
func demoShard(c config, g env.Game, bots []env.Bot, teacher env.Bot, i int) (int, error) {
	p, a, d := g.NumPlayers(), g.NumDistinctActions(), g.Observation().Size
	var (
		obsB, maskB []uint8
		qs          []float32
		act, played []int16
		ret         []float32
		seats       []uint8
	)
	o := make([]uint8, d)
	m := make([]uint8, a)
	legal := make([]int, 0, a)
	returns := make([]float64, p)
	for k := i * c.shardGames; k < (i+1)*c.shardGames; k++ {
		master := env.NewRNG(c.seed, uint64(k))
		s := g.NewInitialState(master.Uint64())
		rngs := make([]env.RNG, p)
		for seat := range p {
			rngs[seat] = env.NewRNG(master.Uint64(), uint64(seat))
		}
		teach := env.NewRNG(master.Uint64(), 0x7eac)
		explore := env.NewRNG(master.Uint64(), 0xe4e)
		gameStart := len(ret)
		for steps := 0; !s.IsTerminal(); steps++ {
			if steps > g.MaxGameLength() {
				return 0, fmt.Errorf("game %d: longer than MaxGameLength %d", k, g.MaxGameLength())
			}
			seat := s.CurrentPlayer()
			at := position(seat, k, p, c.orders)
			legal = s.AppendLegalActions(legal[:0])
			x := legal[0]
			if len(legal) > 1 {
				choice := teacher.Act(s, &teach)
				s.WriteObservation(o, seat)
				s.WriteMask(m)
				obsB = append(obsB, o...)
				maskB = append(maskB, m...)
				row := make([]float32, a)
				row[choice] = 1
				qs = append(qs, row...)
				act = append(act, int16(choice))
				seats = append(seats, uint8(seat))
				ret = append(ret, 0)
				switch {
				case explore.Float64() < c.eps:
					x = legal[explore.IntN(len(legal))]
				case c.table[at] == c.teacher:
					x = choice // the teacher's seat plays what it just chose
				default:
					x = bots[at].Act(s, &rngs[seat])
				}
				played = append(played, int16(x))
			}
			if err := s.ApplyAction(x); err != nil {
				return 0, fmt.Errorf("game %d: %w", k, err)
			}
		}
		s.WriteReturns(returns)
		sum := 0.0
		for _, r := range returns {
			sum += r
		}
		for j := gameStart; j < len(ret); j++ {
			me := int(seats[j])
			ret[j] = float32(env.ZeroSumReward(g.Type(), returns[me], sum, p))
		}
	}
	n := len(act)
	path := filepath.Join(c.out, fmt.Sprintf("shard-%05d.npz", i))
	return n, writeNPZ(path, []array{
		{"obs", "|u1", []int{n, d}, obsB},
		{"mask", "|u1", []int{n, a}, maskB},
		{"q", "<f4", []int{n, a}, f32Bytes(qs)},
		{"action", "<i2", []int{n}, i16Bytes(act)},
		{"played", "<i2", []int{n}, i16Bytes(played)},
		{"ret", "<f4", []int{n}, f32Bytes(ret)},
		{"seat", "|u1", []int{n}, seats},
	})
}
