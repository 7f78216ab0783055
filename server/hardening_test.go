package server_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/server"
)

func TestAuth(t *testing.T) {
	c := newClient(t, func(c *server.Config) { c.AuthToken = "s3cret" })
	for _, tc := range []struct {
		name, header string
		status       int
	}{
		{"no Authorization header", "", 401},
		{"a wrong token", "Bearer s3crex", 401},
		{"a longer token", "Bearer s3cret-and-more", 401},
		{"another scheme", "Basic s3cret", 401},
		{"the token", "Bearer s3cret", 200},
		{"the scheme in lower case", "bearer s3cret", 200},
		{"the scheme in any case", "BeArEr s3cret", 200},
		{"the scheme followed by spaces", "Bearer   s3cret", 200},
		{"no space after the scheme", "Bearers3cret", 401},
		{"a scheme that only starts like it", "Bearerx s3cret", 401},
	} {
		for _, path := range []string{"/v1/sessions", "/metrics"} {
			t.Run(path+" with "+tc.name, func(t *testing.T) {
				method, body := "POST", []byte(`{}`)
				if path == "/metrics" {
					method, body = "GET", nil
				}
				req := httptest.NewRequest(method, "http://localhost"+path, bytes.NewReader(body))
				if body != nil {
					req.Header.Set("Content-Type", ctJSON)
				}
				if tc.header != "" {
					req.Header.Set("Authorization", tc.header)
				}
				w := httptest.NewRecorder()
				c.h.ServeHTTP(w, req)
				if tc.status == 401 {
					requireError(t, answer{w.Code, w.Header(), w.Body.Bytes()}, 401, "unauthorized")
					assert.Contains(t, w.Header().Get("WWW-Authenticate"), "Bearer")
				} else {
					assert.Equal(t, tc.status, w.Code, "%s", w.Body)
				}
			})
		}
	}
}

func TestBodyCaps(t *testing.T) {
	c := newClient(t, func(c *server.Config) { c.Limits.MaxCreateBody = 2048 })
	small := c.create(map[string]any{"num_envs": 1}).Session
	big := c.create(map[string]any{"num_envs": 256}).Session
	huge := bytes.Repeat([]byte(" "), 20000)
	for _, tc := range []struct {
		name, path string
		body       []byte
		chunked    bool
		status     int
	}{
		{"a create body over max_create_body", "/v1/sessions", huge, false, 413},
		{"a chunked create body over max_create_body", "/v1/sessions", huge, true, 413},
		{"a reset body over 4 KiB", "/v1/sessions/" + small + "/reset", huge, false, 413},
		{"a step body over the cap of 1 env", "/v1/sessions/" + small + "/step", huge, false, 413},
		{"a chunked step body over the cap of 1 env", "/v1/sessions/" + small + "/step", huge, true, 413},
		{"the same body within the cap of 256 envs", "/v1/sessions/" + big + "/step", huge[:8000], false, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r io.Reader = bytes.NewReader(tc.body)
			if tc.chunked {
				r = io.MultiReader(r) // hides the length: no Content-Length
			}
			req := httptest.NewRequest("POST", "http://localhost"+tc.path, r)
			req.Header.Set("Content-Type", ctJSON)
			if tc.chunked {
				req.ContentLength = -1
			}
			w := httptest.NewRecorder()
			c.h.ServeHTTP(w, req)
			code := "too_large"
			if tc.status == 400 {
				code = "bad_request"
			}
			requireError(t, answer{w.Code, w.Header(), w.Body.Bytes()}, tc.status, code)
		})
	}
	t.Run("the sessions go on", func(t *testing.T) {
		b := c.reset(small, map[string]any{"seed": 1})
		c.step(small, legalActions(b.Mask.Data, 1, func(i, k int) int { return 0 }))
	})
}

func TestCapsAnswer429(t *testing.T) {
	c := newClient(t, func(c *server.Config) {
		c.Limits.MaxSessions = 3
		c.Limits.MaxEnvsTotal = 10
		c.Limits.MaxEnvsPerSession = 8
		c.Limits.RetryAfter = 2e9
	})
	a := c.create(map[string]any{"num_envs": 6}).Session
	t.Run("too many envs in total", func(t *testing.T) {
		r := c.do("POST", "/v1/sessions", ctJSON, []byte(`{"num_envs": 5}`))
		requireError(t, r, 429, "limit")
		assert.Equal(t, "2", r.Header.Get("Retry-After"))
	})
	t.Run("more envs than one session may have is a 400", func(t *testing.T) {
		requireError(t, c.do("POST", "/v1/sessions", ctJSON, []byte(`{"num_envs": 9}`)), 400, "bad_request")
	})
	c.create(map[string]any{"num_envs": 2})
	c.create(map[string]any{"num_envs": 2})
	t.Run("too many sessions", func(t *testing.T) {
		r := c.do("POST", "/v1/sessions", ctJSON, []byte(`{"num_envs": 1}`))
		requireError(t, r, 429, "limit")
		assert.Equal(t, "2", r.Header.Get("Retry-After"))
	})
	t.Run("deleting a session frees its room", func(t *testing.T) {
		require.Equal(t, 200, c.do("DELETE", "/v1/sessions/"+a, "", nil).Status)
		c.create(map[string]any{"num_envs": 6})
	})
}

