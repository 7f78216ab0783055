// Package server is the batch HTTP API of the David & Goliath environment:
// it decodes a request, calls the vectorised env (package env) and writes the
// env's own buffers back as tensors, in msgpack or JSON (docs/api.md).
//
// It is an adapter and nothing more: the wire types live here, the game
// lives in env/, and configuration arrives as a plain, validated Config (cmd/
// reads files and flags). No client input may panic it; the recovery
// middleware is the last line, not the plan.
package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/games"
	"github.com/davidgoliath/dgenv/env/policy"
)

// Server serves the API. Make one with New; serve it with Serve (or mount
// Handler in a test, then Close).
type Server struct {
	cfg       Config
	log       *slog.Logger
	reg       registry
	m         *metrics
	handler   http.Handler
	tokenHash *[32]byte
	tls       *tls.Config // tls.cert_file and tls.key_file, loaded; nil: plain HTTP
	reclaim   *reclaimer  // returns ended sessions' memory to the OS (reclaim.go)
	draining  atomic.Bool
	policies  map[string]*policy.Policy // loaded at start-up, read-only after
	games     *env.Registry             // the games served, and their bots
	site      siteRules                 // the Hosts and Origins accepted (site.go)

	stopOnce sync.Once
	stop     chan struct{}
	swept    chan struct{}
}

// smallBody caps bodies that carry no actions (reset).
const smallBody = 4 << 10

func init() { gin.SetMode(gin.ReleaseMode) }

// New validates cfg and builds a server; its session sweeper runs until
// Close (or the end of Serve).
func New(cfg Config, log *slog.Logger, opts ...Option) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Server{cfg: cfg, log: log, stop: make(chan struct{}), swept: make(chan struct{}), policies: map[string]*policy.Policy{}}
	for _, o := range opts {
		o(s)
	}
	if s.games == nil {
		s.games = games.Default()
	}
	// The policies' bots are bots of their games in this server's registry
	// (the one they were loaded with: WithGames).
	if err := policy.Register(s.games, s.policies); err != nil {
		return nil, err
	}
	if err := s.checkDefaultOpponent(); err != nil {
		return nil, err
	}
	s.reg.sessions = make(map[string]*session)
	s.reg.ids = make(map[string]*createEntry)
	s.m = newMetrics(&s.reg)
	if cfg.AuthToken != "" {
		h := sha256.Sum256([]byte(cfg.AuthToken))
		s.tokenHash = &h
	}
	s.site = newSiteRules(cfg)
	tlsCfg, err := loadTLS(cfg.TLS)
	if err != nil {
		return nil, err
	}
	s.tls = tlsCfg
	s.handler = s.routes()
	s.reclaim = newReclaimer(cfg.Limits.MemoryBudget)
	go s.reclaim.run(s.stop)
	go s.sweeper()
	return s, nil
}

// checkDefaultOpponent checks at start-up that sessions.default_opponent
// is a bot of the registry's default game (the card game; built-in or of a
// loaded policy), and that it can play the game's default parameters.
func (s *Server) checkDefaultOpponent() error {
	name := s.cfg.Sessions.DefaultOpponent
	if name == "" {
		return nil
	}
	typ, err := s.games.Lookup("")
	if err != nil {
		return fmt.Errorf("sessions.default_opponent = %q: %w", name, err)
	}
	g, err := typ.New(nil)
	if err != nil {
		return fmt.Errorf("sessions.default_opponent = %q: %w", name, err)
	}
	if _, err := s.games.NewBot(g, name); err != nil {
		return fmt.Errorf("sessions.default_opponent = %q: %w; a policy's bots exist only when policies.dir holds it", name, err)
	}
	return nil
}

