package server_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
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
	rounds := 100
	if testing.Short() {
		rounds = 20
	}
	for r := range rounds {
		a := c.do("POST", "/v1/sessions/"+id+"/step", ctMsgpack, stepBody(t, legalActions(b.Mask.Data, n, func(i, k int) int { return (r + i) % k })))
		require.Equal(t, http.StatusOK, a.Status, "round %d: step: %s", r, a.Body)
		decodeAnswer(t, a, &b)
		g := c.do("GET", "/v1/sessions/"+id+"/envs/0/record", "", nil)
		require.Equal(t, http.StatusOK, g.Status, "round %d: record: %s", r, g.Body)
	}
}

// lastByteWriter is a ResponseWriter that reports when the whole answer
// (Content-Length bytes) has been written, then holds the handler for a
// while: a client has its answer, the handler has not returned yet.
type lastByteWriter struct {
	*httptest.ResponseRecorder
	written int
	done    chan struct{}
	hold    time.Duration
}

func (w *lastByteWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseRecorder.Write(b)
	w.written += n
	if want := w.Header().Get("Content-Length"); want != "" && want == strconv.Itoa(w.written) {
		close(w.done)
		time.Sleep(w.hold) // the scheduler has not resumed the handler yet
	}
	return n, err
}

// TestNextRequestAfterTheLastByteIsServed is the race above made certain:
// the next request arrives after the client has every byte of the answer
// but before the handler has returned. It must be served, not refused.
func TestNextRequestAfterTheLastByteIsServed(t *testing.T) {
	c := newClient(t)
	id := c.create(map[string]any{"num_envs": 4, "seed": 2}).Session
	b := c.reset(id, map[string]any{"seed": 2})
	for _, next := range []struct{ method, path string }{
		{"GET", "/v1/sessions/" + id + "/envs/0/record"},
		{"GET", "/v1/sessions/" + id},
		{"POST", "/v1/sessions/" + id + "/step"},
	} {
		req := httptest.NewRequest("POST", "http://localhost/v1/sessions/"+id+"/step", bytes.NewReader(stepBody(t, legalActions(b.Mask.Data, 4, func(i, k int) int { return 0 }))))
		req.Header.Set("Content-Type", ctMsgpack)
		w := &lastByteWriter{ResponseRecorder: httptest.NewRecorder(), done: make(chan struct{}), hold: 100 * time.Millisecond}
		served := make(chan struct{})
		go func() { c.h.ServeHTTP(w, req); close(served) }()
		<-w.done
		var body []byte
		if next.method == "POST" {
			var nb batch
			decodeAnswer(t, answer{200, w.Header(), w.Body.Bytes()}, &nb)
			body = stepBody(t, legalActions(nb.Mask.Data, 4, func(i, k int) int { return 0 }))
		}
		a := c.do(next.method, next.path, ctMsgpack, body)
		require.Equal(t, http.StatusOK, a.Status, "%s %s sent after the last byte: %s", next.method, next.path, a.Body)
		<-served
		if next.method == "POST" {
			decodeAnswer(t, a, &b)
		} else {
			decodeAnswer(t, answer{200, w.Header(), w.Body.Bytes()}, &b)
		}
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
	req := httptest.NewRequest("POST", "http://localhost/v1/sessions/"+id+"/step", pr)
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

// TestSeqRules: a batch carries the session's seq; a request with the
// current seq applies, one with the previous seq and the same content
// answers the current batch again, anything else is 409 stale_seq naming
// the current seq; without seq a request applies as always. JSON and
// msgpack alike.
func TestSeqRules(t *testing.T) {
	c := newClient(t)
	id := c.create(map[string]any{"num_envs": 3, "seed": 2}).Session
	type seqd struct {
		Seq int64 `json:"seq"`
	}
	seqOf := func(a answer) int64 {
		t.Helper()
		require.Equal(t, http.StatusOK, a.Status, "%s", a.Body)
		var s seqd
		decodeAnswer(t, a, &s)
		return s.Seq
	}
	get := func() int64 { return seqOf(c.do("GET", "/v1/sessions/"+id, "", nil)) }
	require.Equal(t, int64(0), get(), "a new session has answered no batch")
	stale := func(a answer, cur int64) {
		t.Helper()
		requireError(t, a, http.StatusConflict, "stale_seq")
		var e struct {
			Error struct {
				Seq *int64 `json:"seq"`
			} `json:"error"`
		}
		decodeAnswer(t, a, &e)
		require.NotNil(t, e.Error.Seq)
		require.Equal(t, cur, *e.Error.Seq)
	}
	for _, f := range []struct {
		name string
		ct   string
		enc  func(testing.TB, any) []byte
	}{{"msgpack", ctMsgpack, mp}, {"json", ctJSON, js}} {
		t.Run(f.name, func(t *testing.T) {
			cur := get()
			r := c.do("POST", "/v1/sessions/"+id+"/reset", f.ct, f.enc(t, map[string]any{"seed": 4, "seq": cur}))
			require.Equal(t, cur+1, seqOf(r))
			cur++
			var b batch
			decodeAnswer(t, r, &b)
			// A retry of that reset (same seed) answers it again; another seed, or none, is stale.
			again := c.do("POST", "/v1/sessions/"+id+"/reset", f.ct, f.enc(t, map[string]any{"seed": 4, "seq": cur - 1}))
			require.Equal(t, r.Body, again.Body)
			stale(c.do("POST", "/v1/sessions/"+id+"/reset", f.ct, f.enc(t, map[string]any{"seed": 5, "seq": cur - 1})), cur)
			stale(c.do("POST", "/v1/sessions/"+id+"/reset", f.ct, f.enc(t, map[string]any{"seq": cur - 1})), cur)
			acts := legalActions(b.Mask.Data, 3, func(i, k int) int { return 0 })
			other := legalActions(b.Mask.Data, 3, func(i, k int) int { return 1 })
			stepWith := func(a []int32, seq int64) answer {
				return c.do("POST", "/v1/sessions/"+id+"/step", f.ct, f.enc(t, map[string]any{"actions": a, "seq": seq}))
			}
			// A step retried as a reset is stale (another route).
			s1 := stepWith(acts, cur)
			require.Equal(t, cur+1, seqOf(s1))
			cur++
			stale(c.do("POST", "/v1/sessions/"+id+"/reset", f.ct, f.enc(t, map[string]any{"seed": 4, "seq": cur - 1})), cur)
			require.Equal(t, s1.Body, stepWith(acts, cur-1).Body, "a retry answers the same batch")
			stale(stepWith(other, cur-1), cur) // other actions with the old seq
			stale(stepWith(acts, cur-2), cur)  // older
			stale(stepWith(acts, cur+1), cur)  // from the future
			stale(stepWith(acts, -1), cur)     // never valid
			require.Equal(t, cur, get(), "refusals change nothing")
			// Without seq a request applies as it always did.
			decodeAnswer(t, s1, &b)
			next := c.do("POST", "/v1/sessions/"+id+"/step", f.ct, f.enc(t, map[string]any{"actions": legalActions(b.Mask.Data, 3, func(i, k int) int { return 0 })}))
			require.Equal(t, cur+1, seqOf(next))
			requireError(t, c.do("POST", "/v1/sessions/"+id+"/step", f.ct, f.enc(t, map[string]any{"actions": acts, "seq": "7"})), 400, "bad_request")
			requireError(t, c.do("POST", "/v1/sessions/"+id+"/reset", f.ct, f.enc(t, map[string]any{"seq": 1.5})), 400, "bad_request")
		})
	}
}

// TestCreateRequestID: a create repeating a live session's request_id with
// the same settings answers that session; other settings are a conflict;
// the mapping dies with the session.
func TestCreateRequestID(t *testing.T) {
	srv := newServer(t)
	c := &client{tb: t, h: srv.Handler()}
	req := map[string]any{"num_envs": 2, "request_id": "a-Z_0.9"}
	first := c.create(req)
	for _, f := range []struct {
		ct  string
		enc func(testing.TB, any) []byte
	}{{ctMsgpack, mp}, {ctJSON, js}} {
		a := c.do("POST", "/v1/sessions", f.ct, f.enc(t, req))
		require.Equal(t, http.StatusOK, a.Status, "%s", a.Body)
		var got created
		decodeAnswer(t, a, &got)
		require.Equal(t, first, got, "same session, same spec (its random seed included)")
		e := requireError(t, c.do("POST", "/v1/sessions", f.ct, f.enc(t, map[string]any{"num_envs": 3, "request_id": "a-Z_0.9"})), http.StatusConflict, "conflict")
		require.NotContains(t, e.Error.Message, first.Session, "a conflict never reveals the session")
	}
	n, _ := server.Counts(srv)
	require.Equal(t, 1, n)
	// Another request_id, or none, is another session.
	require.NotEqual(t, first.Session, c.create(map[string]any{"num_envs": 2, "request_id": "b"}).Session)
	require.NotEqual(t, first.Session, c.create(map[string]any{"num_envs": 2}).Session)
	// Deleted: the request_id is free again.
	require.Equal(t, http.StatusOK, c.do("DELETE", "/v1/sessions/"+first.Session, "", nil).Status)
	again := c.create(map[string]any{"num_envs": 3, "request_id": "a-Z_0.9"})
	require.NotEqual(t, first.Session, again.Session)
	for _, bad := range []any{"", "has space", "ü", strings.Repeat("x", 65), 7} {
		requireError(t, c.do("POST", "/v1/sessions", ctMsgpack, mp(t, map[string]any{"request_id": bad})), 400, "bad_request")
		requireError(t, c.do("POST", "/v1/sessions", ctJSON, js(t, map[string]any{"request_id": bad})), 400, "bad_request")
	}
}
