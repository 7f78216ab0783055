package server

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"time"

	"github.com/gin-gonic/gin"
)

// webFiles is the browser app (docs/web.md): plain HTML, CSS and JavaScript
// modules, served as they are in the repository. No build step, nothing
// fetched from elsewhere at run time.
//
//go:embed web
var webFiles embed.FS

// WebConfig turns the browser app on or off.
type WebConfig struct {
	// Enabled serves the play-and-watch page at "/". The page is static and
	// talks to the public API like any client (a server with a token makes
	// the page ask for it), so its files need no token themselves.
	Enabled bool `mapstructure:"enabled"`
}

// webHeaders go with every file of the app: it loads nothing but its own
// files and talks to nothing but this server.
var webHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
	"X-Content-Type-Options": "nosniff",
	"Referrer-Policy":        "no-referrer",
	"Cache-Control":          "no-cache", // revalidated by ETag: a new binary serves its new files at once
}

// mountWeb registers GET and HEAD for every embedded file ("/" is
// index.html) when the app is enabled. The routes are all static, so they
// never shadow /v1 or /metrics, and anything else stays a JSON 404.
func (s *Server) mountWeb(r *gin.Engine) {
	if !s.cfg.Web.Enabled {
		return
	}
	root, err := fs.Sub(webFiles, "web")
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	err = fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(root, p)
		if err != nil {
			return err
		}
		h := webFile(p, b)
		route := "/" + p
		if p == "index.html" {
			route = "/"
		}
		r.GET(route, h)
		r.HEAD(route, h)
		return nil
	})
	if err != nil {
		panic(err)
	}
}

// webFile answers one embedded file; http.ServeContent handles HEAD,
// If-None-Match and ranges.
func webFile(name string, b []byte) gin.HandlerFunc {
	sum := sha256.Sum256(b)
	etag := `"` + hex.EncodeToString(sum[:8]) + `"`
	ctype := mime.TypeByExtension(path.Ext(name))
	switch path.Ext(name) { // not left to the machine's mime tables
	case ".html":
		ctype = "text/html; charset=utf-8"
	case ".js":
		ctype = "text/javascript; charset=utf-8"
	case ".css":
		ctype = "text/css; charset=utf-8"
	case ".svg":
		ctype = "image/svg+xml"
	}
	return func(c *gin.Context) {
		h := c.Writer.Header()
		for k, v := range webHeaders {
			h.Set(k, v)
		}
		h.Set("Content-Type", ctype)
		h.Set("ETag", etag)
		http.ServeContent(c.Writer, c.Request, name, time.Time{}, bytes.NewReader(b))
	}
}
