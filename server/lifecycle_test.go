package server_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/davidgoliath/dgenv/server"
)

func TestIdleSessionsExpire(t *testing.T) {
	c := newClient(t, func(c *server.Config) {
		c.Limits.SessionTTL = 50 * time.Millisecond
		c.Limits.SweepInterval = 5 * time.Millisecond
	})
	idle := c.create(map[string]any{"num_envs": 2}).Session
	held := c.create(map[string]any{"num_envs": 2, "seed": 1}).Session
	b := c.reset(held, map[string]any{"seed": 1})
	body := stepBody(t, legalActions(b.Mask.Data, 2, func(i, k int) int { return 0 }))

	// Hold a step on "held" in flight for several TTLs.
	pr, pw := io.Pipe()
	req := httptest.NewRequest("POST", "http://localhost/v1/sessions/"+held+"/step", pr)
	req.Header.Set("Content-Type", ctMsgpack)
	req.ContentLength = -1
	w := httptest.NewRecorder()
	var wg sync.WaitGroup
	wg.Go(func() { c.h.ServeHTTP(w, req) })
	_, err := pw.Write(body[:1])
	require.NoError(t, err)

	// Watch the metric, not the session: a GET would keep it alive.
	waitFor(t, "the idle session to expire", func() bool {
		return strings.Contains(string(c.do("GET", "/metrics", "", nil).Body), "dgserver_sessions_expired_total 1\n")
	})
	requireError(t, c.do("GET", "/v1/sessions/"+idle, "", nil), http.StatusNotFound, "not_found")
	time.Sleep(200 * time.Millisecond) // four TTLs with the step in flight
	assert.Equal(t, http.StatusConflict, c.do("GET", "/v1/sessions/"+held, "", nil).Status,
		"the session with a request in flight was evicted")
	_, err = pw.Write(body[1:])
	require.NoError(t, err)
	require.NoError(t, pw.Close())
	wg.Wait()
	assert.Equal(t, http.StatusOK, w.Code, "%s", w.Body)
	var next batch
	decodeAnswer(t, answer{w.Code, w.Header(), w.Body.Bytes()}, &next)
	c.step(held, legalActions(next.Mask.Data, 2, func(i, k int) int { return 0 }))
}

// TestGracefulShutdown holds a request in flight, starts the shutdown and
// checks that readiness turns 503, the request finishes, and Serve returns.
func TestGracefulShutdown(t *testing.T) {
	srv := newServer(t, func(c *server.Config) {
		c.Shutdown.DrainDelay = 300 * time.Millisecond
		c.Shutdown.Timeout = 10 * time.Second
	})
	url, stop := serve(t, srv)
	c := &client{tb: t, base: url}
	id := c.create(map[string]any{"num_envs": 2, "seed": 1}).Session
	b := c.reset(id, map[string]any{"seed": 1})
	body := stepBody(t, legalActions(b.Mask.Data, 2, func(i, k int) int { return 1 % k }))

	held := holdStep(t, c, id, body[:2])

	stopped := make(chan error, 1)
	start := time.Now()
	go func() { stopped <- stop() }()
	waitFor(t, "readiness to answer 503", func() bool {
		return c.do("GET", "/v1/readyz", "", nil).Status == http.StatusServiceUnavailable
	})
	assert.Equal(t, http.StatusOK, c.do("GET", "/v1/healthz", "", nil).Status, "alive while draining")
	_, err := held.pw.Write(body[2:])
	require.NoError(t, err)
	require.NoError(t, held.pw.Close())
	r := <-held.done
	require.NoError(t, r.err)
	assert.Equal(t, http.StatusOK, r.status, "the in-flight step finished")
	select {
	case err := <-stopped:
		assert.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("Serve did not return")
	}
	t.Logf("shutdown took %v", time.Since(start))
	_, err = http.Get(url + "/v1/healthz")
	assert.Error(t, err, "still listening after shutdown")
}

func TestShutdownCutsOffRequestsAfterTheTimeout(t *testing.T) {
	srv := newServer(t, func(c *server.Config) { c.Shutdown.Timeout = 100 * time.Millisecond })
	url, stop := serve(t, srv)
	c := &client{tb: t, base: url}
	id := c.create(map[string]any{}).Session
	held := holdStep(t, c, id, []byte{0x81})
	defer held.pw.Close()
	done := make(chan error, 1)
	go func() { done <- stop() }()
	select {
	case err := <-done:
		assert.ErrorContains(t, err, "cut off")
	case <-time.After(20 * time.Second):
		t.Fatal("Serve did not return after its shutdown timeout")
	}
}

