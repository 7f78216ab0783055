package server

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
)

// connTracker is the listener Serve accepts on: it keeps every open
// connection with its client's address and HTTP state, so that a full
// server makes room for a new connection by closing one that does nothing,
// instead of leaving the newcomer in the kernel's backlog behind
// connections an attacker keeps idle (issue 18: 1,100 idle connections
// locked out every authenticated client). See ConnsConfig for the order.
// It still never holds more than http.max_conns connections: when every
// one has a request in flight, Accept waits, as before.
type connTracker struct {
	net.Listener
	max, perAddr int

	mu     sync.Mutex
	conns  map[*trackedConn]struct{}
	byAddr map[string]int

	changed   chan struct{} // a connection closed or went idle (buffered 1)
	done      chan struct{}
	closeOnce sync.Once
}

// trackedConn is one accepted connection.
type trackedConn struct {
	net.Conn
	t       *connTracker
	addr    string         // the client's IP; "" (no per-address cap) for Unix sockets
	trusted atomic.Bool    // a request on it passed the token check
	state   http.ConnState // guarded by t.mu
	since   time.Time      // when it entered state; guarded by t.mu
	gone    bool           // counted out (closed or shed); guarded by t.mu
}

func newConnTracker(l net.Listener, max, perAddr int) *connTracker {
	return &connTracker{
		Listener: l, max: max, perAddr: perAddr,
		conns: map[*trackedConn]struct{}{}, byAddr: map[string]int{},
		changed: make(chan struct{}, 1), done: make(chan struct{}),
	}
}

func (t *connTracker) Accept() (net.Conn, error) {
	for {
		if err := t.waitRoom(); err != nil {
			return nil, err
		}
		c, err := t.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if tc := t.admit(c); tc != nil {
			return tc, nil
		}
		select {
		case <-t.done:
			return nil, net.ErrClosed
		default:
		}
	}
}

func (t *connTracker) Close() error {
	err := t.Listener.Close()
	t.closeOnce.Do(func() { close(t.done) })
	return err
}

// waitRoom returns once a connection could be admitted: fewer than max are
// open, or one of them may be closed for it.
func (t *connTracker) waitRoom() error {
	for {
		t.mu.Lock()
		room := len(t.conns) < t.max || t.victim("") != nil
		t.mu.Unlock()
		if room {
			return nil
		}
		select {
		case <-t.changed:
		case <-t.done:
			return net.ErrClosed
		}
	}
}

// admit counts c in, closing idle connections to make room for it under
// the per-address and global caps, and waiting while every connection has
// a request in flight; nil when c was closed instead: its address has its
// whole share with requests in flight, or the listener closed.
func (t *connTracker) admit(c net.Conn) *trackedConn {
	tc := &trackedConn{Conn: c, t: t, addr: ipOf(c.RemoteAddr()), state: http.StateNew, since: time.Now()}
	for {
		var shed []*trackedConn
		t.mu.Lock()
		if tc.addr != "" && t.byAddr[tc.addr] >= t.perAddr {
			v := t.victim(tc.addr)
			if v == nil {
				t.mu.Unlock()
				c.Close()
				return nil
			}
			t.drop(v)
			shed = append(shed, v)
		}
		ok := len(t.conns) < t.max
		if !ok {
			if v := t.victim(""); v != nil {
				t.drop(v)
				shed = append(shed, v)
				ok = true
			}
		}
		if ok {
			t.conns[tc] = struct{}{}
			if tc.addr != "" {
				t.byAddr[tc.addr]++
			}
		}
		t.mu.Unlock()
		for _, v := range shed {
			v.Conn.Close() // its server goroutine sees the error and ends
		}
		if ok {
			return tc
		}
		select { // every connection has a request in flight: wait for one
		case <-t.changed:
		case <-t.done:
			c.Close()
			return nil
		}
	}
}

// victim is the connection to close for a new one (from addr, or any when
// addr is ""): the lowest shedRank, the longest in its state first; nil if
// every one has a request in flight. t.mu is held.
func (t *connTracker) victim(addr string) *trackedConn {
	var best *trackedConn
	bestRank := 0
	for c := range t.conns {
		if addr != "" && c.addr != addr {
			continue
		}
		r := c.shedRank()
		if r < 0 {
			continue
		}
		if best == nil || r < bestRank || (r == bestRank && c.since.Before(best.since)) {
			best, bestRank = c, r
		}
	}
	return best
}

