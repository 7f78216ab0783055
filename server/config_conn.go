package server

import (
	"crypto/tls"
	"fmt"
	"net"
	"time"
)

// This file holds the configuration of connections and TLS (issue 18),
// kept apart from config.go's other blocks.

// ConnsConfig says who may hold a connection when connections run short
// (docs/api.md, Connections). With http.max_conns open, a new connection is
// served by closing one that does nothing: first an idle keep-alive
// connection that never passed the bearer-token check (or, with no token,
// never made an API request), then one that has sent no full request yet,
// then any idle one; each time the one idle the longest. Connections with a
// request in flight are never closed for another.
type ConnsConfig struct {
	// MaxPerAddr bounds the connections open at once from one IP address;
	// 0 means half of http.max_conns. Past it, a new connection from that
	// address closes one of that address's own idle connections, or is
	// closed itself.
	MaxPerAddr int `mapstructure:"max_per_addr"`
	// BodyGrace is how long a request body may take before MinBodyRate
	// applies (the first bytes of a body, a slow start).
	BodyGrace time.Duration `mapstructure:"body_grace"`
	// MinBodyRate is the average rate, in bytes per second after
	// BodyGrace, below which a request body is cut off.
	MinBodyRate int64 `mapstructure:"min_body_rate"`
}

// TLSConfig turns on HTTPS (Go's crypto/tls): with a certificate and its
// key the server speaks only TLS (1.2 or later) on addr.
type TLSConfig struct {
	CertFile string `mapstructure:"cert_file"` // PEM certificate, its chain after it
	KeyFile  string `mapstructure:"key_file"`  // PEM private key of the certificate
	// AllowPlaintext lets a non-loopback addr with auth_token serve plain
	// HTTP (the token then crosses the network in clear text): for a
	// server behind a TLS-terminating proxy on a trusted network.
	AllowPlaintext bool `mapstructure:"allow_plaintext"`
}

// Enabled reports whether a certificate is configured.
func (t TLSConfig) Enabled() bool { return t.CertFile != "" || t.KeyFile != "" }

func defaultConnsConfig() ConnsConfig {
	return ConnsConfig{MaxPerAddr: 0, BodyGrace: 5 * time.Second, MinBodyRate: 64 << 10}
}

// maxPerAddr is conns.max_per_addr with 0 resolved.
func (c *Config) maxPerAddr() int {
	if c.Conns.MaxPerAddr > 0 {
		return c.Conns.MaxPerAddr
	}
	return max(1, c.HTTP.MaxConns/2)
}

// validateConn checks the connection and TLS keys.
func (c *Config) validateConn(bad func(key string, v any, why string)) {
	n := c.Conns
	if n.MaxPerAddr < 0 || n.MaxPerAddr > c.HTTP.MaxConns {
		bad("conns.max_per_addr", n.MaxPerAddr, fmt.Sprintf("must be 0..http.max_conns (%d); 0 = half of http.max_conns", c.HTTP.MaxConns))
	}
	if n.BodyGrace <= 0 {
		bad("conns.body_grace", n.BodyGrace, "must be > 0")
	}
	if n.MinBodyRate < 1 {
		bad("conns.min_body_rate", n.MinBodyRate, "must be >= 1 (bytes per second)")
	}
	t := c.TLS
	if (t.CertFile == "") != (t.KeyFile == "") {
		bad("tls", fmt.Sprintf("cert_file=%q key_file=%q", t.CertFile, t.KeyFile), "give both tls.cert_file and tls.key_file, or neither")
	}
	network, _ := ListenAddr(c.Addr)
	if network == "unix" {
		if t.Enabled() {
			bad("tls.cert_file", t.CertFile, "TLS is not served on a Unix socket (its file permissions guard it); use a host:port addr")
		}
		return
	}
	host, _, err := net.SplitHostPort(c.Addr)
	if err == nil && !isLoopback(host) && c.AuthToken != "" && !t.Enabled() && !t.AllowPlaintext {
		bad("addr", c.Addr, "not a loopback address and no TLS: the bearer token would cross the network in clear text; set tls.cert_file and tls.key_file (or tls.allow_plaintext: true behind a TLS-terminating proxy)")
	}
}

// loadTLS reads the configured certificate; nil when TLS is off.
func loadTLS(t TLSConfig) (*tls.Config, error) {
	if !t.Enabled() {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("tls.cert_file / tls.key_file: %w", err)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
		// HTTP/1.1 only: connections are managed one request at a time
		// (conns.go), which HTTP/2's streams would get around.
		NextProtos: []string{"http/1.1"},
	}, nil
}
