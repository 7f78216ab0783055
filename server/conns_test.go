package server_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/davidgoliath/dgenv/server"
)

// rawConn is a connection written by hand: an attacker's, or a client
// whose requests the test paces.
type rawConn struct {
	tb testing.TB
	net.Conn
	r *bufio.Reader
}

func dialRaw(tb testing.TB, url string) *rawConn {
	tb.Helper()
	return dialFrom(tb, "127.0.0.1", url)
}

// dialFrom connects from the loopback address from (127.0.0.0/8: another
// client address on the same machine).
func dialFrom(tb testing.TB, from, url string) *rawConn {
	tb.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c, err := d.Dial("tcp", strings.TrimPrefix(url, "http://"))
	require.NoError(tb, err)
	tb.Cleanup(func() { c.Close() })
	return &rawConn{tb: tb, Conn: c, r: bufio.NewReader(c)}
}

// get sends GET path (with the token, if any) and reads the answer's status.
func (c *rawConn) get(path, token string) (int, error) {
	auth := ""
	if token != "" {
		auth = "Authorization: Bearer " + token + "\r\n"
	}
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: localhost\r\n%s\r\n", path, auth); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// startBody sends the headers of a POST create with a body of n bytes, and
// none of the body.
func (c *rawConn) startBody(n int) {
	c.tb.Helper()
	_, err := fmt.Fprintf(c, "POST /v1/sessions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", n)
	require.NoError(c.tb, err)
}

// idleConns opens n connections that each ask /v1/healthz once (no token)
// and then sit idle.
func idleConns(tb testing.TB, url string, n int) {
	tb.Helper()
	for i := range n {
		c := dialRaw(tb, url)
		status, err := c.get("/v1/healthz", "")
		require.NoError(tb, err, "idle connection %d", i)
		require.Equal(tb, http.StatusOK, status)
	}
}

// slowConns opens n connections that each send the headers of a 60,000-byte
// create body and then one byte of it every interval, without a token,
// until the test ends.
func slowConns(tb testing.TB, url string, n int, interval time.Duration) {
	tb.Helper()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	tb.Cleanup(func() { close(stop); wg.Wait() })
	for range n {
		c := dialRaw(tb, url)
		c.startBody(60000)
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(interval)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					if _, err := c.Write([]byte{' '}); err != nil {
						return // the server cut it off
					}
				}
			}
		}()
	}
}

// TestIdleAndSlowConnectionsCannotLockOutAClient is issue 18's lockout,
// scaled down: more idle connections than http.max_conns and slow bodies,
// all from the client's own address, and then a client with the token (or,
// on a server without one, any client) must still be answered at once.
// Before, it waited in the kernel's backlog until an idle connection timed
// out (http.idle_timeout, 2 minutes).
func TestIdleAndSlowConnectionsCannotLockOutAClient(t *testing.T) {
	for _, token := range []string{"s3cret", ""} {
		t.Run(fmt.Sprintf("token %q", token), func(t *testing.T) {
			srv := newServer(t, func(c *server.Config) {
				c.HTTP.MaxConns = 40
				c.AuthToken = token
			})
			url, _ := serve(t, srv)
			idleConns(t, url, 44)
			slowConns(t, url, 12, 500*time.Millisecond)
			idleConns(t, url, 4) // the slow ones are in, with requests in flight
			c := dialRaw(t, url)
			require.NoError(t, c.SetDeadline(time.Now().Add(2*time.Second)))
			status, err := c.get("/v1/games", token)
			require.NoError(t, err, "a client was not answered within 2 s")
			assert.Equal(t, http.StatusOK, status)
		})
	}
}

// TestSlowBodyIsCutOff: a body slower than conns.min_body_rate after
// conns.body_grace loses its connection long before http.read_timeout.
func TestSlowBodyIsCutOff(t *testing.T) {
	srv := newServer(t, func(c *server.Config) {
		c.Conns.BodyGrace = 500 * time.Millisecond
		c.HTTP.ReadTimeout = time.Minute
	})
	url, _ := serve(t, srv)
	slowConns(t, url, 1, 50*time.Millisecond) // 20 bytes/s
	// The same, read: the server must end the exchange (an error answer
	// and close, or just close) well before the read timeout.
	c := dialRaw(t, url)
	c.startBody(60000)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Second)))
	go func() {
		for range 400 {
			if _, err := c.Write([]byte{' '}); err != nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	_, err := io.Copy(io.Discard, c.r)
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "a 20 bytes/s body still held its connection after 20 s")
}

// TestAFullServerClosesAnIdleConnectionForANewOne: with http.max_conns = 2
// and both connections idle, a third is served, and one of the idle ones
// (exactly one) is closed for it. Which one (the longest idle) is
// TestVictimIsTheLowestRankLongestInItsState's: here the server records a
// connection as idle after the client has read its answer, so two
// connections made idle back to back may be recorded in either order.
func TestAFullServerClosesAnIdleConnectionForANewOne(t *testing.T) {
	srv := newServer(t, func(c *server.Config) { c.HTTP.MaxConns = 2; c.Conns.MaxPerAddr = 2 })
	url, _ := serve(t, srv)
	first, second := dialRaw(t, url), dialRaw(t, url)
	for _, c := range []*rawConn{first, second} {
		status, err := c.get("/v1/healthz", "")
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, status)
	}
	third := dialRaw(t, url)
	require.NoError(t, third.SetDeadline(time.Now().Add(20*time.Second)))
	status, err := third.get("/v1/healthz", "")
	require.NoError(t, err, "the third connection was not served")
	assert.Equal(t, http.StatusOK, status)
	open := 0
	for _, c := range []*rawConn{first, second} {
		require.NoError(t, c.SetDeadline(time.Now().Add(20*time.Second)))
		if status, err := c.get("/v1/healthz", ""); err == nil {
			assert.Equal(t, http.StatusOK, status)
			open++
		}
	}
	assert.Equal(t, 1, open, "idle connections still open after the third was served, want 1 of 2")
}