// shedRank orders connections for closing: idle and never trusted (0),
// no full request yet (1: a TLS handshake, headers on their way), idle and
// trusted (2); -1 for a request in flight or a hijacked connection.
func (c *trackedConn) shedRank() int {
	switch c.state {
	case http.StateIdle:
		if c.trusted.Load() {
			return 2
		}
		return 0
	case http.StateNew:
		return 1
	}
	return -1
}

// drop counts c out; t.mu is held.
func (t *connTracker) drop(c *trackedConn) {
	if c.gone {
		return
	}
	c.gone = true
	delete(t.conns, c)
	if c.addr != "" {
		if t.byAddr[c.addr]--; t.byAddr[c.addr] <= 0 {
			delete(t.byAddr, c.addr)
		}
	}
}

func (t *connTracker) notify() {
	select {
	case t.changed <- struct{}{}:
	default:
	}
}

func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.t.mu.Lock()
	c.t.drop(c)
	c.t.mu.Unlock()
	c.t.notify()
	return err
}

// connState is the http.Server's ConnState hook.
func (t *connTracker) connState(nc net.Conn, s http.ConnState) {
	c := trackedOf(nc)
	if c == nil {
		return
	}
	t.mu.Lock()
	c.state, c.since = s, time.Now()
	if s == http.StateClosed {
		t.drop(c)
	}
	t.mu.Unlock()
	if s == http.StateIdle || s == http.StateClosed {
		t.notify()
	}
}

// trackedOf finds the tracked connection under nc (a TLS one included).
func trackedOf(nc net.Conn) *trackedConn {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	c, _ := nc.(*trackedConn)
	return c
}

func ipOf(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	return ""
}

type connKey struct{}

// connContext is the http.Server's ConnContext hook: requests can find
// their connection.
func connContext(ctx context.Context, nc net.Conn) context.Context {
	if c := trackedOf(nc); c != nil {
		return context.WithValue(ctx, connKey{}, c)
	}
	return ctx
}

// trustConn marks the request's connection as trusted: it runs after auth
// on the API routes, so only requests that passed the token check get here.
func trustConn(c *gin.Context) {
	if tc, ok := c.Request.Context().Value(connKey{}).(*trackedConn); ok {
		tc.trusted.Store(true)
	}
}

// dropBody makes net/http give up the body of a request answered without
// it (401): it would otherwise read up to 256 KiB of it after the answer,
// at the client's pace, to reuse the connection. Its read deadline is set
// to now, so that read fails at once and the connection closes.
func dropBody(r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return
	}
	if tc, ok := r.Context().Value(connKey{}).(*trackedConn); ok {
		_ = tc.Conn.SetReadDeadline(time.Now())
	}
}

// bodyPace cuts off request bodies slower than conns.min_body_rate after
// conns.body_grace (issue 18: a body sent a byte every 3 s held its
// connection for the whole read timeout). A body of known length gets one
// read deadline for all of it; a chunked one, a deadline that moves as
// its bytes arrive. net/http clears the deadline itself once the body has
// been read to its end. Bodies a handler leaves unread are discarded by
// net/http under the same deadline.
func (s *Server) bodyPace(next http.Handler) http.Handler {
	grace, rate, limit := s.cfg.Conns.BodyGrace, s.cfg.Conns.MinBodyRate, s.cfg.HTTP.ReadTimeout
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tc, ok := r.Context().Value(connKey{}).(*trackedConn)
		if !ok || r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		start := time.Now()
		if r.ContentLength >= 0 {
			d := min(grace+time.Duration(float64(r.ContentLength)/float64(rate)*float64(time.Second)), limit)
			_ = tc.Conn.SetReadDeadline(start.Add(d))
		} else {
			r.Body = &pacedBody{ReadCloser: r.Body, conn: tc.Conn, start: start, grace: grace, rate: rate, end: start.Add(limit)}
		}
		next.ServeHTTP(w, r)
	})
}

// pacedBody moves the connection's read deadline as a chunked body
// arrives: byte k must have come by start + grace + k/rate.
type pacedBody struct {
	io.ReadCloser
	conn  net.Conn
	start time.Time
	grace time.Duration
	rate  int64
	end   time.Time // the read timeout's deadline
	n     int64
	eof   bool
}

func (b *pacedBody) Read(p []byte) (int, error) {
	if !b.eof {
		d := b.start.Add(b.grace + time.Duration(float64(b.n+1)/float64(b.rate)*float64(time.Second)))
		if d.After(b.end) {
			d = b.end
		}
		_ = b.conn.SetReadDeadline(d)
	}
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	if err == io.EOF {
		b.eof = true // net/http now reads on its own, with no deadline: leave it
	}
	return n, err
}