func TestSlowClientIsCutOffAtReadHeaderTimeout(t *testing.T) {
	srv := newServer(t, func(c *server.Config) { c.HTTP.ReadHeaderTimeout = 200 * time.Millisecond })
	url, _ := serve(t, srv)
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte("GET /v1/healthz HTTP/1.1\r\nHost: x\r\n")) // never finishes its headers
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
	start := time.Now()
	resp, err := io.ReadAll(conn)
	el := time.Since(start)
	var ne net.Error
	if err != nil && errors_As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server kept a slow client's connection open for %v", el)
	}
	// The connection is closed (with at most a 408 answer), never served.
	assert.NotContains(t, string(resp), "200 OK")
	t.Logf("cut off after %v: %q", el, resp)
}

// TestConcurrentSessionsSweeperAndShutdown runs many sessions stepping at
// once over loopback while the sweeper expires idle ones, then shuts the
// server down under load. Meant for -race: it checks for no 5xx and no
// unexpected errors, never for speed.
func TestConcurrentSessionsSweeperAndShutdown(t *testing.T) {
	srv := newServer(t, func(c *server.Config) {
		// Long enough that a busy worker's requests never leave its session
		// idle that long, even on a loaded 2-core machine under -race.
		c.Limits.SessionTTL = 1500 * time.Millisecond
		c.Limits.SweepInterval = 5 * time.Millisecond
		c.Shutdown.Timeout = 10 * time.Second
	})
	url, stop := serve(t, srv)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	const workers = 12
	var (
		wg       sync.WaitGroup
		steps    atomic.Int64
		stopping atomic.Bool
	)
	errc := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			c := &client{tb: t, base: url, hc: hc}
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for round := 0; !stopping.Load(); round++ {
				if err := worker(c, hc, url, rng, &steps, w%3 == 0); err != nil {
					if stopping.Load() {
						return // the server went away under us: expected
					}
					errc <- fmt.Errorf("worker %d round %d: %w", w, round, err)
					return
				}
			}
		})
	}
	mc := &client{tb: t, base: url, hc: hc}
	waitFor(t, "some steps and an expired session", func() bool {
		if len(errc) > 0 {
			return true
		}
		return steps.Load() > 200 && !strings.Contains(string(mc.do("GET", "/metrics", "", nil).Body), "dgserver_sessions_expired_total 0\n")
	})
	stopping.Store(true)
	require.NoError(t, stop())
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	t.Logf("%d env-steps", steps.Load())
}

// worker creates a session, plays a few steps (pausing past the TTL when
// idle is set, so the sweeper takes the session), and deletes it.
func worker(c *client, hc *http.Client, url string, rng *rand.Rand, steps *atomic.Int64, idle bool) error {
	post := func(path string, body []byte) (int, []byte, error) {
		resp, err := hc.Post(url+path, ctMsgpack, bytes.NewReader(body))
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, b, err
	}
	n := 1 + rng.IntN(8)
	status, body, err := post("/v1/sessions", mp(c.tb, map[string]any{"num_envs": n, "seed": rng.Uint64() >> 1}))
	if err != nil || status != 200 {
		return fmt.Errorf("create: %d %q %v", status, body, err)
	}
	var s created
	decodeAnswer(c.tb, answer{status, http.Header{"Content-Type": {ctMsgpack}}, body}, &s)
	status, body, err = post("/v1/sessions/"+s.Session+"/reset", mp(c.tb, map[string]any{}))
	if err != nil || status != 200 {
		return fmt.Errorf("reset: %d %q %v", status, body, err)
	}
	var b batch
	decodeAnswer(c.tb, answer{status, http.Header{"Content-Type": {ctMsgpack}}, body}, &b)
	for range 3 + rng.IntN(10) {
		acts := legalActions(b.Mask.Data, n, func(i, k int) int { return rng.IntN(k) })
		status, body, err = post("/v1/sessions/"+s.Session+"/step", stepBody(c.tb, acts))
		if err != nil || status != 200 {
			return fmt.Errorf("step: %d %q %v", status, body, err)
		}
		b = batch{}
		decodeAnswer(c.tb, answer{status, http.Header{"Content-Type": {ctMsgpack}}, body}, &b)
		steps.Add(int64(n))
	}
	if idle {
		time.Sleep(2200 * time.Millisecond) // past the TTL: the sweeper takes the session
		status, body, err = post("/v1/sessions/"+s.Session+"/reset", mp(c.tb, map[string]any{}))
		if err != nil || (status != 404 && status != 200) {
			return fmt.Errorf("reset after idling: %d %q %v", status, body, err)
		}
		return nil
	}
	req, _ := http.NewRequest("DELETE", url+"/v1/sessions/"+s.Session, nil)
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != 200 && resp.StatusCode != 404 {
		return fmt.Errorf("delete: %d", resp.StatusCode)
	}
	return nil
}

