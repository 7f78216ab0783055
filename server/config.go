package server

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/policy"
)

// Config is the server's whole configuration: plain values, filled by cmd/
// (from configs/default.yaml, a file, DGSERVER_* variables and flags) and
// checked by Validate. The server never reads configuration itself.
type Config struct {
	// Addr is host:port to listen on (port 0 picks a free port), or
	// "unix:" and a path for a Unix domain socket: same-machine clients
	// only, guarded by the file's permissions rather than open to every
	// local user as a loopback port is.
	Addr string `mapstructure:"addr"`
	// AuthToken, when set, is required as "Authorization: Bearer <token>" on
	// every route but the health checks. Binding a non-loopback address
	// requires one.
	AuthToken string `mapstructure:"auth_token"`

	Limits   LimitsConfig   `mapstructure:"limits"`
	HTTP     HTTPConfig     `mapstructure:"http"`
	Shutdown ShutdownConfig `mapstructure:"shutdown"`
	Engine   EngineConfig   `mapstructure:"engine"`
	Policies PoliciesConfig `mapstructure:"policies"`
	Web      WebConfig      `mapstructure:"web"`
	Sessions SessionsConfig `mapstructure:"sessions"`

	CrossSite CrossSiteConfig `mapstructure:"cross_site"`
	// Connections and TLS (config_conn.go).
	Conns ConnsConfig `mapstructure:"conns"`
	TLS   TLSConfig   `mapstructure:"tls"`
}

// CrossSiteConfig says which hosts and pages may reach the API from a
// browser besides the server itself (site.go: DNS rebinding and cross-site
// requests).
type CrossSiteConfig struct {
	// AllowedHosts are host names (no port) accepted in a request's Host
	// besides loopback names (localhost, 127.0.0.1, [::1]) and the
	// listening address: the names a proxy or the users' URLs give it.
	AllowedHosts []string `mapstructure:"allowed_hosts"`
	// AllowedOrigins are origins ("http://host:port") whose pages may call
	// the API besides the server's own (a request's Origin, when a browser
	// sends one, must be one of these).
	AllowedOrigins []string `mapstructure:"allowed_origins"`
}

// SessionsConfig shapes sessions a client creates.
type SessionsConfig struct {
	// DefaultOpponent is the bot that plays the other seats of a session
	// whose create request names no opponent (neither "opponent" nor
	// "opponents") and whose learner_seats leave seats to play: a bot of
	// the card game, built-in ("search") or of a loaded policy
	// ("search:policy:<name>"), checked at start-up. Empty: such a request
	// must name its opponent.
	DefaultOpponent string `mapstructure:"default_opponent"`
}

// PoliciesConfig says where trained policies are loaded from at start-up.
type PoliciesConfig struct {
	// Dir holds <name>.onnx files (dgenv policy v1); each is served as the
	// bot "policy:<name>". Empty: no policies. Only this directory is read,
	// and no path or link may lead out of it.
	Dir string `mapstructure:"dir"`
	// Pins maps policy names to hex SHA-256 digests their files must have.
	Pins map[string]string `mapstructure:"pins"`
	// MaxActRows bounds the rows of one POST /v1/policies/{name}/act.
	MaxActRows int `mapstructure:"max_act_rows"`
}

// LimitsConfig bounds what clients may hold.
type LimitsConfig struct {
	MaxSessions       int           `mapstructure:"max_sessions"`         // sessions alive at once (429 beyond)
	MaxEnvsPerSession int           `mapstructure:"max_envs_per_session"` // num_envs of one session (400 beyond)
	MaxEnvsTotal      int           `mapstructure:"max_envs_total"`       // envs over all sessions (429 beyond)
	SessionTTL        time.Duration `mapstructure:"session_ttl"`          // idle sessions are deleted after this
	SweepInterval     time.Duration `mapstructure:"sweep_interval"`       // how often the sweeper looks
	RetryAfter        time.Duration `mapstructure:"retry_after"`          // Retry-After sent with 429
	MaxCreateBody     int64         `mapstructure:"max_create_body"`      // bytes of a create-session body
	MaxSearchEnvs     int           `mapstructure:"max_search_envs"`      // num_envs of a session with a costly bot (env.Costly: "search") on any seat
	// MaxSearchEnvsTotal bounds the envs played against "search" over all
	// sessions (the bot thinks for milliseconds a move, on every core).
	MaxSearchEnvsTotal int `mapstructure:"max_search_envs_total"`
	// MemoryBudget bounds, in bytes, the memory all sessions may come to
	// hold, each counted at creation at the worst case of its settings.
	MemoryBudget int64 `mapstructure:"memory_budget"`
	// BusyWait is how long a request waits for another request on the same
	// session to finish before answering 409 busy; 0 never waits.
	BusyWait time.Duration `mapstructure:"busy_wait"`
}

