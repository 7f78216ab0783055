package server_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/davidgoliath/dgenv/server"
)

// siteRequest sends one request to h with the given Host and headers
// (name, value pairs) and a JSON body when body is not empty.
func siteRequest(tb testing.TB, h http.Handler, method, host, path, body string, headers ...string) answer {
	tb.Helper()
	req := httptest.NewRequest(method, "http://localhost"+path, strings.NewReader(body))
	req.Host = host
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return answer{w.Code, w.Header(), w.Body.Bytes()}
}

// sessionsActive reads the gauge of live sessions from /metrics.
func sessionsActive(tb testing.TB, h http.Handler) string {
	tb.Helper()
	a := siteRequest(tb, h, "GET", "localhost", "/metrics", "")
	require.Equal(tb, http.StatusOK, a.Status)
	for _, line := range strings.Split(string(a.Body), "\n") {
		if v, ok := strings.CutPrefix(line, "dgserver_sessions_active "); ok {
			return v
		}
	}
	tb.Fatalf("no dgserver_sessions_active in /metrics")
	return ""
}

func TestHostMustBeThisServers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*server.Config)
		ok     []string
		refuse []string
	}{
		{
			name:   "on a loopback address",
			mutate: func(c *server.Config) { c.Addr = "127.0.0.1:8080" },
			ok:     []string{"localhost", "localhost:8080", "LocalHost:9", "127.0.0.1:8080", "127.0.0.1", "127.0.0.2:1", "[::1]:8080", "[::1]"},
			refuse: []string{"attacker.example", "attacker.example:8080", "localhost.attacker.example", "127.0.0.1.nip.io:8080", "10.0.0.1:8080", "[fd00::1]:8080", "localhost."},
		},
		{
			name: "with allowed hosts",
			mutate: func(c *server.Config) {
				c.Addr = "127.0.0.1:8080"
				c.CrossSite.AllowedHosts = []string{"dg.example.org", "fd00::7"}
			},
			ok:     []string{"dg.example.org:8080", "DG.example.org", "[fd00::7]:80", "localhost:8080"},
			refuse: []string{"example.org", "x.dg.example.org", "[fd00::8]:80"},
		},
		{
			name: "on one address",
			mutate: func(c *server.Config) {
				c.Addr = "192.0.2.7:8080"
				c.AuthToken = "t"
				c.TLS.AllowPlaintext = true // a public address with a token needs TLS otherwise (config_conn.go)
			},
			ok:     []string{"192.0.2.7:8080", "192.0.2.7", "localhost:8080"},
			refuse: []string{"192.0.2.8:8080", "dg.example.org:8080"},
		},
		{
			name: "on every interface (any IP, no name)",
			mutate: func(c *server.Config) {
				c.Addr = "0.0.0.0:8080"
				c.AuthToken = "t"
				c.TLS.AllowPlaintext = true // a public address with a token needs TLS otherwise (config_conn.go)
			},
			ok:     []string{"192.0.2.7:8080", "10.1.2.3", "[2001:db8::1]:8080", "localhost"},
			refuse: []string{"dg.example.org:8080", "attacker.example"},
		},
		{
			name:   "on a Unix socket (any Host: no browser reaches it)",
			mutate: func(c *server.Config) { c.Addr = "unix:/tmp/dg-site-test.sock" },
			ok:     []string{"localhost", "unix", "attacker.example"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newServer(t, tc.mutate).Handler()
			tok := "Bearer t"
			for _, host := range tc.ok {
				a := siteRequest(t, h, "GET", host, "/v1/games", "", "Authorization", tok)
				assert.Equal(t, http.StatusOK, a.Status, "GET /v1/games with Host %q: %s", host, a.Body)
			}
			for _, host := range tc.refuse {
				for _, path := range []string{"/v1/healthz", "/v1/games", "/"} {
					a := siteRequest(t, h, "GET", host, path, "", "Authorization", tok)
					e := requireError(t, a, http.StatusForbidden, "forbidden")
					assert.Contains(t, e.Error.Message, "Host", "GET %s with Host %q", path, host)
				}
				a := siteRequest(t, h, "POST", host, "/v1/sessions", `{}`, "Content-Type", ctJSON, "Authorization", tok)
				requireError(t, a, http.StatusForbidden, "forbidden")
			}
		})
	}
	t.Run("no session is created under another Host", func(t *testing.T) {
		h := newServer(t).Handler()
		a := siteRequest(t, h, "POST", "attacker.example:8080", "/v1/sessions", `{}`, "Content-Type", ctJSON)
		requireError(t, a, http.StatusForbidden, "forbidden")
		assert.Equal(t, "0", sessionsActive(t, h))
	})
}