// TestBusySessionAnswers409 holds a step in flight (its body arrives slowly)
// and sends other requests on the same session meanwhile: each waits
// limits.busy_wait, then answers 409.
func TestBusySessionAnswers409(t *testing.T) {
	c := newClient(t, func(c *server.Config) { c.Limits.BusyWait = 20 * time.Millisecond })
	s := c.create(map[string]any{"num_envs": 2, "seed": 5})
	id := s.Session
	first := c.reset(id, map[string]any{"seed": 5})
	acts := legalActions(first.Mask.Data, 2, func(i, k int) int { return 0 })
	body := stepBody(t, acts)
	pr, pw := io.Pipe()
	req := httptest.NewRequest("POST", "http://localhost/v1/sessions/"+id+"/step", pr)
	req.Header.Set("Content-Type", ctMsgpack)
	req.ContentLength = -1
	w := httptest.NewRecorder()
	var wg sync.WaitGroup
	wg.Go(func() { c.h.ServeHTTP(w, req) })
	_, err := pw.Write(body[:3])
	require.NoError(t, err)
	waitFor(t, "the step to hold the session", func() bool {
		return c.do("GET", "/v1/sessions/"+id, "", nil).Status == http.StatusConflict
	})
	for _, r := range []struct{ method, path string }{
		{"POST", "/v1/sessions/" + id + "/step"},
		{"POST", "/v1/sessions/" + id + "/reset"},
		{"GET", "/v1/sessions/" + id + "/envs/0/record"},
		{"DELETE", "/v1/sessions/" + id},
	} {
		t.Run(r.method+" "+r.path, func(t *testing.T) {
			requireError(t, c.do(r.method, r.path, ctMsgpack, stepBody(t, acts)), 409, "busy")
		})
	}
	_, err = pw.Write(body[3:])
	require.NoError(t, err)
	require.NoError(t, pw.Close())
	wg.Wait()
	require.Equal(t, 200, w.Code, "%s", w.Body)
	t.Run("the session goes on as if nothing was refused", func(t *testing.T) {
		other := c.create(map[string]any{"num_envs": 2, "seed": 5}).Session
		c.reset(other, map[string]any{"seed": 5})
		want := c.step(other, acts)
		var got batch
		decodeAnswer(t, answer{w.Code, w.Header(), w.Body.Bytes()}, &got)
		assert.Equal(t, want, got)
	})
}