func (s *Server) routes() http.Handler {
	r := gin.New()
	_ = r.SetTrustedProxies(nil) // never trust X-Forwarded-For; cannot fail for nil
	// A known path with a method it does not have answers 405 with Allow.
	r.HandleMethodNotAllowed = true
	r.Use(s.recovery, s.sameSite)
	r.GET("/v1/healthz", s.healthz)
	r.GET("/v1/readyz", s.readyz)
	r.GET("/v1/openapi.json", s.openapi)
	api := r.Group("/", s.auth, trustConn)
	api.GET("/metrics", gin.WrapH(promhttp.HandlerFor(s.m.reg, promhttp.HandlerOpts{})))
	api.POST("/v1/sessions", s.createSession)
	api.GET("/v1/sessions/:id", s.getSession)
	api.DELETE("/v1/sessions/:id", s.deleteSession)
	api.POST("/v1/sessions/:id/reset", s.reset)
	api.POST("/v1/sessions/:id/step", s.step)
	api.GET("/v1/sessions/:id/envs/:k/record", s.record)
	api.GET("/v1/sessions/:id/envs/:k/positions", s.positions)
	api.POST("/v1/positions", s.describeRecord)
	api.GET("/v1/games", s.listGames)
	api.GET("/v1/policies", s.listPolicies)
	api.POST("/v1/policies/:name/act", s.act)
	s.mountWeb(r) // the browser app at "/" (web.go), unless web.enabled is false
	r.NoMethod(func(c *gin.Context) {
		s.fail(c, formatOf(c.Request), env.Errorf(env.CodeMethodNotAllowed, "method %s not allowed on %s (Allow: %s)", c.Request.Method, c.Request.URL.Path, c.Writer.Header().Get("Allow")))
	})
	r.NoRoute(func(c *gin.Context) {
		s.fail(c, formatOf(c.Request), env.Errorf(env.CodeNotFound, "no route %s %s", c.Request.Method, c.Request.URL.Path))
	})
	return r
}

// Handler is the API as an http.Handler (for tests and embedding).
func (s *Server) Handler() http.Handler { return s.handler }

// HTTPServer returns the http.Server Serve uses: ours, with every timeout
// and the header cap set (never gin's Run).
func (s *Server) HTTPServer() *http.Server {
	h := s.cfg.HTTP
	return &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: h.ReadHeaderTimeout,
		ReadTimeout:       h.ReadTimeout,
		WriteTimeout:      h.WriteTimeout,
		IdleTimeout:       h.IdleTimeout,
		MaxHeaderBytes:    h.MaxHeaderBytes,
		// The http.Server logs what goes wrong below the handlers: accept
		// errors (out of file descriptors), TLS and hijack trouble. Warnings.
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}

// Serve answers on ln (over TLS when tls.cert_file is set), at most
// http.max_conns connections at once, making room for new connections by
// closing idle ones (conns.go), until ctx is done, then shuts down gracefully:
// readiness answers 503 for the drain delay while requests are still
// served, then the listener closes and in-flight requests finish (cut off
// after the shutdown timeout), then the sessions are closed.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := s.HTTPServer()
	tr := newConnTracker(ln, s.cfg.HTTP.MaxConns, s.cfg.maxPerAddr())
	hs.ConnState = tr.connState
	hs.ConnContext = connContext
	hs.Handler = s.bodyPace(hs.Handler)
	ln = tr
	if s.tls != nil {
		ln = tls.NewListener(tr, s.tls)
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		s.Close()
		return err
	case <-ctx.Done():
	}
	s.draining.Store(true)
	s.log.Info("shutting down", "drain_delay", s.cfg.Shutdown.DrainDelay, "timeout", s.cfg.Shutdown.Timeout)
	time.Sleep(s.cfg.Shutdown.DrainDelay)
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.Shutdown.Timeout)
	defer cancel()
	err := hs.Shutdown(sctx)
	if err != nil {
		s.log.Warn("shutdown deadline passed: closing connections", "err", err)
		_ = hs.Close()
	}
	<-errc
	s.Close()
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shutdown: in-flight requests cut off after %v", s.cfg.Shutdown.Timeout)
	}
	return nil
}

// Close stops the sweeper and closes every session no request holds.
func (s *Server) Close() {
	s.stopOnce.Do(func() {
		s.draining.Store(true)
		close(s.stop)
		<-s.swept
		s.reg.closeIdle()
	})
}

// Draining reports whether shutdown has begun (readiness answers 503).
func (s *Server) Draining() bool { return s.draining.Load() }

