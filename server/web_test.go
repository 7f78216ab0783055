package server_test

import (
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/davidgoliath/dgenv/server"
)

// The browser app is served at "/" with its files, without a token (the
// page asks for one itself), and never shadows the API.
func TestWebAppServed(t *testing.T) {
	c := newClient(t, func(cfg *server.Config) { cfg.AuthToken = "tok" })
	a := c.do("GET", "/", "", nil)
	require.Equal(t, http.StatusOK, a.Status, string(a.Body))
	assert.Equal(t, "text/html; charset=utf-8", a.Header.Get("Content-Type"))
	assert.Contains(t, string(a.Body), `<script type="module" src="app.js">`)
	assert.Contains(t, a.Header.Get("Content-Security-Policy"), "default-src 'none'")
	assert.Equal(t, "nosniff", a.Header.Get("X-Content-Type-Options"))

	for path, ctype := range map[string]string{
		"/app.js": "text/javascript; charset=utf-8", "/game.js": "text/javascript; charset=utf-8",
		"/api.js": "text/javascript; charset=utf-8", "/style.css": "text/css; charset=utf-8",
		"/favicon.svg": "image/svg+xml",
	} {
		a := c.do("GET", path, "", nil)
		require.Equal(t, http.StatusOK, a.Status, path)
		assert.Equal(t, ctype, a.Header.Get("Content-Type"), path)
		etag := a.Header.Get("ETag")
		require.NotEmpty(t, etag, path)
		h := c.do("HEAD", path, "", nil)
		assert.Equal(t, http.StatusOK, h.Status, path)
		assert.Empty(t, h.Body, path)
	}

	// Revalidation by ETag.
	first := c.do("GET", "/app.js", "", nil)
	req, _ := http.NewRequest("GET", "http://localhost/app.js", nil)
	req.Header.Set("If-None-Match", first.Header.Get("ETag"))
	w := newRecorder()
	c.h.ServeHTTP(w, req)
	assert.Equal(t, http.StatusNotModified, w.Code)

	// The API still wants the token; unknown paths stay JSON 404s.
	requireError(t, c.do("GET", "/v1/policies", "", nil), http.StatusUnauthorized, "unauthorized")
	c.token = "tok"
	assert.Equal(t, http.StatusOK, c.do("GET", "/v1/policies", "", nil).Status)
	requireError(t, c.do("GET", "/nope.js", "", nil), http.StatusNotFound, "not_found")
	requireError(t, c.do("POST", "/", ctJSON, []byte(`{}`)), http.StatusMethodNotAllowed, "method_not_allowed")
}

func TestWebAppDisabled(t *testing.T) {
	c := newClient(t, func(cfg *server.Config) { cfg.Web.Enabled = false })
	requireError(t, c.do("GET", "/", "", nil), http.StatusNotFound, "not_found")
	requireError(t, c.do("GET", "/app.js", "", nil), http.StatusNotFound, "not_found")
	assert.Equal(t, http.StatusOK, c.do("GET", "/v1/healthz", "", nil).Status)
}

// The app fetches nothing from elsewhere: no URL with a scheme or a
// protocol-relative one in any asset (SVG's namespace aside), and every
// file index.html or a module names is served.
func TestWebAppSelfContained(t *testing.T) {
	c := newClient(t)
	files, err := filepath.Glob("web/*")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	external := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	local := regexp.MustCompile(`(?:src|href)="([^"]+)"|from '\./([^']+)'`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		text := strings.ReplaceAll(string(b), "http://www.w3.org/2000/svg", "")
		assert.Empty(t, external.FindAllString(text, -1), "%s names another site", f)
		for _, m := range local.FindAllStringSubmatch(text, -1) {
			ref := m[1] + m[2]
			if strings.HasPrefix(ref, "#") {
				continue
			}
			assert.Equal(t, http.StatusOK, c.do("GET", "/"+ref, "", nil).Status, "%s names %s, which is not served", f, ref)
		}
	}
	// Every embedded file is one of the files on disk, and the other way round.
	served := 0
	err = fs.WalkDir(os.DirFS("web"), ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && p != "index.html" {
			served++
			assert.Equal(t, http.StatusOK, c.do("GET", "/"+p, "", nil).Status, p)
		}
		return err
	})
	require.NoError(t, err)
	assert.Equal(t, len(files)-1, served)
}
