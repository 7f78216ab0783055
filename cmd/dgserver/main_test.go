package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/davidgoliath/dgenv/env/games"
	"github.com/davidgoliath/dgenv/server"
)

func writeFile(tb testing.TB, text string) string {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), "c.yaml")
	require.NoError(tb, os.WriteFile(p, []byte(text), 0o600))
	return p
}

func TestEmbeddedDefaultIsServerDefault(t *testing.T) {
	cfg, err := loadConfig(nil, nil)
	require.NoError(t, err)
	assert.Equal(t, server.DefaultConfig(), cfg, "configs/default.yaml and server.DefaultConfig disagree")
}

func TestConfigLayers(t *testing.T) {
	file := writeFile(t, "addr: 127.0.0.1:9000\nlimits:\n  max_sessions: 7\n  session_ttl: 90s\n")
	t.Run("a file overrides the defaults", func(t *testing.T) {
		cfg, err := loadConfig([]string{"--config", file}, nil)
		require.NoError(t, err)
		assert.Equal(t, "127.0.0.1:9000", cfg.Addr)
		assert.Equal(t, 7, cfg.Limits.MaxSessions)
		assert.Equal(t, 90*time.Second, cfg.Limits.SessionTTL)
		assert.Equal(t, server.DefaultConfig().Limits.MaxEnvsTotal, cfg.Limits.MaxEnvsTotal, "keys the file omits keep their default")
	})
	t.Run("variables override the file", func(t *testing.T) {
		cfg, err := loadConfig([]string{"--config", file}, []string{"DGSERVER_LIMITS_MAX_SESSIONS=9", "DGSERVER_HTTP_READ_TIMEOUT=3s", "HOME=/x"})
		require.NoError(t, err)
		assert.Equal(t, 9, cfg.Limits.MaxSessions)
		assert.Equal(t, 3*time.Second, cfg.HTTP.ReadTimeout)
	})
	t.Run("allowed hosts and origins from a file and from a variable (comma-separated)", func(t *testing.T) {
		cfg, err := loadConfig([]string{"--config", writeFile(t, "cross_site:\n  allowed_hosts: [dg.example.org]\n  allowed_origins: [\"https://nb.example.org\"]\n")}, nil)
		require.NoError(t, err)
		assert.Equal(t, []string{"dg.example.org"}, cfg.CrossSite.AllowedHosts)
		assert.Equal(t, []string{"https://nb.example.org"}, cfg.CrossSite.AllowedOrigins)
		cfg, err = loadConfig(nil, []string{"DGSERVER_CROSS_SITE_ALLOWED_HOSTS=a.example,b.example"})
		require.NoError(t, err)
		assert.Equal(t, []string{"a.example", "b.example"}, cfg.CrossSite.AllowedHosts)
		_, err = loadConfig(nil, []string{"DGSERVER_CROSS_SITE_ALLOWED_HOSTS=a.example:8080"})
		require.ErrorContains(t, err, "cross_site.allowed_hosts")
	})
	t.Run("flags override variables", func(t *testing.T) {
		cfg, err := loadConfig([]string{"--config", file, "--addr", "127.0.0.1:0"}, []string{"DGSERVER_ADDR=127.0.0.1:1"})
		require.NoError(t, err)
		assert.Equal(t, "127.0.0.1:0", cfg.Addr)
	})
	t.Run("whole numbers written as floats and a zero duration are fine", func(t *testing.T) {
		cfg, err := loadConfig([]string{"--config", writeFile(t, "limits:\n  max_sessions: 8.0\nshutdown:\n  drain_delay: 0\n")}, nil)
		require.NoError(t, err)
		assert.Equal(t, 8, cfg.Limits.MaxSessions)
		assert.Equal(t, time.Duration(0), cfg.Shutdown.DrainDelay)
	})
	t.Run("a token and TLS allow a public address", func(t *testing.T) {
		cfg, err := loadConfig([]string{"--addr", "0.0.0.0:8080"}, []string{"DGSERVER_AUTH_TOKEN=abc", "DGSERVER_TLS_CERT_FILE=c.pem", "DGSERVER_TLS_KEY_FILE=k.pem"})
		require.NoError(t, err)
		assert.Equal(t, "abc", cfg.AuthToken)
		assert.Equal(t, "c.pem", cfg.TLS.CertFile)
	})
	t.Run("a token and an explicit allow_plaintext allow a public address", func(t *testing.T) {
		cfg, err := loadConfig([]string{"--addr", "0.0.0.0:8080"}, []string{"DGSERVER_AUTH_TOKEN=abc", "DGSERVER_TLS_ALLOW_PLAINTEXT=true"})
		require.NoError(t, err)
		assert.True(t, cfg.TLS.AllowPlaintext)
	})
}

