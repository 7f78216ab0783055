package main

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
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
	err = runHTTP(config{mode: "http", game: "duel", envs: 1, seconds: 0.1, format: "msgpack", network: "tcp", packing: "bits", sessions: 1})
	require.ErrorContains(t, err, "-packing bits")
}