// HTTPConfig are the http.Server limits.
type HTTPConfig struct {
	ReadHeaderTimeout time.Duration `mapstructure:"read_header_timeout"`
	ReadTimeout       time.Duration `mapstructure:"read_timeout"`
	WriteTimeout      time.Duration `mapstructure:"write_timeout"`
	IdleTimeout       time.Duration `mapstructure:"idle_timeout"`
	MaxHeaderBytes    int           `mapstructure:"max_header_bytes"`
	// MaxConns bounds the connections open at once; more wait to be accepted.
	MaxConns int `mapstructure:"max_conns"`
}

// ShutdownConfig shapes a graceful stop.
type ShutdownConfig struct {
	// DrainDelay is how long readiness answers 503 while requests are still
	// served, so a load balancer can stop sending new ones.
	DrainDelay time.Duration `mapstructure:"drain_delay"`
	// Timeout bounds the wait for in-flight requests; then connections are cut.
	Timeout time.Duration `mapstructure:"timeout"`
}

// EngineConfig tunes the vectorised envs.
type EngineConfig struct {
	// Workers is the goroutines stepping each session's batch; 0 = GOMAXPROCS.
	Workers int `mapstructure:"workers"`
}

// DefaultConfig is the configuration of configs/default.yaml (a cmd test
// keeps the two equal).
func DefaultConfig() Config {
	return Config{
		Addr: "127.0.0.1:8080",
		Limits: LimitsConfig{
			MaxSessions:        64,
			MaxEnvsPerSession:  65536,
			MaxEnvsTotal:       262144,
			SessionTTL:         10 * time.Minute,
			SweepInterval:      10 * time.Second,
			RetryAfter:         time.Second,
			MaxCreateBody:      64 << 10,
			MaxSearchEnvs:      64,
			BusyWait:           2 * time.Second,
			MaxSearchEnvsTotal: 128,
			MemoryBudget:       2 << 30,
		},
		HTTP: HTTPConfig{
			ReadHeaderTimeout: 5 * time.Second,
			ReadTimeout:       60 * time.Second,
			WriteTimeout:      60 * time.Second,
			IdleTimeout:       120 * time.Second,
			MaxHeaderBytes:    16 << 10,
			MaxConns:          1024,
		},
		Shutdown: ShutdownConfig{DrainDelay: 0, Timeout: 10 * time.Second},
		Policies: PoliciesConfig{MaxActRows: 8192},
		Web:      WebConfig{Enabled: true},
		// Empty lists, as the YAML's [] decodes.
		CrossSite: CrossSiteConfig{AllowedHosts: []string{}, AllowedOrigins: []string{}},
		Conns:     defaultConnsConfig(), // config_conn.go
	}
}

