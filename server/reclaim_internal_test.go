package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// countingReclaimer is a reclaimer whose free counts instead of collecting.
func countingReclaimer(threshold int64, interval time.Duration) (*reclaimer, *atomic.Int64) {
	var n atomic.Int64
	r := &reclaimer{threshold: threshold, interval: interval, free: func() { n.Add(1) }, kick: make(chan struct{}, 1)}
	return r, &n
}

// waitCount waits (up to 20 s) for *n to reach want.
func waitCount(t *testing.T, n *atomic.Int64, want int64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for n.Load() < want {
		if time.Now().After(deadline) {
			t.Fatalf("memory returned %d times, want %d", n.Load(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestMemoryIsReturnedOnceEnoughHasEnded: nothing below the threshold; once
// the ended sessions' bytes add up to it, memory is returned.
func TestMemoryIsReturnedOnceEnoughHasEnded(t *testing.T) {
	r, n := countingReclaimer(100, time.Millisecond)
	stop := make(chan struct{})
	defer close(stop)
	go r.run(stop)
	r.ended(60)
	time.Sleep(50 * time.Millisecond)
	if n.Load() != 0 {
		t.Fatalf("memory returned after 60 of a 100-byte threshold")
	}
	r.ended(60)
	waitCount(t, n, 1)
}

// TestMemoryReturnsAreRateLimited: a burst of ends returns memory at most
// once per interval, and once more after the last of them.
func TestMemoryReturnsAreRateLimited(t *testing.T) {
	const interval = 100 * time.Millisecond
	r, n := countingReclaimer(1, interval)
	stop := make(chan struct{})
	defer close(stop)
	go r.run(stop)
	start := time.Now()
	for time.Since(start) < 5*interval {
		r.ended(10)
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	if got, most := n.Load(), int64(elapsed/interval)+1; got > most {
		t.Fatalf("memory returned %d times in %v, want at most %d (once per %v)", got, elapsed, most, interval)
	}
	before := n.Load()
	r.ended(10)
	waitCount(t, n, before+1) // the last end of the burst is followed by a return
}

// TestDeletingASessionReturnsItsMemory: DELETE of a session of at least the
// threshold returns memory to the OS (issue 18: RSS stayed at five times
// the idle size for minutes after every session was deleted).
func TestDeletingASessionReturnsItsMemory(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	s, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var n atomic.Int64
	s.reclaim.free = func() { n.Add(1) }
	s.reclaim.threshold = 1 // any session
	do := func(method, path, body string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		r.Host = "localhost" // httptest's example.com is not this server's (site.go)
		r.Header.Set("Content-Type", "application/json")
		s.Handler().ServeHTTP(w, r)
		return w
	}
	w := do("POST", "/v1/sessions", `{"num_envs": 2}`)
	if w.Code != http.StatusOK {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	id := strings.Split(strings.Split(w.Body.String(), `"session":"`)[1], `"`)[0]
	if n.Load() != 0 {
		t.Fatalf("memory returned before any session ended")
	}
	if w := do("DELETE", "/v1/sessions/"+id, ""); w.Code != http.StatusOK {
		t.Fatalf("delete: %d %s", w.Code, w.Body)
	}
	waitCount(t, &n, 1)
}