// hostile are msgpack bodies whose headers declare far more than they hold
// or nest without end. msgpack/v5 would allocate what they declare.
func hostile() map[string][]byte {
	key := func(k string) []byte { return append([]byte{0x81, 0xa0 | byte(len(k))}, k...) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	ff := []byte{0xff, 0xff, 0xff, 0xff}
	return map[string][]byte{
		"an array32 of 2^32-1 actions":   cat(key("actions"), []byte{0xdd}, ff),
		"a map32 of 2^32-1 entries":      cat(key("actions"), []byte{0xdf}, ff),
		"a top-level map32":              cat([]byte{0xdf}, ff),
		"a bin32 of 4 GiB":               cat(key("actions"), []byte{0x83, 0xa4}, []byte("data"), []byte{0xc6}, ff),
		"a str32 of 4 GiB":               cat(key("actions"), []byte{0xdb}, ff),
		"an ext32 of 4 GiB":              cat(key("actions"), []byte{0xc9}, ff, []byte{1}),
		"an array16 of 65535 items":      cat(key("actions"), []byte{0xdc, 0xff, 0xff}, []byte{1, 2, 3}),
		"arrays nested 3000 deep":        cat(key("actions"), bytes.Repeat([]byte{0x91}, 3000), []byte{0}),
		"maps nested 1000 deep":          cat(key("actions"), bytes.Repeat([]byte{0x81, 0xa1, 'k'}, 1000), []byte{0}),
		"learner_seats of 2^32-1":        cat(key("learner_seats"), []byte{0xdd}, ff),
		"a game map of 2^32-1 entries":   cat(key("game"), []byte{0xdf}, ff),
		"a seed declared as a huge bin":  cat(key("seed"), []byte{0xc6}, ff),
		"an opponent declared as 4 GiB":  cat(key("opponent"), []byte{0xdb}, ff),
		"a truncated fixarray in a tail": cat(key("actions"), []byte{0x9f, 1}),
	}
}

// TestHostileMsgpackIsRefusedCheaply sends each hostile body to every route
// that decodes one and requires a 400 with under 1 MiB allocated.
func TestHostileMsgpackIsRefusedCheaply(t *testing.T) {
	c := newClient(t)
	id := c.create(map[string]any{"num_envs": 512}).Session
	for name, body := range hostile() {
		for _, path := range []string{"/v1/sessions", "/v1/sessions/" + id + "/step", "/v1/sessions/" + id + "/reset"} {
			t.Run(name+" to "+path[strings.LastIndex(path, "/"):], func(t *testing.T) {
				req := httptest.NewRequest("POST", "http://localhost"+path, bytes.NewReader(body))
				req.Header.Set("Content-Type", ctMsgpack)
				w := httptest.NewRecorder()
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				c.h.ServeHTTP(w, req)
				runtime.ReadMemStats(&after)
				alloc := after.TotalAlloc - before.TotalAlloc
				assert.Less(t, alloc, uint64(1<<20), "bytes allocated")
				if w.Code == 413 {
					t.Fatalf("body of %d bytes over the cap; the test wants the scan to refuse it", len(body))
				}
				requireError(t, answer{w.Code, w.Header(), w.Body.Bytes()}, 400, "bad_request")
			})
		}
	}
}

// FuzzRequestDecoding sends arbitrary bodies to the routes that decode one:
// never a panic, never a 5xx.
func FuzzRequestDecoding(f *testing.F) {
	for _, b := range hostile() {
		f.Add(uint8(0), false, b)
		f.Add(uint8(1), false, b)
	}
	f.Add(uint8(0), false, stepBody(f, []int32{1, 2, 3}))
	f.Add(uint8(0), false, mp(f, map[string]any{"actions": []int{1, 2, 3}}))
	f.Add(uint8(0), true, []byte(`{"actions": [1, 2, 3]}`))
	f.Add(uint8(0), true, []byte(`{"actions": {"dtype": "<i4", "shape": [3], "data": "AQAAAAIAAAADAAAA"}}`))
	f.Add(uint8(1), true, []byte(`{"seed": 7}`))
	f.Add(uint8(1), false, mp(f, map[string]any{"seed": 7}))
	f.Add(uint8(2), true, []byte(`{"game": {"players": 3}, "num_envs": 2, "learner_seats": [0], "opponent": "random"}`))
	f.Add(uint8(2), false, mp(f, map[string]any{"game": map[string]any{"players": 5}, "num_envs": 2, "reward": "zero_sum"}))
	f.Add(uint8(2), true, []byte(`{"num_envs": 2, "packing": "bits"}`))
	f.Add(uint8(3), false, stepBody(f, []int32{1, 2, 3}))
	f.Add(uint8(0), false, mp(f, map[string]any{"actions": []int{1, 2, 3}, "seq": 4}))
	f.Add(uint8(0), true, []byte(`{"actions": [1, 2, 3], "seq": -1}`))
	f.Add(uint8(1), false, mp(f, map[string]any{"seed": 7, "seq": uint64(1 << 63)}))
	f.Add(uint8(1), true, []byte(`{"seq": 0}`))
	f.Add(uint8(2), false, mp(f, map[string]any{"num_envs": 2, "request_id": "r-1"}))
	f.Add(uint8(2), true, []byte(`{"num_envs": 2, "request_id": "r.2"}`))
	f.Add(uint8(4), true, []byte(`{"finished": null, "current": {"game": {"name": "duel"}, "actions": [3, 40], "returns": [0, 0], "seed": 18446744073709551615}}`))
	f.Add(uint8(4), true, []byte(`{"game": {"name": "duel", "max_rounds": 3}, "actions": [], "returns": [0, 0], "seed": 1}`))
	f.Add(uint8(4), false, mp(f, map[string]any{"game": map[string]any{"name": "david_goliath"}, "actions": []int{1}, "returns": []int{0, 0, 0}, "deals": []any{map[string]any{"dealer": 0}}}))
	c := newClient(f, func(c *server.Config) { c.Limits.MaxSessions = 8; c.Limits.MaxEnvsPerSession = 16 })
	id := c.create(map[string]any{"num_envs": 3}).Session
	packed := c.create(map[string]any{"num_envs": 3, "packing": "bits"}).Session
	f.Fuzz(func(t *testing.T, route uint8, useJSON bool, body []byte) {
		path := []string{"/v1/sessions/" + id + "/step", "/v1/sessions/" + id + "/reset", "/v1/sessions",
			"/v1/sessions/" + packed + "/step", "/v1/positions"}[int(route)%5]
		ct := ctMsgpack
		if useJSON {
			ct = ctJSON
		}
		req := httptest.NewRequest("POST", "http://localhost"+path, bytes.NewReader(body))
		req.Header.Set("Content-Type", ct)
		w := httptest.NewRecorder()
		c.h.ServeHTTP(w, req)
		if w.Code != 200 && (w.Code < 400 || w.Code > 499) {
			t.Fatalf("POST %s %q: status %d %s", path, body, w.Code, w.Body)
		}
		if w.Code == 200 && route%5 == 2 {
			var s created
			decodeAnswer(t, answer{w.Code, w.Header(), w.Body.Bytes()}, &s)
			del := httptest.NewRequest("DELETE", "http://localhost/v1/sessions/"+s.Session, nil)
			c.h.ServeHTTP(httptest.NewRecorder(), del)
		}
	})
}

func TestMetrics(t *testing.T) {
	c := newClient(t)
	s := c.create(map[string]any{"num_envs": 4, "seed": 1})
	b := c.reset(s.Session, map[string]any{"seed": 1})
	acts := legalActions(b.Mask.Data, 4, func(i, k int) int { return 0 })
	b = c.step(s.Session, acts)
	bad := legalActions(b.Mask.Data, 4, func(i, k int) int { return 0 })
	bad[1] = illegalAction(b.Mask.Data, 1)
	c.do("POST", "/v1/sessions/"+s.Session+"/step", ctMsgpack, stepBody(t, bad))
	c.step(s.Session, legalActions(b.Mask.Data, 4, func(i, k int) int { return 0 }))
	c.do("GET", "/v1/sessions/nope", "", nil)
	a := c.do("GET", "/metrics", "", nil)
	require.Equal(t, 200, a.Status)
	text := string(a.Body)
	for _, want := range []string{
		"dgserver_sessions_active 1",
		"dgserver_envs_active 4",
		"dgserver_env_steps_total 8",
		"dgserver_step_duration_seconds_count 2",
		`dgserver_errors_total{code="illegal_action"} 1`,
		`dgserver_errors_total{code="not_found"} 1`,
		`dgserver_errors_total{code="busy"} 0`,
	} {
		assert.Contains(t, text, want+"\n")
	}
	assert.NotContains(t, text, s.Session, "a session id in the metrics")
	assert.Contains(t, a.Header.Get("Content-Type"), "text/plain")
}

func TestConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mutate  func(*server.Config)
		mention string
	}{
		{"a public address without a token", func(c *server.Config) { c.Addr = "0.0.0.0:80" }, "addr"},
		{"an empty host without a token", func(c *server.Config) { c.Addr = ":8080" }, "addr"},
		{"an address without a port", func(c *server.Config) { c.Addr = "localhost" }, "addr"},
		{"no sessions allowed", func(c *server.Config) { c.Limits.MaxSessions = 0 }, "limits.max_sessions"},
		{"a zero TTL", func(c *server.Config) { c.Limits.SessionTTL = 0 }, "limits.session_ttl"},
		{"a zero read header timeout", func(c *server.Config) { c.HTTP.ReadHeaderTimeout = 0 }, "http.read_header_timeout"},
		{"tiny headers", func(c *server.Config) { c.HTTP.MaxHeaderBytes = 10 }, "http.max_header_bytes"},
		{"negative workers", func(c *server.Config) { c.Engine.Workers = -1 }, "engine.workers"},
	} {
		t.Run("refuses "+tc.name, func(t *testing.T) {
			cfg := testConfig(tc.mutate)
			_, err := server.New(cfg, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.mention)
		})
	}
	for _, addr := range []string{"127.0.0.1:0", "[::1]:9", "localhost:8080"} {
		t.Run(fmt.Sprintf("accepts loopback %s without a token", addr), func(t *testing.T) {
			cfg := testConfig(func(c *server.Config) { c.Addr = addr })
			assert.NoError(t, cfg.Validate())
		})
	}
	t.Run("accepts a public address with a token and allow_plaintext", func(t *testing.T) {
		cfg := testConfig(func(c *server.Config) { c.Addr = "0.0.0.0:80"; c.AuthToken = "x"; c.TLS.AllowPlaintext = true })
		assert.NoError(t, cfg.Validate())
	})
}

func TestStatusMapsEveryCode(t *testing.T) {
	for code, status := range map[env.Code]int{
		env.CodeBadRequest: 400, env.CodeUnauthorized: 401, env.CodeNotFound: 404,
		env.CodeBusy: 409, env.CodeTooLarge: 413, env.CodeIllegalAction: 422,
		env.CodeLimit: 429, env.CodeUnavailable: 503, env.CodeInternal: 500,
	} {
		assert.Equal(t, status, server.Status(code), "Status(%s)", code)
	}
}
