package server_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/davidgoliath/dgenv/server"
)

// TestSequentialClientIsNeverBusy is a client that opens a new connection
// for every request (keep-alive off, as urllib or curl in a loop): each
// request is sent only after the previous answer has fully arrived, so none
// may ever be refused as busy. The handler used to release its claim after
// writing the answer, so the next request could overtake the release.
func TestSequentialClientIsNeverBusy(t *testing.T) {
	srv := newServer(t)
	url, _ := serve(t, srv)
	c := &client{tb: t, base: url, hc: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
	t.Cleanup(c.hc.CloseIdleConnections)
	const n = 2048 // a 1.4 MB answer: its last write blocks until the client reads it, and the handler resumes later
	id := c.create(map[string]any{"num_envs": n, "seed": 3, "game": map[string]any{"players": 3, "deals": 1}}).Session
	b := c.reset(id, map[string]any{"seed": 3})
	rounds := 400
	if testing.Short() {
		rounds = 100
	}
	for r := range rounds {
		a := c.do("POST", "/v1/sessions/"+id+"/step", ctMsgpack, stepBody(t, legalActions(b.Mask.Data, n, func(i, k int) int { return (r + i) % k })))
		require.Equal(t, http.StatusOK, a.Status, "round %d: step: %s", r, a.Body)
		decodeAnswer(t, a, &b)
		g := c.do("GET", "/v1/sessions/"+id+"/envs/0/record", "", nil)
		require.Equal(t, http.StatusOK, g.Status, "round %d: record: %s", r, g.Body)
	}
}

// TestConcurrentRequestWaitsForTheClaim sends a GET while a step holds the
// session (its body arrives slowly): the GET waits and is answered once the
// step is done, within limits.busy_wait.
func TestConcurrentRequestWaitsForTheClaim(t *testing.T) {
	c := newClient(t, func(c *server.Config) { c.Limits.BusyWait = time.Minute })
	id := c.create(map[string]any{"num_envs": 2, "seed": 5}).Session
	first := c.reset(id, map[string]any{"seed": 5})
	body := stepBody(t, legalActions(first.Mask.Data, 2, func(i, k int) int { return 0 }))
	pr, pw := io.Pipe()
	req := httptest.NewRequest("POST", "/v1/sessions/"+id+"/step", pr)
	req.Header.Set("Content-Type", ctMsgpack)
	req.ContentLength = -1
	w := httptest.NewRecorder()
	var wg sync.WaitGroup
	wg.Go(func() { c.h.ServeHTTP(w, req) })
	_, err := pw.Write(body[:3]) // the step has claimed the session once its body starts arriving
	require.NoError(t, err)
	got := make(chan answer, 1)
	go func() { got <- c.do("GET", "/v1/sessions/"+id, "", nil) }()
	select {
	case a := <-got:
		t.Fatalf("GET answered %d while the step held the session: %s", a.Status, a.Body)
	case <-time.After(50 * time.Millisecond):
	}
	_, err = pw.Write(body[3:])
	require.NoError(t, err)
	require.NoError(t, pw.Close())
	wg.Wait()
	require.Equal(t, http.StatusOK, w.Code, "%s", w.Body)
	a := <-got
	require.Equal(t, http.StatusOK, a.Status, "%s", a.Body)
}
