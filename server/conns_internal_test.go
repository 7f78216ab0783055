package server

import (
	"net/http"
	"testing"
	"time"
)

// TestVictimIsTheLowestRankLongestInItsState: a full server closes idle
// untrusted connections first, then ones with no full request yet, then
// idle trusted ones, the longest in its state first within a rank, and
// never one with a request in flight.
func TestVictimIsTheLowestRankLongestInItsState(t *testing.T) {
	t0 := time.Unix(1000, 0)
	conn := func(name string, state http.ConnState, trusted bool, age int) *trackedConn {
		c := &trackedConn{addr: name, state: state, since: t0.Add(-time.Duration(age) * time.Second)}
		c.trusted.Store(trusted)
		return c
	}
	tr := newConnTracker(nil, 10, 10)
	add := func(cs ...*trackedConn) {
		for _, c := range cs {
			tr.conns[c] = struct{}{}
		}
	}
	busy := conn("busy", http.StateActive, false, 100)
	trustedOld := conn("trusted-old", http.StateIdle, true, 90)
	newer := conn("new", http.StateNew, false, 50)
	idleYoung := conn("idle-young", http.StateIdle, false, 10)
	idleOld := conn("idle-old", http.StateIdle, false, 20)
	add(busy, trustedOld, newer, idleYoung, idleOld)
	for _, want := range []*trackedConn{idleOld, idleYoung, newer, trustedOld, nil} {
		got := tr.victim("")
		if got != want {
			name := func(c *trackedConn) string {
				if c == nil {
					return "none"
				}
				return c.addr
			}
			t.Fatalf("victim = %s, want %s", name(got), name(want))
		}
		if got != nil {
			tr.drop(got)
		}
	}
	if got := tr.victim("busy"); got != nil {
		t.Fatalf("victim(busy) = %s, want none (a request in flight)", got.addr)
	}
}
