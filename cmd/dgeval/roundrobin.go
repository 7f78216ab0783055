package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/davidgoliath/dgenv/env"
)

// robin is a round robin's results: score[i][j][seat] is agent i's
// score per game at seat against agent j (i != j), from their one
// duplicate match.
type robin struct {
	agents []string
	games  int // games a pair
	score  [][][2]env.Estimate
	wdl    [][][2][3]int // wins, draws, losses, likewise
}

// roundRobin plays every pair of cfg.Agents in a duplicate match of
// cfg.Games games of a two-player game (the same deal seeds for every
// pair).
func roundRobin(reg *env.Registry, name string, set map[string]bool, players, deals int, params string, cfg env.MatchConfig) (*robin, error) {
	agents := cfg.Agents
	if len(agents) < 2 {
		return nil, fmt.Errorf("-roundrobin needs at least 2 agents, got %q", strings.Join(agents, ","))
	}
	for i, a := range agents {
		if a == "" || slices.Contains(agents[:i], a) {
			return nil, fmt.Errorf("-roundrobin: agent %q is empty or named twice", a)
		}
	}
	g, err := newGame(reg, name, set, players, deals, params)
	if err != nil {
		return nil, err
	}
	if g.NumPlayers() != 2 {
		return nil, fmt.Errorf("-roundrobin plays two-player games; this %s has %d players", name, g.NumPlayers())
	}
	n := len(agents)
	rr := &robin{agents: agents, score: make([][][2]env.Estimate, n), wdl: make([][][2][3]int, n)}
	for i := range n {
		rr.score[i] = make([][2]env.Estimate, n)
		rr.wdl[i] = make([][2][3]int, n)
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			c := cfg
			c.Agents = []string{agents[i], agents[j]}
			c.Duplicate = true
			res, err := env.PlayMatchOf(reg, g, c)
			if err != nil {
				return nil, fmt.Errorf("%s against %s: %w", agents[i], agents[j], err)
			}
			rr.games = len(res.Scores)
			for _, st := range res.BySeat() {
				me, opp := i, j
				if st.Agent == 1 {
					me, opp = j, i
				}
				rr.score[me][opp][st.Seat] = st.Score
				rr.wdl[me][opp][st.Seat] = [3]int{st.Wins, st.Draws, st.Games - st.Wins - st.Draws}
			}
		}
	}
	return rr, nil
}

// write prints the table: a row per agent and seat, a column per
// opponent, each cell the row agent's score per game with its 95%
// interval and its wins-draws-losses.
func (rr *robin) write(w io.Writer) {
	fmt.Fprint(w, "| agent | seat |")
	for _, a := range rr.agents {
		fmt.Fprintf(w, " against %s |", a)
	}
	fmt.Fprint(w, "\n|---|---:|")
	for range rr.agents {
		fmt.Fprint(w, "---:|")
	}
	fmt.Fprintln(w)
	for i, a := range rr.agents {
		for seat := range 2 {
			fmt.Fprintf(w, "| %s | %d |", a, seat)
			for j := range rr.agents {
				if i == j {
					fmt.Fprint(w, " · |")
					continue
				}
				e, r := rr.score[i][j][seat], rr.wdl[i][j][seat]
				fmt.Fprintf(w, " %+.2f ± %.2f (%d-%d-%d) |", e.Mean, e.CI95, r[0], r[1], r[2])
			}
			fmt.Fprintln(w)
		}
	}
}
