package main

/*
#include <stdint.h>
*/
import "C"

import (
	"encoding/json"
	"unsafe"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/server/wire"
)

// Match statistics for the Python package (dgenv.stats): the figures of
// env.MatchResult's Summarize and Ratings, so that a match played in Python
// is summarised by the same code as one dgeval plays. Pure functions of
// their inputs: no handle, nothing kept.

// matchStatsJSON is what dg_match_stats writes: dgeval -json's "agents" and
// "ratings" (cmd/dgeval's summary), with the number of games.
type matchStatsJSON struct {
	Games   int                `json:"games"`
	Agents  []wire.AgentStats  `json:"agents"`
	Ratings map[string]float64 `json:"ratings"`
}

// maxStatsAgents bounds the agents of one match (the statistics are
// quadratic in them); a table has at most a handful of seats.
const maxStatsAgents = 1 << 10

// matchStats summarises games scores[k*P+i] (agent i's total in game k)
// of the agents named in agentsJSON (a JSON list of P names).
func matchStats(agentsJSON []byte, scores []int64) ([]byte, *env.Error) {
	var agents []string
	if err := json.Unmarshal(agentsJSON, &agents); err != nil {
		return nil, env.FieldError("agents", "agents: want a JSON list of names: %v", err)
	}
	p := len(agents)
	if p < 2 || p > maxStatsAgents {
		return nil, env.FieldError("agents", "agents: %d names, want 2..%d (one per seat)", p, maxStatsAgents)
	}
	if len(scores)%p != 0 {
		return nil, env.FieldError("scores", "scores: %d elements is not a whole number of games of %d seats", len(scores), p)
	}
	r := &env.MatchResult{Agents: agents, Scores: make([][]int, len(scores)/p)}
	for k := range r.Scores {
		row := make([]int, p)
		for i, x := range scores[k*p : (k+1)*p] {
			row[i] = int(x)
		}
		r.Scores[k] = row
	}
	sum := r.Summarize()
	out := matchStatsJSON{Games: len(r.Scores), Agents: wire.AgentsOf(sum), Ratings: r.Ratings()}
	b, err := json.Marshal(out)
	if err != nil { // a rating that is not finite: scores too large for float64's logarithms
		return nil, env.FieldError("scores", "scores: the ratings are not finite numbers: %v", err)
	}
	return b, nil
}

// dg_match_stats writes {"games", "agents", "ratings"} (dgeval -json's
// statistics, env.MatchResult's Summarize and Ratings) for the agents
// named by the JSON list agents (P names; seats of one name are pooled)
// and scores int64 [games, P] (games of P seats' totals). It returns the
// JSON's length (the caller calls again with a larger buffer when that is
// more than capacity), or -1 with the error in errbuf.
//
//export dg_match_stats
func dg_match_stats(agents *C.char, agentsLen C.int64_t, scores unsafe.Pointer, scoresLen C.int64_t,
	buf *C.char, capacity C.int64_t, errbuf *C.char, errcap C.int64_t) C.int64_t {
	names, e1 := view[byte]("agents", unsafe.Pointer(agents), int64(agentsLen))
	sc, e2 := view[int64]("scores", scores, int64(scoresLen))
	_, e3 := view[byte]("out", unsafe.Pointer(buf), int64(capacity))
	if e := firstError(e1, e2, e3); e != nil {
		return fail(errbuf, errcap, e)
	}
	b, e := matchStats(names, sc) // json.Unmarshal keeps nothing of names
	if e != nil {
		return fail(errbuf, errcap, e)
	}
	return putBytes(buf, capacity, b)
}

// dg_estimate95 writes env.Estimate95 of xs (float64 [n]) into out (float64
// [2]: the mean and the half-width of its normal 95% interval; NaN, NaN for
// no sample, an infinite interval for one).
//
//export dg_estimate95
func dg_estimate95(xs unsafe.Pointer, xsLen C.int64_t, out unsafe.Pointer, outLen C.int64_t, errbuf *C.char, errcap C.int64_t) C.int64_t {
	x, e1 := view[float64]("xs", xs, int64(xsLen))
	o, e2 := view[float64]("out", out, int64(outLen))
	if e := firstError(e1, e2, wantLen("out", len(o), 2, "mean, ci95")); e != nil {
		return fail(errbuf, errcap, e)
	}
	est := env.Estimate95(x)
	o[0], o[1] = est.Mean, est.CI95
	return 0
}
