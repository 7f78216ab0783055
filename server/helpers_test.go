package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/card"
	"github.com/davidgoliath/dgenv/server"
	"github.com/davidgoliath/dgenv/server/wire"
)

const (
	ctMsgpack = "application/msgpack"
	ctJSON    = "application/json"
)

// testConfig is the default configuration with a fast sweeper and small caps.
func testConfig(mutate ...func(*server.Config)) server.Config {
	cfg := server.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.Engine.Workers = 2
	for _, m := range mutate {
		m(&cfg)
	}
	return cfg
}

// newServer builds a server closed at the end of the test.
func newServer(tb testing.TB, mutate ...func(*server.Config)) *server.Server {
	tb.Helper()
	srv, err := server.New(testConfig(mutate...), nil)
	require.NoError(tb, err)
	tb.Cleanup(srv.Close)
	return srv
}

// newServerOf builds a server of the games in reg, closed at the end of the test.
func newServerOf(tb testing.TB, reg *env.Registry, mutate ...func(*server.Config)) *server.Server {
	tb.Helper()
	srv, err := server.New(testConfig(mutate...), nil, server.WithGames(reg))
	require.NoError(tb, err)
	tb.Cleanup(srv.Close)
	return srv
}

// client talks to a server through its handler in-process (no sockets), or
// to a URL when base is set.
type client struct {
	tb    testing.TB
	h     http.Handler
	base  string
	hc    *http.Client
	token string
}

func newClient(tb testing.TB, mutate ...func(*server.Config)) *client {
	tb.Helper()
	return &client{tb: tb, h: newServer(tb, mutate...).Handler()}
}

// serve runs srv on a loopback listener until the test ends.
func serve(tb testing.TB, srv *server.Server) (url string, stop func() error) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	var stopped bool
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		return <-done
	}
	tb.Cleanup(func() { _ = stop() })
	return "http://" + ln.Addr().String(), stop
}

type answer struct {
	Status int
	Header http.Header
	Body   []byte
}