func (s *Server) sweeper() {
	defer close(s.swept)
	t := time.NewTicker(s.cfg.Limits.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			for _, x := range s.reg.expire(now, s.cfg.Limits.SessionTTL) {
				s.m.expired.Inc()
				s.reclaim.ended(x.usage.bytes)
				s.log.Info("session expired", "session", logID(x.id), "num_envs", x.n)
			}
		}
	}
}

// Middleware.

func (s *Server) recovery(c *gin.Context) {
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.log.Error("panic serving request", "path", c.Request.URL.Path, "panic", p, "stack", string(debug.Stack()))
			if !c.Writer.Written() {
				s.fail(c, formatOf(c.Request), env.Errorf(env.CodeInternal, "internal error"))
			}
			c.Abort()
		}
	}()
	c.Next()
}

func (s *Server) auth(c *gin.Context) {
	if s.tokenHash == nil {
		return
	}
	tok, ok := bearerToken(c.Request.Header.Get("Authorization"))
	// Comparing fixed-size hashes keeps the time independent of the token's length too.
	h := sha256.Sum256([]byte(tok))
	if !ok || subtle.ConstantTimeCompare(h[:], s.tokenHash[:]) != 1 {
		c.Header("WWW-Authenticate", `Bearer realm="dgserver"`)
		// Close rather than read an unwanted body (net/http would wait for
		// it, however slowly it comes, to reuse the connection).
		c.Header("Connection", "close")
		dropBody(c.Request)
		s.fail(c, formatOf(c.Request), env.Errorf(env.CodeUnauthorized, "missing or wrong bearer token"))
		c.Abort()
	}
}

// bearerToken reads "Bearer <token>": the scheme in any letter case and one
// or more spaces after it (RFC 7235's credentials).
func bearerToken(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimLeft(tok, " "), true
}

// formatOf is the answer format of a request, even one with a bad Content-Type.
func formatOf(r *http.Request) format {
	in, _ := requestFormat(r)
	return responseFormat(r, in)
}

// Answers.

func (s *Server) fail(c *gin.Context, f format, e *env.Error) {
	s.m.errors.WithLabelValues(string(e.Code)).Inc()
	if e.RetryAfter > 0 {
		c.Header("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	s.respond(c, Status(e.Code), f, wireError(e))
}

func (s *Server) respond(c *gin.Context, status int, f format, v any) {
	var b []byte
	var err error
	h := c.Writer.Header()
	if f == formatMsgpack {
		h["Content-Type"] = ctMsgpack
		b, err = marshalMsgpack(v)
	} else {
		h["Content-Type"] = ctJSON
		b, err = marshalJSON(v)
	}
	if err != nil {
		s.log.Error("encoding answer", "err", err)
		c.Status(http.StatusInternalServerError)
		return
	}
	h["Content-Length"] = []string{strconv.Itoa(len(b))}
	c.Status(status)
	_, _ = c.Writer.Write(b)
}

// marshalJSON is json.Marshal without HTML escaping, so dtypes read "<u1".
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return buf.Bytes(), err
}

func marshalMsgpack(v any) ([]byte, error) {
	var buf strings.Builder
	enc := msgpack.NewEncoder(&buf)
	enc.SetCustomStructTag("json")
	enc.UseCompactInts(true)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return []byte(buf.String()), nil
}

// writeBatch writes the answer of a reset or step: the engine's buffers.
func (s *Server) writeBatch(c *gin.Context, f format, sess *session) {
	seq := sess.seq.Load()
	if f == formatJSON {
		sess.enc.writeJSON(c.Writer, sess.v, seq)
		return
	}
	w := c.Writer
	h := w.Header()
	h["Content-Type"] = ctMsgpack
	h["Content-Length"] = sess.enc.length
	w.WriteHeader(http.StatusOK)
	blobs := sess.enc.blobs(sess.v)
	for i := range sess.enc.n {
		if _, err := w.Write(sess.enc.prefix[i]); err != nil {
			return // the client went away; nothing to tell it
		}
		if _, err := w.Write(blobs[i]); err != nil {
			return
		}
	}
	_, _ = w.Write(sess.enc.seqTail(seq))
}
