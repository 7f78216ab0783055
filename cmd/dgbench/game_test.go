package main

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/davidgoliath/dgenv/env/games"
)

// TestOtherGame benchmarks the duel briefly, in process (self-play and
// against its heuristic) and over HTTP.
func TestOtherGame(t *testing.T) {
	for _, c := range []config{
		{mode: "inproc", game: "duel", envs: 16, seconds: 0.2, seed: 1, learner: "all", packing: "none"},
		{mode: "inproc", game: "duel", envs: 16, seconds: 0.2, seed: 1, learner: "1", opp: "heuristic", packing: "none"},
		{mode: "http", game: "duel", envs: 8, seconds: 0.2, seed: 1, learner: "0", opp: "heuristic", format: "msgpack", network: "tcp", packing: "none", sessions: 1},
	} {
		r, w, err := os.Pipe()
		require.NoError(t, err)
		stdout := os.Stdout
		os.Stdout = w
		err = modes[c.mode](c)
		os.Stdout = stdout
		w.Close()
		out, _ := io.ReadAll(r)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(string(out), "steps_per_sec="), "output %q", out)
		require.Contains(t, string(out), "game=duel")
		require.Contains(t, string(out), "players=2")
	}
	_, err := newVec(config{game: "chess", envs: 1}, nil)
	require.ErrorContains(t, err, "chess")
	err = runHTTP(config{mode: "http", game: "duel", envs: 1, seconds: 0.1, format: "json", network: "tcp", packing: "bits", sessions: 1})
	require.ErrorContains(t, err, "-packing bits")
}

// TestGameParams: the default game is the registry's; -players and -deals
// set the game's parameters of those names where it has them (the duel
// has neither: ignored), -param any of its parameters, checked by the game.
func TestGameParams(t *testing.T) {
	def, err := games.Default().Lookup("")
	require.NoError(t, err)
	v, err := newVec(config{envs: 2, seed: 1, players: 5, deals: 2}, nil)
	require.NoError(t, err)
	defer v.Close()
	require.Equal(t, def.Name, v.game.Type().Name)
	require.Equal(t, 5, v.game.NumPlayers())
	require.Equal(t, 2, v.game.Values()["deals"])
	require.Len(t, v.Mask(), 2*v.game.NumDistinctActions())

	d, err := newVec(config{game: "duel", envs: 2, seed: 1, players: 5, deals: 2}, nil)
	require.NoError(t, err)
	defer d.Close()
	require.Equal(t, 2, d.game.NumPlayers())

	var ps params
	require.NoError(t, ps.Set("first_dealer=2"))
	require.Error(t, ps.Set("first_dealer"))
	p, err := newVec(config{envs: 1, seed: 1, players: 3, params: ps}, nil)
	require.NoError(t, err)
	defer p.Close()
	require.Equal(t, 2, p.game.Values()["first_dealer"])
	_, err = newVec(config{envs: 1, seed: 1, params: params{"first_dealer=x"}}, nil)
	require.ErrorContains(t, err, "first_dealer=x")
	_, err = newVec(config{envs: 1, seed: 1, params: params{"no_such=1"}}, nil)
	require.ErrorContains(t, err, "no_such")
}

// TestPackedOtherGame unpacks a packed session of the duel over HTTP: the
// mask's row size comes from the spec's num_actions.
func TestPackedOtherGame(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	stdout := os.Stdout
	os.Stdout = w
	err = runHTTP(config{mode: "http", game: "duel", envs: 8, seconds: 0.2, seed: 1, learner: "0", opp: "random", format: "msgpack", network: "tcp", packing: "bits", sessions: 1})
	os.Stdout = stdout
	w.Close()
	out, _ := io.ReadAll(r)
	require.NoError(t, err)
	require.Contains(t, string(out), "game=duel")
	require.Contains(t, string(out), "packing=bits")
}
