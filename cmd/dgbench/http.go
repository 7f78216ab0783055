package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/games"
	"github.com/davidgoliath/dgenv/obs"
	"github.com/davidgoliath/dgenv/server"
	"github.com/davidgoliath/dgenv/server/wire"
)

func init() {
	modes["http"] = runHTTP
	flag.BoolVar(&compare, "compare", false, "http mode: alternate with in-process play of the same batch and print the ratio")
}

// compare is -compare; compareSlice is how long each side plays in turn.
var compare bool

const compareSlice = 500 * time.Millisecond

// inprocRef is the in-process run that -compare measures against: the same
// loop as -mode inproc (pick random legal actions, step), in slices.
type inprocRef struct {
	v       vec
	rng     env.RNG
	actions []int32
	steps   int64
	time    time.Duration
}

func newInprocRef(c config, seats []int) (*inprocRef, error) {
	v, err := newVec(c, seats)
	if err != nil {
		return nil, err
	}
	return &inprocRef{v: v, rng: env.NewRNG(c.seed, 98), actions: make([]int32, c.envs)}, nil
}

func (r *inprocRef) run(d time.Duration) error {
	start := time.Now()
	deadline := start.Add(d)
	for time.Now().Before(deadline) {
		pickActions(r.v.Mask(), r.actions, &r.rng)
		if err := r.v.Step(r.actions); err != nil {
			return err
		}
		r.steps += int64(len(r.actions))
	}
	r.time += time.Since(start)
	return nil
}

// runHTTP measures random legal play through the batch API over loopback:
// one session (or -sessions of them, each stepped by its own client
// goroutine), msgpack (or JSON) bodies. With -addr empty it starts a server
// in this process on 127.0.0.1:0.
func runHTTP(c config) error {
	addr := c.addr
	if addr == "" {
		cfg := server.DefaultConfig()
		switch c.network {
		case "tcp":
			cfg.Addr = "127.0.0.1:0"
		case "unix":
			dir, err := os.MkdirTemp("", "dgbench")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			cfg.Addr = "unix:" + filepath.Join(dir, "s.sock")
		default:
			return fmt.Errorf("-net %q: want tcp or unix", c.network)
		}
		cfg.Engine.Workers = c.workers
		srv, err := server.New(cfg, nil)
		if err != nil {
			return err
		}
		ln, err := net.Listen(server.ListenAddr(cfg.Addr))
		if err != nil {
			return err
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ctx, ln) }()
		defer func() { cancel(); <-done }()
		addr = ln.Addr().String()
		if c.network == "unix" {
			addr = "unix:" + addr
		}
	}
	seats, err := c.seats()
	if err != nil {
		return err
	}
	k := max(c.sessions, 1)
	if c.envs%k != 0 {
		return fmt.Errorf("-sessions %d: must divide -envs %d", k, c.envs)
	}
	sess := make([]*benchSession, k)
	for i := range sess {
		s, err := openSession(c, addr, seats, c.envs/k, uint64(i))
		if err != nil {
			return err
		}
		defer s.close()
		sess[i] = s
	}
	var ref *inprocRef
	if compare {
		if ref, err = newInprocRef(c, seats); err != nil {
			return err
		}
		defer ref.v.Close()
	}
	var httpTime time.Duration
	total := time.Duration(c.seconds * float64(time.Second))
	for httpTime < total {
		// With -compare, alternate slices of HTTP and in-process play, so
		// both see the same machine load.
		slice := total - httpTime
		if compare {
			slice = min(slice, compareSlice)
		}
		start := time.Now()
		deadline := start.Add(slice)
		// Each session is stepped by its own goroutine: with -sessions 2 the
		// client picks one batch's actions while the server steps the other.
		errs := make(chan error, k)
		for _, s := range sess {
			go func() { errs <- s.run(deadline) }()
		}
		for range k {
			if err := <-errs; err != nil {
				return err
			}
		}
		httpTime += time.Since(start)
		if ref != nil {
			if err := ref.run(slice); err != nil {
				return err
			}
		}
	}
	var steps, wire int64
	g := sess[0].game
	var lat []time.Duration
	for _, s := range sess {
		steps += s.steps
		wire += s.cl.wire.Load()
		lat = append(lat, s.lat...)
	}
	el := httpTime.Seconds()
	slices.Sort(lat)
	pct := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) }
	rate := float64(steps) / el
	extra := ""
	if ref != nil {
		in := float64(ref.steps) / ref.time.Seconds()
		extra = fmt.Sprintf(" inproc_steps_per_sec=%.0f http_over_inproc=%.2f", in, rate/in)
	}
	fmt.Printf("steps_per_sec=%.0f mode=http game=%s format=%s players=%d envs=%d sessions=%d packing=%s seconds=%.1f requests=%d bytes_per_step=%.1f p50_us=%.0f p99_us=%.0f%s\n",
		rate, g["name"], c.format, sess[0].players, c.envs, k, c.packing, el, len(lat), float64(wire)/float64(steps), pct(0.50), pct(0.99), extra)
	return nil
}

