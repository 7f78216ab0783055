package server_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/davidgoliath/dgenv/server"
)

// selfSigned writes a fresh self-signed certificate for 127.0.0.1 and
// localhost and its key; it returns their paths and the certificate.
func selfSigned(tb testing.TB) (certFile, keyFile string, cert *x509.Certificate) {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(tb, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "dgserver test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(tb, err)
	cert, err = x509.ParseCertificate(der)
	require.NoError(tb, err)
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(tb, err)
	dir := tb.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(tb, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(tb, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), 0o600))
	return certFile, keyFile, cert
}

// TestTLSServesHTTPSOnly: with tls.cert_file and tls.key_file the server
// answers over TLS a client that trusts the certificate, refuses one that
// does not, and answers a plain-HTTP request with an error, not the API.
func TestTLSServesHTTPSOnly(t *testing.T) {
	certFile, keyFile, cert := selfSigned(t)
	const token = "s3cret"
	srv := newServer(t, func(c *server.Config) {
		c.AuthToken = token
		c.TLS.CertFile, c.TLS.KeyFile = certFile, keyFile
	})
	url, _ := serve(t, srv)
	addr := strings.TrimPrefix(url, "http://")

	pool := x509.NewCertPool()
	pool.AddCert(cert)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequest("GET", "https://"+addr+"/v1/games", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := hc.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.Equal(t, "HTTP/1.1", resp.Proto)
	require.NotNil(t, resp.TLS)
	assert.GreaterOrEqual(t, resp.TLS.Version, uint16(tls.VersionTLS12))

	untrusting := &http.Client{Transport: &http.Transport{}}
	defer untrusting.CloseIdleConnections()
	_, err = untrusting.Get("https://" + addr + "/v1/healthz")
	require.Error(t, err, "a client without the certificate connected")
	var unknown x509.UnknownAuthorityError
	assert.ErrorAs(t, err, &unknown)

	plain := &http.Client{Transport: &http.Transport{}}
	defer plain.CloseIdleConnections()
	resp, err = plain.Get("http://" + addr + "/v1/healthz")
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, string(body), "HTTPS")
}

// TestTLSConfiguration: a bad pair stops New naming the keys; a public
// address with a token needs TLS or an explicit allow_plaintext.
func TestTLSConfiguration(t *testing.T) {
	certFile, keyFile, _ := selfSigned(t)
	otherCert, _, _ := selfSigned(t)
	_, err := server.New(testConfig(func(c *server.Config) { c.TLS.CertFile, c.TLS.KeyFile = otherCert, keyFile }), nil)
	require.ErrorContains(t, err, "tls.cert_file / tls.key_file")
	_, err = server.New(testConfig(func(c *server.Config) {
		c.TLS.CertFile, c.TLS.KeyFile = certFile, filepath.Join(t.TempDir(), "none.pem")
	}), nil)
	require.ErrorContains(t, err, "tls.cert_file / tls.key_file")

	for _, tc := range []struct {
		name   string
		mutate func(*server.Config)
		err    string
	}{
		{"a public address with a token and no TLS", func(c *server.Config) { c.Addr, c.AuthToken = "0.0.0.0:8080", "t" }, "clear text"},
		{"a certificate without a key", func(c *server.Config) { c.TLS.CertFile = certFile }, "tls.key_file"},
		{"TLS on a Unix socket", func(c *server.Config) {
			c.Addr = "unix:/tmp/dg.sock"
			c.TLS.CertFile, c.TLS.KeyFile = certFile, keyFile
		}, "Unix socket"},
		{"a public address with a token and TLS", func(c *server.Config) {
			c.Addr, c.AuthToken = "0.0.0.0:8080", "t"
			c.TLS.CertFile, c.TLS.KeyFile = certFile, keyFile
		}, ""},
		{"a public address with a token and allow_plaintext", func(c *server.Config) {
			c.Addr, c.AuthToken, c.TLS.AllowPlaintext = "0.0.0.0:8080", "t", true
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(tc.mutate)
			err := cfg.Validate()
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.err)
		})
	}
}

// TestTLSHandshakesDoNotLockOut: connections that never finish a TLS
// handshake are closed for a client like any idle one.
func TestTLSHandshakesDoNotLockOut(t *testing.T) {
	certFile, keyFile, cert := selfSigned(t)
	srv := newServer(t, func(c *server.Config) {
		c.HTTP.MaxConns = 8
		c.TLS.CertFile, c.TLS.KeyFile = certFile, keyFile
	})
	url, _ := serve(t, srv)
	addr := strings.TrimPrefix(url, "http://")
	for range 12 { // connect, never say hello
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer c.Close()
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, "GET", "https://"+addr+"/v1/healthz", nil)
	require.NoError(t, err)
	resp, err := hc.Do(req)
	require.NoError(t, err, "a client was not answered within 2 s")
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}
