package env_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/davidgoliath/dgenv/env"
)

// BySeat follows PlayMatch's rotation: in game k agent i sat at seat (i+k) mod P.
func TestBySeatSplitsByTheSeatHeld(t *testing.T) {
	r := &env.MatchResult{
		Agents: []string{"a", "b"},
		Scores: [][]int{
			{1, -1}, // game 0: a at seat 0 wins
			{0, 0},  // game 1: a at seat 1, a draw
			{1, -1}, // game 2: a at seat 0 wins
			{-1, 1}, // game 3: a at seat 1 loses
		},
		Seeds: []uint64{1, 1, 2, 2},
	}
	got := r.BySeat()
	require.Len(t, got, 4)
	type row struct{ agent, seat, games, wins, draws int }
	var rows []row
	for _, s := range got {
		assert.Equal(t, r.Agents[s.Agent], s.Name)
		rows = append(rows, row{s.Agent, s.Seat, s.Games, s.Wins, s.Draws})
	}
	assert.Equal(t, []row{{0, 0, 2, 2, 0}, {0, 1, 2, 0, 1}, {1, 0, 2, 1, 1}, {1, 1, 2, 0, 0}}, rows)
	assert.Equal(t, 1.0, got[0].Score.Mean)
	assert.Equal(t, -0.5, got[1].Score.Mean)
	assert.Equal(t, 0.5, got[2].Score.Mean)
	assert.Equal(t, -1.0, got[3].Score.Mean)
}