func (c *client) do(method, path, ct string, body []byte) answer {
	c.tb.Helper()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req := httptest.NewRequest(method, "http://localhost"+path, r)
	if c.base != "" {
		var err error
		req, err = http.NewRequest(method, c.base+path, r)
		require.NoError(c.tb, err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.base == "" {
		w := httptest.NewRecorder()
		c.h.ServeHTTP(w, req)
		return answer{w.Code, w.Header(), w.Body.Bytes()}
	}
	if c.hc == nil {
		// A client of its own: a pooled connection to an earlier test's
		// server (which may have had the same port) must never be reused.
		c.hc = &http.Client{Transport: &http.Transport{}}
		c.tb.Cleanup(c.hc.CloseIdleConnections)
	}
	resp, err := c.hc.Do(req)
	require.NoError(c.tb, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(c.tb, err)
	return answer{resp.StatusCode, resp.Header, b}
}

func mp(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := msgpack.Marshal(v)
	require.NoError(tb, err)
	return b
}

func js(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.Marshal(v)
	require.NoError(tb, err)
	return b
}

// decodeAnswer decodes a body in the format of its Content-Type.
func decodeAnswer(tb testing.TB, a answer, out any) {
	tb.Helper()
	ct := a.Header.Get("Content-Type")
	var err error
	if strings.HasPrefix(ct, ctMsgpack) {
		dec := msgpack.NewDecoder(bytes.NewReader(a.Body))
		dec.SetCustomStructTag("json")
		err = dec.Decode(out)
	} else {
		err = json.Unmarshal(a.Body, out)
	}
	require.NoError(tb, err, "decoding %s answer %q", ct, a.Body)
}

type tensor struct {
	Dtype string `json:"dtype"`
	Shape []int  `json:"shape"`
	Data  []byte `json:"data"`
}

type batch struct {
	Obs     tensor `json:"obs"`
	Mask    tensor `json:"mask"`
	Player  tensor `json:"player"`
	Rewards tensor `json:"rewards"`
	Done    tensor `json:"done"`
	Scores  tensor `json:"scores"`
	Episode tensor `json:"episode"`
}

func (b *batch) rewards() []float32 { return le[float32](b.Rewards.Data) }
func (b *batch) scores() []int32    { return le[int32](b.Scores.Data) }
func (b *batch) episode() []int64   { return le[int64](b.Episode.Data) }

// le decodes a little-endian blob element by element (the reference the
// server's zero-copy writing is checked against).
func le[T float32 | int32 | int64](b []byte) []T {
	var out []T
	var x T
	r := bytes.NewReader(b)
	for r.Len() > 0 {
		if err := binaryRead(r, &x); err != nil {
			panic(err)
		}
		out = append(out, x)
	}
	return out
}

type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Env     *int   `json:"env"`
		Action  *int   `json:"action"`
		Legal   []int  `json:"legal"`
	} `json:"error"`
}

// requireError checks status and code of an error answer and returns it.
func requireError(tb testing.TB, a answer, status int, code string) errorBody {
	tb.Helper()
	require.Equal(tb, status, a.Status, "status of answer %q", a.Body)
	var e errorBody
	decodeAnswer(tb, a, &e)
	require.Equal(tb, code, e.Error.Code, "error code of answer %q", a.Body)
	require.NotEmpty(tb, e.Error.Message)
	return e
}

type spec struct {
	NumEnvs      int           `json:"num_envs"`
	Players      int           `json:"players"`
	NumActions   int           `json:"num_actions"`
	LearnerSeats []int         `json:"learner_seats"`
	Opponent     string        `json:"opponent"`
	Opponents    []*string     `json:"opponents"`
	Reward       string        `json:"reward"`
	Seed         uint64        `json:"seed"`
	Game         wire.GameSpec `json:"game"`
	Packing      string        `json:"packing"`
	Obs          struct {
		Shape    []int  `json:"shape"`
		Dtype    string `json:"dtype"`
		Sections []struct {
			Name   string `json:"name"`
			Offset int    `json:"offset"`
			Shape  []int  `json:"shape"`
			Min    int    `json:"min"`
			Max    int    `json:"max"`
			Doc    string `json:"doc"`
		} `json:"sections"`
	} `json:"obs"`
}

type created struct {
	Session string   `json:"session"`
	Spec    spec     `json:"spec"`
	Bots    []string `json:"bots"`
}

// create makes a session (msgpack) and returns its answer.
func (c *client) create(req map[string]any) created {
	c.tb.Helper()
	a := c.do("POST", "/v1/sessions", ctMsgpack, mp(c.tb, req))
	require.Equal(c.tb, http.StatusOK, a.Status, "create: %q", a.Body)
	var out created
	decodeAnswer(c.tb, a, &out)
	return out
}

// step posts actions as an int32 tensor in msgpack and decodes the batch.
func (c *client) step(id string, actions []int32) batch {
	c.tb.Helper()
	a := c.do("POST", "/v1/sessions/"+id+"/step", ctMsgpack, stepBody(c.tb, actions))
	require.Equal(c.tb, http.StatusOK, a.Status, "step: %q", a.Body)
	var b batch
	decodeAnswer(c.tb, a, &b)
	return b
}

func (c *client) reset(id string, body map[string]any) batch {
	c.tb.Helper()
	a := c.do("POST", "/v1/sessions/"+id+"/reset", ctMsgpack, mp(c.tb, body))
	require.Equal(c.tb, http.StatusOK, a.Status, "reset: %q", a.Body)
	var b batch
	decodeAnswer(c.tb, a, &b)
	return b
}

func stepBody(tb testing.TB, actions []int32) []byte {
	data := make([]byte, 4*len(actions))
	for i, a := range actions {
		data[4*i] = byte(a)
		data[4*i+1] = byte(a >> 8)
		data[4*i+2] = byte(a >> 16)
		data[4*i+3] = byte(a >> 24)
	}
	return mp(tb, map[string]any{"actions": map[string]any{"dtype": "<i4", "shape": []int{len(actions)}, "data": data}})
}

// legalActions picks, per env, the k-th legal action (k mod count) from a
// mask of n rows (of any game's number of actions).
func legalActions(mask []byte, n int, pick func(i, count int) int) []int32 {
	out := make([]int32, n)
	na := len(mask) / n
	for i := range n {
		row := mask[i*na : (i+1)*na]
		var legal []int32
		for a, m := range row {
			if m == 1 {
				legal = append(legal, int32(a))
			}
		}
		out[i] = legal[pick(i, len(legal))]
	}
	return out
}

// illegalAction returns an in-range action that is not legal in env i.
func illegalAction(mask []byte, i int) int32 {
	for a := range card.NumActions {
		if mask[i*card.NumActions+a] == 0 {
			return int32(a)
		}
	}
	panic("every action legal")
}

func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