// benchSession is one session stepped with random legal actions by one
// client connection.
type benchSession struct {
	cl      *benchClient
	base    string
	game    wire.GameSpec // the spec's
	players int           // the spec's
	mask    []byte
	rng     env.RNG
	actions []int32
	req     *stepBody
	steps   int64
	lat     []time.Duration
}

// openSession creates a session of n envs (seed c.seed + i) and resets it.
func openSession(c config, addr string, seats []int, n int, i uint64) (*benchSession, error) {
	cl := newBenchClient(addr, c.token, c.format == "json")
	typ, err := games.Default().Lookup(c.game)
	if err != nil {
		return nil, err
	}
	game, err := c.gameParams(typ)
	if err != nil {
		return nil, err
	}
	game["name"] = typ.Name
	create := map[string]any{"game": game, "num_envs": n, "seed": c.seed + i}
	if seats != nil {
		create["learner_seats"] = seats
		create["opponent"] = c.opp
	}
	switch c.packing {
	case "none":
	case "bits":
		if cl.json {
			return nil, errors.New("-packing bits: use -format msgpack")
		}
		create["packing"] = "bits"
	default:
		return nil, fmt.Errorf("-packing %q: want none or bits", c.packing)
	}
	var created struct {
		Session string    `json:"session"`
		Spec    wire.Spec `json:"spec"`
	}
	if err := cl.call("POST", "/v1/sessions", create, &created); err != nil {
		return nil, err
	}
	if pk := created.Spec.Obs.Packed; pk != nil {
		d := created.Spec.Obs.Shape[0]
		extra := make([]obs.Span, len(pk.Extra))
		for i, sp := range pk.Extra {
			extra[i] = obs.Span{Name: sp.Name, Offset: sp.Offset, Length: sp.Length}
		}
		cl.packing = &obs.Packing{Bytes: pk.ObsBytes, Extra: extra, ExtraBytes: pk.ExtraBytes}
		cl.obs = make([]uint8, n*d)
		na := created.Spec.NumActions
		if pk.MaskBytes != obs.PackedLen(na) {
			return nil, fmt.Errorf("spec: mask_bytes %d for %d actions, want %d", pk.MaskBytes, na, obs.PackedLen(na))
		}
		cl.mask = make([]uint8, n*na)
		cl.d, cl.na = d, na
	}
	s := &benchSession{
		cl: cl, base: "/v1/sessions/" + created.Session, game: created.Spec.Game, players: created.Spec.Players,
		rng: env.NewRNG(c.seed+i, 99), actions: make([]int32, n), req: newStepBody(n),
		lat: make([]time.Duration, 0, 1<<16),
	}
	s.req.json = cl.json
	if s.mask, err = cl.batch(s.base+"/reset", []byte("\x80"), `{}`); err != nil {
		s.close()
		return nil, err
	}
	cl.wire.Store(0)
	return s, nil
}

// run steps the session until the deadline.
func (s *benchSession) run(deadline time.Time) error {
	var err error
	for time.Now().Before(deadline) {
		pickActions(s.mask, s.actions, &s.rng)
		s.req.set(s.actions)
		t0 := time.Now()
		if s.mask, err = s.cl.batch(s.base+"/step", s.req.b, ""); err != nil {
			return err
		}
		s.lat = append(s.lat, time.Since(t0))
		s.steps += int64(len(s.actions))
	}
	return nil
}

func (s *benchSession) close() { _ = s.cl.call("DELETE", s.base, nil, nil) }

// benchClient is a keep-alive HTTP client that counts the bytes on the wire
// and reuses its answer buffer.
type benchClient struct {
	url, token string
	json       bool
	hc         *http.Client
	wire       atomic.Int64
	buf        []byte
	// A packed session's answers are unpacked into obs and mask, as a
	// trainer would before using them.
	packing   *obs.Packing
	d, na     int // obs size and actions of a packed session
	obs, mask []uint8
}