func TestConfigErrorsNameTheKey(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		environ []string
		mention string
	}{
		{"an unknown key in the file", []string{"--config", "FILE:limits:\n  max_sesions: 3\n"}, nil, "max_sesions"},
		{"an unknown top-level key", []string{"--config", "FILE:port: 80\n"}, nil, "port"},
		{"a bad duration", []string{"--config", "FILE:http:\n  read_timeout: soon\n"}, nil, "read_timeout"},
		{"a bad number", []string{"--config", "FILE:limits:\n  max_sessions: many\n"}, nil, "max_sessions"},
		{"an out-of-range value", nil, []string{"DGSERVER_LIMITS_MAX_SESSIONS=0"}, "limits.max_sessions"},
		{"an unknown variable", nil, []string{"DGSERVER_MAX_SESSIONS=3"}, "DGSERVER_MAX_SESSIONS"},
		{"a public address without a token", []string{"--addr", "0.0.0.0:8080"}, nil, "auth_token"},
		{"a public address with a token but no TLS", []string{"--addr", "0.0.0.0:8080"}, []string{"DGSERVER_AUTH_TOKEN=abc"}, "tls.cert_file"},
		{"a certificate without its key", nil, []string{"DGSERVER_TLS_CERT_FILE=c.pem"}, "tls.key_file"},
		{"TLS on a Unix socket", []string{"--addr", "unix:/tmp/x.sock"}, []string{"DGSERVER_TLS_CERT_FILE=c.pem", "DGSERVER_TLS_KEY_FILE=k.pem"}, "Unix socket"},
		{"a per-address cap above the global one", nil, []string{"DGSERVER_CONNS_MAX_PER_ADDR=2000"}, "conns.max_per_addr"},
		{"no minimum body rate", nil, []string{"DGSERVER_CONNS_MIN_BODY_RATE=0"}, "conns.min_body_rate"},
		{"an address without a port", []string{"--addr", "localhost"}, nil, "addr"},
		{"a unix address without a path", []string{"--addr", "unix:"}, nil, "socket's path"},
		{"a unix socket path too long", []string{"--addr", "unix:/" + strings.Repeat("d", 120)}, nil, "limit is 107"},
		{"a unix socket directory too long for the private directory", []string{"--addr", "unix:/" + strings.Repeat("d", 92) + "/s"}, nil, "limit is 90"},
		{"a missing file", []string{"--config", "/nonexistent/x.yaml"}, nil, "x.yaml"},
		{"an unknown flag", []string{"--port", "80"}, nil, "port"},
		{"a stray argument", []string{"serve"}, nil, "serve"},
		{"a duration without a unit", []string{"--config", "FILE:http:\n  read_timeout: 60\n"}, nil, "http.read_timeout = 60: a duration needs a unit"},
		{"a fractional duration without a unit", []string{"--config", "FILE:limits:\n  session_ttl: 1.5\n"}, nil, "limits.session_ttl"},
		{"a duration variable without a unit", nil, []string{"DGSERVER_HTTP_WRITE_TIMEOUT=60"}, "http.write_timeout"},
		{"a fractional count", []string{"--config", "FILE:limits:\n  max_sessions: 2.7\n"}, nil, "limits.max_sessions = 2.7: want a whole number"},
		{"a fractional byte count", []string{"--config", "FILE:limits:\n  max_create_body: 65536.5\n"}, nil, "limits.max_create_body"},
		{"a fractional count variable", nil, []string{"DGSERVER_LIMITS_MAX_SESSIONS=2.7"}, "limits.max_sessions"},
		{"a count too large for an int", []string{"--config", "FILE:limits:\n  max_sessions: 1e30\n"}, nil, "limits.max_sessions"},
	} {
		t.Run("refuses "+tc.name, func(t *testing.T) {
			args := append([]string(nil), tc.args...)
			for i, a := range args {
				if text, ok := strings.CutPrefix(a, "FILE:"); ok {
					args[i] = writeFile(t, text)
				}
			}
			_, err := loadConfig(args, tc.environ)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.mention)
		})
	}
}