// Validate checks every value and names the ones that are wrong.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key string, v any, why string) {
		errs = append(errs, fmt.Errorf("%s = %v: %s", key, v, why))
	}
	if network, path := ListenAddr(c.Addr); network == "unix" {
		switch {
		case path == "":
			bad("addr", fmt.Sprintf("%q", c.Addr), `want "unix:" followed by the socket's path`)
		case len(path) > maxSocketPath:
			bad("addr", fmt.Sprintf("%q", c.Addr), fmt.Sprintf("socket path is %d bytes, the limit is %d", len(path), maxSocketPath))
		case len(filepath.Dir(path))+socketTempExtra > maxSocketPath:
			bad("addr", fmt.Sprintf("%q", c.Addr), fmt.Sprintf("the socket's directory is %d bytes, the limit is %d (the socket is first bound in a private directory inside it)", len(filepath.Dir(path)), maxSocketPath-socketTempExtra))
		case strings.ContainsRune(path, 0):
			bad("addr", fmt.Sprintf("%q", c.Addr), "socket path contains a NUL byte")
		}
	} else if host, _, err := net.SplitHostPort(c.Addr); err != nil {
		bad("addr", fmt.Sprintf("%q", c.Addr), `want host:port or "unix:" and a path`)
	} else if !isLoopback(host) && c.AuthToken == "" {
		bad("addr", c.Addr, "not a loopback address and no auth_token is set: refusing to serve the API unauthenticated")
	}
	if strings.TrimSpace(c.AuthToken) != c.AuthToken {
		bad("auth_token", "(hidden)", "has leading or trailing space")
	}
	l := c.Limits
	if l.MaxSessions < 1 {
		bad("limits.max_sessions", l.MaxSessions, "must be >= 1")
	}
	if l.MaxEnvsPerSession < 1 || l.MaxEnvsPerSession > env.MaxNumEnvs {
		bad("limits.max_envs_per_session", l.MaxEnvsPerSession, fmt.Sprintf("must be 1..%d", env.MaxNumEnvs))
	}
	if l.MaxEnvsTotal < 1 {
		bad("limits.max_envs_total", l.MaxEnvsTotal, "must be >= 1")
	}
	if l.SessionTTL <= 0 {
		bad("limits.session_ttl", l.SessionTTL, "must be > 0")
	}
	if l.SweepInterval <= 0 {
		bad("limits.sweep_interval", l.SweepInterval, "must be > 0")
	}
	if l.RetryAfter < time.Second {
		bad("limits.retry_after", l.RetryAfter, "must be >= 1s")
	}
	if l.MaxSearchEnvs < 1 {
		bad("limits.max_search_envs", l.MaxSearchEnvs, "must be >= 1")
	}
	if l.MaxSearchEnvsTotal < l.MaxSearchEnvs {
		bad("limits.max_search_envs_total", l.MaxSearchEnvsTotal, fmt.Sprintf("must be >= limits.max_search_envs (%d)", l.MaxSearchEnvs))
	}
	if l.MemoryBudget < 64<<20 {
		bad("limits.memory_budget", l.MemoryBudget, "must be >= 67108864 (64 MiB)")
	}
	if l.BusyWait < 0 {
		bad("limits.busy_wait", l.BusyWait, "must be >= 0 (0 = never wait)")
	}
	if l.MaxCreateBody < 1024 {
		bad("limits.max_create_body", l.MaxCreateBody, "must be >= 1024")
	}
	h := c.HTTP
	for _, d := range []struct {
		key string
		v   time.Duration
	}{
		{"http.read_header_timeout", h.ReadHeaderTimeout},
		{"http.read_timeout", h.ReadTimeout},
		{"http.write_timeout", h.WriteTimeout},
		{"http.idle_timeout", h.IdleTimeout},
		{"shutdown.timeout", c.Shutdown.Timeout},
	} {
		if d.v <= 0 {
			bad(d.key, d.v, "must be > 0")
		}
	}
	if h.MaxConns < 1 {
		bad("http.max_conns", h.MaxConns, "must be >= 1")
	}
	if h.MaxHeaderBytes < 1024 {
		bad("http.max_header_bytes", h.MaxHeaderBytes, "must be >= 1024")
	}
	if c.Shutdown.DrainDelay < 0 {
		bad("shutdown.drain_delay", c.Shutdown.DrainDelay, "must be >= 0")
	}
	if c.Engine.Workers < 0 {
		bad("engine.workers", c.Engine.Workers, "must be >= 0 (0 = GOMAXPROCS)")
	}
	if c.Policies.MaxActRows < 1 || c.Policies.MaxActRows > env.MaxNumEnvs {
		bad("policies.max_act_rows", c.Policies.MaxActRows, fmt.Sprintf("must be 1..%d", env.MaxNumEnvs))
	}
	for name, pin := range c.Policies.Pins {
		if !policy.NamePattern.MatchString(name) {
			bad("policies.pins."+name, "(name)", "not a policy name (want "+policy.NamePattern.String()+")")
		}
		if b, err := hex.DecodeString(pin); err != nil || len(b) != sha256.Size {
			bad("policies.pins."+name, pin, "want a hex SHA-256 digest (64 characters)")
		}
	}
	if strings.TrimSpace(c.Sessions.DefaultOpponent) != c.Sessions.DefaultOpponent {
		bad("sessions.default_opponent", fmt.Sprintf("%q", c.Sessions.DefaultOpponent), "has leading or trailing space")
	}
	for _, h := range c.CrossSite.AllowedHosts {
		if net.ParseIP(h) == nil && (h == "" || strings.ContainsAny(h, ":/[]@ \t")) {
			bad("cross_site.allowed_hosts", fmt.Sprintf("%q", h), "want a host name or IP address without scheme or port (IPv6 without brackets: fd00::1)")
		}
	}
	for _, o := range c.CrossSite.AllowedOrigins {
		if _, ok := normalOrigin(o); !ok {
			bad("cross_site.allowed_origins", fmt.Sprintf("%q", o), `want "http://host[:port]" or "https://host[:port]" and nothing more`)
		}
	}
	if len(c.Policies.Pins) > 0 && c.Policies.Dir == "" {
		bad("policies.pins", len(c.Policies.Pins), "pins given but no policies.dir")
	}
	c.validateConn(bad) // config_conn.go
	return errors.Join(errs...)
}

// maxSocketPath is the longest Unix socket path Linux accepts (sun_path is
// 108 bytes with its terminating NUL).
const maxSocketPath = 107

// SocketTempPrefix starts the name of the private (0700) directory a Unix
// socket is bound in before it is renamed to its path (cmd/dgserver), so it
// is never open to other users; os.MkdirTemp adds up to 10 digits.
const SocketTempPrefix = ".dgs"

// socketTempExtra is what the private directory adds to the socket's
// directory: "/", the prefix, 10 digits, "/s".
const socketTempExtra = 1 + len(SocketTempPrefix) + 10 + 2

// ListenAddr splits a configured addr into the network and address for
// net.Listen: "unix" and the path for "unix:PATH", else "tcp" and addr.
func ListenAddr(addr string) (network, address string) {
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		return "unix", path
	}
	return "tcp", addr
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