// TestTrustedIdleConnectionsAreClosedLast: an idle connection that passed
// the token check outlives newer idle ones that never did.
func TestTrustedIdleConnectionsAreClosedLast(t *testing.T) {
	const token = "s3cret"
	srv := newServer(t, func(c *server.Config) { c.HTTP.MaxConns = 3; c.Conns.MaxPerAddr = 3; c.AuthToken = token })
	url, _ := serve(t, srv)
	trusted := dialRaw(t, url)
	status, err := trusted.get("/v1/games", token)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	idleConns(t, url, 4) // each past the second closes an older untrusted one
	status, err = trusted.get("/v1/games", token)
	require.NoError(t, err, "the trusted connection was closed for untrusted ones")
	assert.Equal(t, http.StatusOK, status)
}

// inFlight opens a connection from address from with a create request in
// flight: its headers sent, the handler waiting for the body (body_grace
// is long in these tests). It returns the body to send.
func inFlight(tb testing.TB, from, url string) (*rawConn, string) {
	tb.Helper()
	body := `{"num_envs": 1}`
	c := dialFrom(tb, from, url)
	_, err := fmt.Fprintf(c, "POST /v1/sessions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", len(body))
	require.NoError(tb, err)
	// "100 Continue" comes when the handler starts reading the body.
	resp, err := http.ReadResponse(c.r, nil)
	require.NoError(tb, err)
	require.Equal(tb, http.StatusContinue, resp.StatusCode)
	return c, body
}

// TestConnectionsAreCapped: with http.max_conns = 2 and a request in flight
// on each, a third connection (from another address) is not served,
// nothing may be closed for it, and it is once one of them is done.
func TestConnectionsAreCapped(t *testing.T) {
	srv := newServer(t, func(c *server.Config) {
		c.HTTP.MaxConns = 2
		c.Conns.BodyGrace = time.Minute
	})
	url, _ := serve(t, srv)
	var busy []*rawConn
	var body string
	for _, from := range []string{"127.0.0.2", "127.0.0.3"} {
		c, b := inFlight(t, from, url)
		busy, body = append(busy, c), b
	}
	third := dialRaw(t, url)
	answered := make(chan error, 1)
	go func() {
		_, err := third.get("/v1/healthz", "")
		answered <- err
	}()
	select {
	case err := <-answered:
		t.Fatalf("a third connection was served while two had requests in flight (err %v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	_, err := io.WriteString(busy[0], body)
	require.NoError(t, err)
	resp, err := http.ReadResponse(busy[0].r, nil)
	require.NoError(t, err)
	resp.Body.Close()
	select {
	case err := <-answered:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("the third connection was not served after a request ended")
	}
}

// TestOneAddressGetsItsShareOnly: past conns.max_per_addr with requests in
// flight on all of its connections, an address's new connection is closed,
// while another address is served.
func TestOneAddressGetsItsShareOnly(t *testing.T) {
	srv := newServer(t, func(c *server.Config) {
		c.HTTP.MaxConns = 4
		c.Conns.MaxPerAddr = 2
		c.Conns.BodyGrace = time.Minute
	})
	url, _ := serve(t, srv)
	inFlight(t, "127.0.0.2", url)
	inFlight(t, "127.0.0.2", url)
	extra := dialFrom(t, "127.0.0.2", url)
	require.NoError(t, extra.SetDeadline(time.Now().Add(20*time.Second)))
	_, err := extra.get("/v1/healthz", "")
	require.Error(t, err, "a third connection from one address was served past conns.max_per_addr = 2")
	other := dialRaw(t, url)
	require.NoError(t, other.SetDeadline(time.Now().Add(20*time.Second)))
	status, err := other.get("/v1/healthz", "")
	require.NoError(t, err, "another address was not served")
	assert.Equal(t, http.StatusOK, status)
}

// TestARefusedBodyIsNotWaitedFor: a request without the token that
// announces a body it does not send is answered 401 and its connection
// closed at once, not after the body has trickled in (issue 18: slow
// unauthenticated bodies held connections on a server with a token).
func TestARefusedBodyIsNotWaitedFor(t *testing.T) {
	srv := newServer(t, func(c *server.Config) {
		c.AuthToken = "s3cret"
		c.Conns.BodyGrace = time.Minute
	})
	url, _ := serve(t, srv)
	c := dialRaw(t, url)
	c.startBody(60000)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	resp, err := http.ReadResponse(c.r, nil)
	require.NoError(t, err)
	_, err = io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.True(t, resp.Close, "the 401 keeps the connection")
	_, err = c.r.ReadByte()
	require.Error(t, err, "more bytes after the 401")
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the connection stayed open, waiting for the body")
}