// TestRunServesAndStops starts the command on a free port, reads the
// address it prints, talks to it, and stops it as a signal would.
func TestRunServesAndStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	var stderr strings.Builder
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--addr", "127.0.0.1:0"}, nil, pw, &stderr)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err)
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	require.True(t, ok, "first line %q", line)
	require.Regexp(t, `^http://127\.0\.0\.1:[1-9][0-9]*$`, url)
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	resp, err := http.Get(url + "/v1/readyz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	cancel()
	select {
	case code := <-done:
		assert.Equal(t, 0, code, "stderr: %s", stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatal("run did not return after its context ended")
	}
}

// TestRunServesOnAUnixSocket serves on a socket file: owner-only, answering
// HTTP, refused to a second server while the first runs, removed on exit.
func TestRunServesOnAUnixSocket(t *testing.T) {
	sock := filepath.Join(shortTempDir(t), "dg.sock")
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	var stderr strings.Builder
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--addr", "unix:" + sock}, nil, pw, &stderr)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "listening on unix:"+sock, strings.TrimSpace(line))
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	fi, err := os.Stat(sock)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "socket permissions")

	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("http://unix/v1/readyz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	var out2, err2 strings.Builder
	assert.Equal(t, 1, run(context.Background(), []string{"--addr", "unix:" + sock}, nil, &out2, &err2))
	assert.Contains(t, err2.String(), "another server is listening")

	cancel()
	select {
	case code := <-done:
		assert.Equal(t, 0, code, "stderr: %s", stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatal("run did not return after its context ended")
	}
	_, err = os.Stat(sock)
	assert.True(t, os.IsNotExist(err), "socket file left behind: %v", err)
}

func TestListenReplacesAStaleSocketOnly(t *testing.T) {
	dir := shortTempDir(t)
	stale := filepath.Join(dir, "stale.sock")
	ln, err := net.Listen("unix", stale)
	require.NoError(t, err)
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	require.NoError(t, ln.Close()) // the file stays, nothing listens: a crashed server's leftover
	ln, where, err := listen("unix:" + stale)
	require.NoError(t, err, "a stale socket is replaced")
	assert.Equal(t, "unix:"+stale, where)
	require.NoError(t, ln.Close())

	plain := filepath.Join(dir, "data.txt")
	require.NoError(t, os.WriteFile(plain, []byte("keep me"), 0o644))
	_, _, err = listen("unix:" + plain)
	require.ErrorContains(t, err, "not a socket")
	b, err := os.ReadFile(plain)
	require.NoError(t, err)
	assert.Equal(t, "keep me", string(b), "a regular file is never removed")
}

// shortTempDir is a fresh directory with a short path: t.TempDir's long
// names can pass the 107-byte limit on socket paths.
func shortTempDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "dgs")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func TestRunRefusesABadConfig(t *testing.T) {
	var stdout, stderr strings.Builder
	code := run(context.Background(), []string{"--addr", "0.0.0.0:0"}, nil, &stdout, &stderr)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr.String(), "auth_token")
}

func TestPoliciesFlagSetsTheDirectory(t *testing.T) {
	cfg, err := loadConfig([]string{"--policies", "/srv/policies"}, nil)
	require.NoError(t, err)
	require.Equal(t, "/srv/policies", cfg.Policies.Dir)
	cfg, err = loadConfig(nil, []string{"DGSERVER_POLICIES_DIR=/env/policies"})
	require.NoError(t, err)
	require.Equal(t, "/env/policies", cfg.Policies.Dir)
}