func TestOriginMustBeTheServersOwn(t *testing.T) {
	h := newServer(t, func(c *server.Config) {
		c.CrossSite.AllowedOrigins = []string{"https://nb.example.org", "http://127.0.0.1:9000"}
	}).Handler()
	const host = "127.0.0.1:8080"
	for _, tc := range []struct {
		origin string
		ok     bool
	}{
		{"http://127.0.0.1:8080", true},
		{"HTTP://127.0.0.1:8080", true},
		{"https://nb.example.org", true},
		{"https://nb.example.org:443", true},
		{"http://127.0.0.1:9000", true},
		{"http://127.0.0.1:9001", false}, // another port is another origin
		{"http://localhost:8080", false}, // another name too
		{"https://127.0.0.1:8080", false},
		{"http://nb.example.org", false},
		{"http://attacker.example", false},
		{"null", false}, // a sandboxed frame, a file:// page
		{"", false},
		{"http://127.0.0.1:8080/path", false},
	} {
		t.Run("Origin "+tc.origin, func(t *testing.T) {
			for _, r := range []struct{ method, path, body string }{
				{"POST", "/v1/sessions", `{"num_envs": 1}`},
				{"GET", "/v1/games", ""},
			} {
				a := siteRequest(t, h, r.method, host, r.path, r.body, "Content-Type", ctJSON, "Origin", tc.origin)
				if tc.ok {
					assert.Equal(t, http.StatusOK, a.Status, "%s %s: %s", r.method, r.path, a.Body)
				} else {
					e := requireError(t, a, http.StatusForbidden, "forbidden")
					assert.Contains(t, e.Error.Message, "Origin")
				}
			}
		})
	}
	t.Run("no Origin (not a browser, or a same-origin GET) is fine", func(t *testing.T) {
		a := siteRequest(t, h, "GET", host, "/v1/games", "")
		assert.Equal(t, http.StatusOK, a.Status, "%s", a.Body)
	})
}

func TestBodiesNeedAnExplicitContentType(t *testing.T) {
	srv := newServer(t, func(c *server.Config) { c.Limits.MaxSessions = 2 })
	h := srv.Handler()
	c := &client{tb: t, h: h}
	id := c.create(map[string]any{"num_envs": 1}).Session
	for _, ct := range []string{"", "text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonx", "json"} {
		for _, path := range []string{"/v1/sessions", "/v1/sessions/" + id + "/reset", "/v1/sessions/" + id + "/step", "/v1/policies/none/act"} {
			for _, body := range []string{`{"num_envs": 1}`, ""} {
				t.Run(path+" with Content-Type "+ct+" and body "+body, func(t *testing.T) {
					var hs []string
					if ct != "" {
						hs = []string{"Content-Type", ct}
					}
					a := siteRequest(t, h, "POST", "localhost", path, body, hs...)
					e := requireError(t, a, http.StatusUnsupportedMediaType, "unsupported_media_type")
					assert.Contains(t, e.Error.Message, "Content-Type")
				})
			}
		}
	}
	assert.Equal(t, "1", sessionsActive(t, h), "sessions created without a content type")
	t.Run("JSON and msgpack, with parameters, are taken", func(t *testing.T) {
		for _, ct := range []string{"application/json", "Application/JSON; charset=utf-8", "application/msgpack", "application/x-msgpack", "application/vnd.msgpack"} {
			a := siteRequest(t, h, "POST", "localhost", "/v1/sessions/"+id+"/reset", "", "Content-Type", ct)
			assert.Equal(t, http.StatusOK, a.Status, "reset with Content-Type %q: %s", ct, a.Body)
		}
	})
	t.Run("requests without a body need none", func(t *testing.T) {
		for _, path := range []string{"/v1/games", "/v1/sessions/" + id, "/v1/sessions/" + id + "/envs/0/record", "/v1/healthz"} {
			a := siteRequest(t, h, "GET", "localhost", path, "")
			assert.Equal(t, http.StatusOK, a.Status, "GET %s: %s", path, a.Body)
		}
		a := siteRequest(t, h, "DELETE", "localhost", "/v1/sessions/"+id, "")
		assert.Equal(t, http.StatusOK, a.Status, "DELETE: %s", a.Body)
	})
}

func TestCrossSiteConfigIsChecked(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mutate  func(*server.Config)
		mention string
	}{
		{"a host with a port", func(c *server.Config) { c.CrossSite.AllowedHosts = []string{"dg.example.org:8080"} }, "cross_site.allowed_hosts"},
		{"a host with a scheme", func(c *server.Config) { c.CrossSite.AllowedHosts = []string{"http://dg.example.org"} }, "cross_site.allowed_hosts"},
		{"an empty host", func(c *server.Config) { c.CrossSite.AllowedHosts = []string{""} }, "cross_site.allowed_hosts"},
		{"an origin with a path", func(c *server.Config) { c.CrossSite.AllowedOrigins = []string{"https://nb.example.org/x"} }, "cross_site.allowed_origins"},
		{"an origin without a scheme", func(c *server.Config) { c.CrossSite.AllowedOrigins = []string{"nb.example.org"} }, "cross_site.allowed_origins"},
		{"the origin null", func(c *server.Config) { c.CrossSite.AllowedOrigins = []string{"null"} }, "cross_site.allowed_origins"},
	} {
		t.Run("refuses "+tc.name, func(t *testing.T) {
			cfg := testConfig(tc.mutate)
			err := cfg.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.mention)
		})
	}
	cfg := testConfig(func(c *server.Config) {
		c.CrossSite.AllowedHosts = []string{"dg.example.org", "192.0.2.1", "fd00::1"}
		c.CrossSite.AllowedOrigins = []string{"https://nb.example.org", "http://[fd00::1]:8080"}
	})
	assert.NoError(t, cfg.Validate())
}