func newBenchClient(addr, token string, useJSON bool) *benchClient {
	cl := &benchClient{url: "http://" + addr, token: token, json: useJSON}
	d := &net.Dialer{}
	network, target := server.ListenAddr(addr)
	if network == "unix" {
		cl.url = "http://unix" // the host is not used: every dial goes to the socket
	}
	cl.hc = &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: 4,
		DisableCompression:  true,
		DialContext: func(ctx context.Context, _, a string) (net.Conn, error) {
			if network == "unix" {
				a = target
			}
			conn, err := d.DialContext(ctx, network, a)
			if err != nil {
				return nil, err
			}
			return &countConn{Conn: conn, n: &cl.wire}, nil
		},
	}}
	return cl
}

type countConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.n.Add(int64(n))
	return n, err
}

func (c *countConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.n.Add(int64(n))
	return n, err
}

func (cl *benchClient) do(method, path string, body []byte) (*http.Response, error) {
	req, err := http.NewRequest(method, cl.url+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if cl.json {
		req.Header.Set("Content-Type", "application/json")
	} else {
		req.Header.Set("Content-Type", "application/msgpack")
	}
	if cl.token != "" {
		req.Header.Set("Authorization", "Bearer "+cl.token)
	}
	return cl.hc.Do(req)
}

// call sends v and decodes the answer into out (nil: discard).
func (cl *benchClient) call(method, path string, v, out any) error {
	var body []byte
	var err error
	if v != nil {
		if cl.json {
			body, err = json.Marshal(v)
		} else {
			body, err = msgpack.Marshal(v)
		}
		if err != nil {
			return err
		}
	}
	resp, err := cl.do(method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s: %q", method, path, resp.Status, b)
	}
	if out == nil {
		return nil
	}
	if cl.json {
		return json.Unmarshal(b, out)
	}
	return wire.UnmarshalMsgpack(b, out)
}

// batch posts a reset or step and returns the mask blob of the answer
// (valid until the next call).
func (cl *benchClient) batch(path string, body []byte, jsonBody string) ([]byte, error) {
	if cl.json && jsonBody != "" {
		body = []byte(jsonBody)
	}
	resp, err := cl.do("POST", path, body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	n := int(resp.ContentLength)
	if n < 0 {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, err
		}
		cl.buf = b
	} else {
		if cap(cl.buf) < n {
			cl.buf = make([]byte, n)
		}
		cl.buf = cl.buf[:n]
		if _, err := io.ReadFull(resp.Body, cl.buf); err != nil {
			return nil, err
		}
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("POST %s: %s: %q", path, resp.Status, cl.buf)
	}
	if cl.json {
		var a struct {
			Mask struct {
				Data []byte `json:"data"`
			} `json:"mask"`
		}
		if err := json.Unmarshal(cl.buf, &a); err != nil {
			return nil, err
		}
		return a.Mask.Data, nil
	}
	if cl.packing != nil {
		return cl.unpack()
	}
	return findBlob(cl.buf, "mask")
}

// unpack rebuilds obs and mask from a packed answer in cl.buf and returns
// the mask.
func (cl *benchClient) unpack() ([]byte, error) {
	bits, err := findBlob(cl.buf, "obs_bits")
	if err != nil {
		return nil, err
	}
	extra, err := findBlob(cl.buf, "obs_extra")
	if err != nil {
		return nil, err
	}
	maskBits, err := findBlob(cl.buf, "mask_bits")
	if err != nil {
		return nil, err
	}
	pk, d, na := cl.packing, cl.d, cl.na
	mb := obs.PackedLen(na)
	n := len(cl.mask) / na
	if len(bits) != n*pk.Bytes || len(extra) != n*pk.ExtraBytes || len(maskBits) != n*mb {
		return nil, fmt.Errorf("packed answer: blob sizes %d, %d, %d do not fit %d envs", len(bits), len(extra), len(maskBits), n)
	}
	for i := range n {
		pk.Unpack(cl.obs[i*d:(i+1)*d], bits[i*pk.Bytes:(i+1)*pk.Bytes], extra[i*pk.ExtraBytes:(i+1)*pk.ExtraBytes])
		obs.UnpackBits(cl.mask[i*na:(i+1)*na], maskBits[i*mb:(i+1)*mb])
	}
	return cl.mask, nil
}

// stepBody is a msgpack step request {"actions": <i4 tensor>} (JSON: a plain
// array) whose action bytes are rewritten in place each step.
type stepBody struct {
	b    []byte
	data int // offset of the blob
	json bool
}

func newStepBody(n int) *stepBody {
	var b []byte
	b = append(b, 0x81, 0xa7)
	b = append(b, "actions"...)
	b = append(b, 0x83, 0xa5)
	b = append(b, "dtype"...)
	b = append(b, 0xa3)
	b = append(b, "<i4"...)
	b = append(b, 0xa5)
	b = append(b, "shape"...)
	b = append(b, 0x91, 0xce)
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	b = append(b, 0xa4)
	b = append(b, "data"...)
	b = append(b, 0xc6)
	b = binary.BigEndian.AppendUint32(b, uint32(4*n))
	s := &stepBody{data: len(b)}
	s.b = append(b, make([]byte, 4*n)...)
	return s
}

func (s *stepBody) set(actions []int32) {
	if s.json {
		s.b = append(s.b[:0], `{"actions":[`...)
		for i, a := range actions {
			if i > 0 {
				s.b = append(s.b, ',')
			}
			s.b = strconv.AppendInt(s.b, int64(a), 10)
		}
		s.b = append(s.b, "]}"...)
		return
	}
	d := s.b[s.data:]
	for i, a := range actions {
		binary.LittleEndian.PutUint32(d[4*i:], uint32(a))
	}
}

// findBlob returns the data of tensor key in a batch answer (a map of
// tensor maps), without copying.
func findBlob(b []byte, key string) ([]byte, error) {
	r := &mpReader{b: b}
	n := r.mapLen()
	for range n {
		k := r.str()
		m := r.mapLen()
		for range m {
			switch r.str() {
			case "data":
				d := r.bin()
				if k == key && r.err == nil {
					return d, nil
				}
			case "shape":
				for range r.arrayLen() {
					r.uint()
				}
			default:
				r.str()
			}
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	return nil, fmt.Errorf("answer has no %q tensor", key)
}

// mpReader reads the few msgpack forms a batch answer uses.
type mpReader struct {
	b   []byte
	err error
}

var errShort = errors.New("msgpack answer truncated or unexpected")

func (r *mpReader) next(n int) []byte {
	if r.err != nil || len(r.b) < n {
		r.err = errShort
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *mpReader) byte1() byte {
	if b := r.next(1); b != nil {
		return b[0]
	}
	return 0
}

func (r *mpReader) size(c byte, fix, b8, b16, b32 byte, mask byte) int {
	switch {
	case fix != 0 && c&^mask == fix:
		return int(c & mask)
	case c == b8 && b8 != 0:
		return int(r.byte1())
	case c == b16:
		if b := r.next(2); b != nil {
			return int(binary.BigEndian.Uint16(b))
		}
	case c == b32:
		if b := r.next(4); b != nil {
			return int(binary.BigEndian.Uint32(b))
		}
	default:
		r.err = errShort
	}
	return 0
}

func (r *mpReader) mapLen() int   { return r.size(r.byte1(), 0x80, 0, 0xde, 0xdf, 0x0f) }
func (r *mpReader) arrayLen() int { return r.size(r.byte1(), 0x90, 0, 0xdc, 0xdd, 0x0f) }
func (r *mpReader) str() string {
	return string(r.next(r.size(r.byte1(), 0xa0, 0xd9, 0xda, 0xdb, 0x1f)))
}
func (r *mpReader) bin() []byte { return r.next(r.size(r.byte1(), 0, 0xc4, 0xc5, 0xc6, 0)) }

func (r *mpReader) uint() uint64 {
	c := r.byte1()
	switch {
	case c < 0x80:
		return uint64(c)
	case c == 0xcc:
		return uint64(r.byte1())
	case c == 0xcd:
		if b := r.next(2); b != nil {
			return uint64(binary.BigEndian.Uint16(b))
		}
	case c == 0xce:
		if b := r.next(4); b != nil {
			return uint64(binary.BigEndian.Uint32(b))
		}
	case c == 0xcf:
		if b := r.next(8); b != nil {
			return binary.BigEndian.Uint64(b)
		}
	default:
		r.err = errShort
	}
	return 0
}