func TestBadPolicyDirectoriesStopStartUp(t *testing.T) {
	model, err := os.ReadFile("../../env/policy/testdata/parity.onnx")
	require.NoError(t, err)
	good := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(good, "parity.onnx"), model, 0o644))
	junk := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(junk, "junk.onnx"), []byte("not a model"), 0o644))
	other := t.TempDir()
	bad := bytes.Replace(model, []byte("current_trick"), []byte("current_trics"), 1)
	require.NoError(t, os.WriteFile(filepath.Join(other, "bad.onnx"), bad, 0o644))
	escape := t.TempDir()
	require.NoError(t, os.Symlink(filepath.Join(good, "parity.onnx"), filepath.Join(escape, "escape.onnx")))
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"a directory that does not exist", []string{"--policies", filepath.Join(good, "missing")}, "policies.dir"},
		{"a file that is not ONNX", []string{"--policies", junk}, "junk.onnx"},
		{"a model with another layout", []string{"--policies", other}, "bad.onnx"},
		{"a link out of the directory", []string{"--policies", escape}, "escape.onnx"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			code := run(context.Background(), append(tc.args, "--addr", "127.0.0.1:0"), nil, &stdout, &stderr)
			require.Equal(t, 2, code, "exit status; stderr %q", stderr.String())
			require.Contains(t, stderr.String(), tc.want)
		})
	}
	t.Run("a pin that does not match", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "pins.yaml")
		require.NoError(t, os.WriteFile(file, []byte("policies:\n  dir: "+good+"\n  pins:\n    parity: "+strings.Repeat("ab", 32)+"\n"), 0o644))
		var stdout, stderr strings.Builder
		code := run(context.Background(), []string{"--config", file, "--addr", "127.0.0.1:0"}, nil, &stdout, &stderr)
		require.Equal(t, 2, code)
		require.Contains(t, stderr.String(), "does not match")
	})
	t.Run("a good directory serves its policy", func(t *testing.T) {
		ps, err := loadPolicies(server.PoliciesConfig{Dir: good}, games.Default())
		require.NoError(t, err)
		require.Contains(t, ps, "parity")
	})
}

func TestWebSwitch(t *testing.T) {
	cfg, err := loadConfig(nil, nil)
	require.NoError(t, err)
	assert.True(t, cfg.Web.Enabled, "the browser app is on by default")
	cfg, err = loadConfig([]string{"--web=false"}, nil)
	require.NoError(t, err)
	assert.False(t, cfg.Web.Enabled)
	cfg, err = loadConfig(nil, []string{"DGSERVER_WEB_ENABLED=false"})
	require.NoError(t, err)
	assert.False(t, cfg.Web.Enabled)
	cfg, err = loadConfig([]string{"--config", writeFile(t, "web:\n  enabled: false\n"), "--web"}, nil)
	require.NoError(t, err)
	assert.True(t, cfg.Web.Enabled, "the flag overrides the file")
}

// TestSignalsDrain runs main in a child process (this test binary) and
// sends it each stop signal: it must drain and exit 0, never die of it.
func TestSignalsDrain(t *testing.T) {
	if os.Getenv("DG_TEST_RUN_MAIN") == "1" {
		os.Args = []string{"dgserver", "--addr", "127.0.0.1:0"}
		main()
		return
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestSignalsDrain$")
			cmd.Env = append(os.Environ(), "DG_TEST_RUN_MAIN=1")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			line, err := bufio.NewReader(out).ReadString('\n')
			require.NoError(t, err, "reading the first line")
			require.Contains(t, line, "listening on")
			go func() { _, _ = io.Copy(io.Discard, out) }()
			require.NoError(t, cmd.Process.Signal(sig))
			err = cmd.Wait()
			require.NoError(t, err, "exit after %v; stderr: %s", sig, stderr.String())
			assert.Contains(t, stderr.String(), "shutting down")
		})
	}
}

// TestPoliciesDirRefusesAFIFO: a FIFO named x.onnx in policies.dir stops
// start-up with its name instead of hanging it.
func TestPoliciesDirRefusesAFIFO(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "x.onnx"), 0o600))
	var stdout, stderr strings.Builder
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), []string{"--addr", "127.0.0.1:0", "--policies", dir}, nil, &stdout, &stderr)
	}()
	select {
	case code := <-done:
		assert.Equal(t, 2, code)
		assert.Contains(t, stderr.String(), "x.onnx: not a regular file")
	case <-time.After(20 * time.Second):
		t.Fatal("start-up hung on a FIFO in policies.dir")
	}
}