// TestLoadOnLoopback steps one session from a Go client for a fixed short
// time and reports latency percentiles; it requires zero errors and makes
// no claim about speed.
func TestLoadOnLoopback(t *testing.T) {
	srv := newServer(t)
	url, _ := serve(t, srv)
	c := &client{tb: t, base: url}
	const n = 64
	id := c.create(map[string]any{"num_envs": n, "seed": 3}).Session
	b := c.reset(id, map[string]any{"seed": 3})
	hc := freshClient(t)
	rng := rand.New(rand.NewPCG(3, 3))
	var lat []time.Duration
	deadline := time.Now().Add(500 * time.Millisecond)
	errors := 0
	for time.Now().Before(deadline) {
		acts := legalActions(b.Mask.Data, n, func(i, k int) int { return rng.IntN(k) })
		t0 := time.Now()
		resp, err := hc.Post(url+"/v1/sessions/"+id+"/step", ctMsgpack, bytes.NewReader(stepBody(t, acts)))
		if err != nil {
			errors++
			break
		}
		body, err := io.ReadAll(bufio.NewReader(resp.Body))
		resp.Body.Close()
		lat = append(lat, time.Since(t0))
		if err != nil || resp.StatusCode != 200 {
			errors++
			break
		}
		b = batch{}
		decodeAnswer(t, answer{200, resp.Header, body}, &b)
	}
	require.Zero(t, errors)
	require.NotEmpty(t, lat)
	slices.Sort(lat)
	t.Logf("%d requests of %d envs: p50 %v p99 %v", len(lat), n, lat[len(lat)/2], lat[len(lat)*99/100])
}

// freshClient is an HTTP client with its own connection pool.
// heldStep is a step request whose body is only partly sent, so the server
// holds the session's claim until the rest arrives or the connection ends.
type heldStep struct {
	pw   *io.PipeWriter
	done chan stepResult // the request's outcome, once it ends
}

type stepResult struct {
	status int
	err    error
}

// holdStep starts a step on session id, sends the first bytes of its body
// and waits until the session answers 409 busy. The probe (GET on the
// session) claims the session for a moment itself, so the step can lose that
// race: it is then refused busy, and the server holds that answer until it
// has drained the body. holdStep sees the refusal in the busy error count
// (the probe is never refused while the step does not hold the session),
// ends that step's body and starts another.
func holdStep(tb testing.TB, c *client, id string, first []byte) heldStep {
	tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for attempt := 1; ; attempt++ {
		busy0 := busyRefusals(c)
		pr, pw := io.Pipe()
		req, err := http.NewRequest("POST", c.base+"/v1/sessions/"+id+"/step", pr)
		require.NoError(tb, err)
		req.Header.Set("Content-Type", ctMsgpack)
		h := heldStep{pw: pw, done: make(chan stepResult, 1)}
		hc := freshClient(tb)
		go func() {
			resp, err := hc.Do(req)
			if err != nil {
				h.done <- stepResult{0, err}
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			h.done <- stepResult{resp.StatusCode, nil}
		}()
		_, err = pw.Write(first)
		require.NoError(tb, err)
		for busyRefusals(c) == busy0 {
			if c.do("GET", "/v1/sessions/"+id, "", nil).Status == http.StatusConflict {
				return h // the step holds the session
			}
			if time.Now().After(deadline) {
				tb.Fatalf("timed out waiting for the step to be in flight")
			}
			time.Sleep(5 * time.Millisecond)
		}
		// Refused: this request's 409 is what the GET saw, or the GET saw
		// none. End the body so the server sends its answer, then retry.
		require.NoError(tb, pw.Close())
		r := <-h.done
		require.NoError(tb, r.err)
		require.Equal(tb, http.StatusConflict, r.status, "the step ended before its body was sent")
		tb.Logf("attempt %d: the step lost its claim to the probe; starting it again", attempt)
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for the step to be in flight")
		}
	}
}

// busyRefusals reads dgserver_errors_total{code="busy"} from /metrics.
func busyRefusals(c *client) int {
	const key = `dgserver_errors_total{code="busy"} `
	text := string(c.do("GET", "/metrics", "", nil).Body)
	i := strings.Index(text, key)
	require.GreaterOrEqual(c.tb, i, 0, "no busy error count in /metrics")
	line := text[i+len(key):]
	line = line[:strings.IndexByte(line, '\n')]
	n, err := strconv.Atoi(line)
	require.NoError(c.tb, err, "busy error count %q", line)
	return n
}

func freshClient(tb testing.TB) *http.Client {
	hc := &http.Client{Transport: &http.Transport{}}
	tb.Cleanup(hc.CloseIdleConnections)
	return hc
}

// TestServerErrorsLogAtWarn: what net/http logs (accept errors such as
// running out of file descriptors) reaches the log at WARN.
func TestServerErrorsLogAtWarn(t *testing.T) {
	var buf strings.Builder
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := server.New(testConfig(), log)
	require.NoError(t, err)
	defer srv.Close()
	srv.HTTPServer().ErrorLog.Print("http: Accept error: accept tcp: too many open files; retrying in 5ms")
	require.Contains(t, buf.String(), "level=WARN")
	require.Contains(t, buf.String(), "too many open files")
}
