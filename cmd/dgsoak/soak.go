package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/games"
	"github.com/davidgoliath/dgenv/obs"
	"github.com/davidgoliath/dgenv/server"
	"github.com/davidgoliath/dgenv/server/wire"
)

type config struct {
	server    string
	duration  time.Duration
	clients   int
	maxEnvs   int
	restartAt float64
	seed      uint64
	// games are the games the sessions play, one drawn per session
	// (registry names; every game of the registry when empty).
	games []string
}

// report is what a soak run saw. Counters are added under mu.
type report struct {
	mu        sync.Mutex
	duration  time.Duration
	requests  int64
	byCode    map[string]int64 // error answers by "status code"
	transport int64            // requests that got no answer (refused, reset, cut)
	aborted   int64            // requests the client dropped on purpose
	// abortedCreates are the creates among them: the same create is then
	// sent again with its request_id.
	abortedCreates int64
	retried        int64 // requests sent again with the same seq or request_id
	created        int64
	lost           int64 // sessions gone after the restart (404)
	illegal        int64 // illegal actions sent on purpose (each must answer 422)
	steps          int64 // successful steps
	envSteps       int64
	replayed       int64 // finished games whose record was replayed and matched
	replayedByGame map[string]int64
	restarts       int
	peakRSS        []int64 // per server life, bytes (VmHWM)
	// retriesAnswered is the server's dgserver_retries_answered_total by
	// route at the end (its last life): requests it recognised as retries.
	retriesAnswered map[string]int64
	failures        []string
	failedCount     int64
}

func (r *report) add(f func(r *report)) {
	r.mu.Lock()
	f(r)
	r.mu.Unlock()
}

// fail records a failed check; the first few messages are kept.
func (r *report) fail(format string, args ...any) {
	r.add(func(r *report) {
		r.failedCount++
		if len(r.failures) < 20 {
			r.failures = append(r.failures, fmt.Sprintf(format, args...))
		}
	})
}

func (r *report) ok() bool { return r.failedCount == 0 && r.replayed > 0 }

func (r *report) print(w io.Writer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	secs := r.duration.Seconds()
	fmt.Fprintf(w, "duration=%s requests=%d (%.0f/s) steps=%d env_steps=%d\n", r.duration.Round(time.Second), r.requests, float64(r.requests)/secs, r.steps, r.envSteps)
	codes := make([]string, 0, len(r.byCode))
	for c := range r.byCode {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	var parts []string
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%s=%d", c, r.byCode[c]))
	}
	fmt.Fprintf(w, "error answers by code: %s\n", strings.Join(parts, " "))
	var ra []string
	for _, route := range []string{"create", "reset", "step"} {
		ra = append(ra, fmt.Sprintf("%s=%d", route, r.retriesAnswered[route]))
	}
	fmt.Fprintf(w, "transport_errors=%d aborted_requests=%d (creates %d) retried=%d illegal_sent=%d\n", r.transport, r.aborted, r.abortedCreates, r.retried, r.illegal)
	fmt.Fprintf(w, "server_retries_answered (since the restart): %s\n", strings.Join(ra, " "))
	fmt.Fprintf(w, "sessions_created=%d sessions_lost_to_restart=%d server_restarts=%d\n", r.created, r.lost, r.restarts)
	var peaks []string
	var peak int64
	for _, p := range r.peakRSS {
		peaks = append(peaks, fmt.Sprintf("%.1f", float64(p)/(1<<20)))
		peak = max(peak, p)
	}
	fmt.Fprintf(w, "server_peak_rss_mib=%.1f (per life: %s)\n", float64(peak)/(1<<20), strings.Join(peaks, ", "))
	fmt.Fprintf(w, "games_replayed=%d failed_checks=%d\n", r.replayed, r.failedCount)
	names := make([]string, 0, len(r.replayedByGame))
	for g := range r.replayedByGame {
		names = append(names, g)
	}
	sort.Strings(names)
	var by []string
	for _, g := range names {
		by = append(by, fmt.Sprintf("%s=%d", g, r.replayedByGame[g]))
	}
	fmt.Fprintf(w, "games_replayed_by_game: %s\n", strings.Join(by, " "))
	for _, f := range r.failures {
		fmt.Fprintln(w, "  FAIL:", f)
	}
	if r.replayed == 0 {
		fmt.Fprintln(w, "  FAIL: no game finished, nothing was replayed")
	}
}

// soak runs the whole thing: server, clients, restart, report.
func soak(ctx context.Context, c config, logw io.Writer) (*report, error) {
	rep := &report{byCode: map[string]int64{}, replayedByGame: map[string]int64{}}
	srv, err := startServer(c.server, "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := srv.addr
	var cur atomic.Pointer[serverProc]
	cur.Store(srv)
	defer func() { cur.Load().stop(rep) }()

	start := time.Now()
	deadline := start.Add(c.duration)
	runCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var restarted atomic.Int64 // unix nanos of the last restart; 0: none yet

	var wg sync.WaitGroup
	for i := range c.clients {
		cl := newClient(addr, c, uint64(i), rep, &restarted)
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl.loop(runCtx)
		}()
	}
	if c.restartAt > 0 {
		select {
		case <-time.After(time.Duration(float64(c.duration) * c.restartAt)):
			old := cur.Load()
			old.kill(rep)
			restarted.Store(time.Now().UnixNano())
			fmt.Fprintf(logw, "dgsoak: killed the server (SIGKILL) after %s; restarting on %s\n", time.Since(start).Round(time.Second), addr)
			s2, err := startServer(c.server, addr)
			if err != nil {
				cancel()
				wg.Wait()
				return nil, fmt.Errorf("restart: %w", err)
			}
			cur.Store(s2)
			rep.add(func(r *report) { r.restarts++ })
		case <-runCtx.Done():
		}
	}
	wg.Wait()
	rep.duration = time.Since(start)
	rep.retriesAnswered = retriesAnswered("http://" + addr)
	return rep, nil
}

// retriesAnswered reads dgserver_retries_answered_total from /metrics (the
// server's count of retries it answered with what it had already produced,
// since its last start) by route; nil if unavailable.
func retriesAnswered(base string) map[string]int64 {
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(base + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil
	}
	out := map[string]int64{}
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, `dgserver_retries_answered_total{route="`)
		if !ok {
			continue
		}
		route, v, ok := strings.Cut(rest, `"} `)
		if x, err := strconv.ParseFloat(v, 64); ok && err == nil {
			out[route] = int64(x)
		}
	}
	return out
}

// serverProc is one life of the server process.
type serverProc struct {
	cmd  *exec.Cmd
	addr string // host:port
	peak atomic.Int64
	done chan struct{}
}

// startServer runs the binary on addr and waits until it is ready.
func startServer(bin, addr string) (*serverProc, error) { return startServerEnv(bin, addr, nil) }

// startServerEnv is startServer with extra environment variables
// (DGSERVER_* settings) for the server.
func startServerEnv(bin, addr string, env []string) (*serverProc, error) {
	cmd := exec.Command(bin, "--addr", addr)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stderr = io.Discard
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w (build it with: go build -o bin/ ./cmd/...)", bin, err)
	}
	p := &serverProc{cmd: cmd, done: make(chan struct{})}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		first := true
		for sc.Scan() {
			if first {
				lines <- sc.Text()
				first = false
			}
		}
		close(lines)
	}()
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	select {
	case line, ok := <-lines:
		where, found := strings.CutPrefix(line, "listening on http://")
		if !ok || !found {
			_ = cmd.Process.Kill()
			return nil, fmt.Errorf("%s: first line %q, want \"listening on http://...\"", bin, line)
		}
		p.addr = where
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("%s printed no address in 60s", bin)
	}
	go p.watchRSS()
	hc := &http.Client{Timeout: 2 * time.Second}
	for range 600 {
		resp, err := hc.Get("http://" + p.addr + "/v1/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	return nil, fmt.Errorf("%s on %s: not ready after 30s", bin, p.addr)
}

// watchRSS keeps the process's peak resident size (VmHWM, Linux).
func (p *serverProc) watchRSS() {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		p.readRSS()
		select {
		case <-p.done:
			return
		case <-t.C:
		}
	}
}

func (p *serverProc) readRSS() {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/status")
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err == nil && kb*1024 > p.peak.Load() {
				p.peak.Store(kb * 1024)
			}
		}
	}
}

// kill ends the process with SIGKILL: every session is lost.
func (p *serverProc) kill(rep *report) {
	p.readRSS()
	_ = p.cmd.Process.Kill()
	<-p.done
	rep.add(func(r *report) { r.peakRSS = append(r.peakRSS, p.peak.Load()) })
}

// stop ends the process gracefully (SIGTERM), then SIGKILL after 15 s.
func (p *serverProc) stop(rep *report) {
	p.readRSS()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	rep.add(func(r *report) { r.peakRSS = append(r.peakRSS, p.peak.Load()) })
}

// The answers the soak reads. The session's spec is the server's own type;
// of a batch and a record only the fields checked here are named.
type createAnswer struct {
	Session string      `json:"session"`
	Spec    server.Spec `json:"spec"`
	Seq     int64       `json:"seq"`
}

type batchAnswer struct {
	Mask     server.Tensor `json:"mask"`
	MaskBits server.Tensor `json:"mask_bits"`
	Done     server.Tensor `json:"done"`
	Scores   server.Tensor `json:"scores"`
	Seq      int64         `json:"seq"`
}

// recordAnswer's finished record is read as the decoder gives it: the
// fields of every record (game, actions, returns, seed), then the game's
// own fields (envRecord).
type recordAnswer struct {
	Finished map[string]any `json:"finished"`
}

// envRecord reads a finished record of any game from the wire
// (wire.RecordFrom: the one reading of a record the server also uses).
func envRecord(w map[string]any) (*env.Record, error) {
	r, err := wire.RecordFrom(w)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	r.Terminal = true
	return r, nil
}

type errorAnswer struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Seq     *int64 `json:"seq"`
	} `json:"error"`
}

// answer is one HTTP exchange's outcome.
type answer struct {
	status int
	code   string // error code when status >= 400
	msg    string
	body   []byte
	ct     string
}

// client is one of the soak's clients: sequential, one session at a time.
type client struct {
	base      string
	addr      string
	hc        *http.Client
	cfg       config
	rng       env.RNG
	rep       *report
	restarted *atomic.Int64
}

func newClient(addr string, c config, i uint64, rep *report, restarted *atomic.Int64) *client {
	return &client{
		base: "http://" + addr, addr: addr, cfg: c, rng: env.NewRNG(c.seed, 1000+i), rep: rep, restarted: restarted,
		hc: &http.Client{
			Timeout:   60 * time.Second,
			Transport: &http.Transport{MaxIdleConnsPerHost: 2, DisableCompression: true},
		},
	}
}

func (cl *client) intn(n int) int { return int(cl.rng.Uint64() % uint64(n)) }

// send makes one request; a transport error comes back as err.
func (cl *client) send(ctx context.Context, method, path string, body any, useJSON bool) (answer, error) {
	var rd io.Reader
	ct := "application/msgpack"
	if useJSON {
		ct = "application/json"
	}
	if body != nil {
		b, err := encode(body, useJSON)
		if err != nil {
			return answer{}, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, cl.base+path, rd)
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Accept", ct)
	cl.rep.add(func(r *report) { r.requests++ })
	resp, err := cl.hc.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	a := answer{status: resp.StatusCode, body: b, ct: resp.Header.Get("Content-Type")}
	if a.status >= 400 {
		var e errorAnswer
		if err := decode(b, a.ct, &e); err != nil {
			a.code = "undecodable"
		}
		a.code, a.msg = e.Error.Code, e.Error.Message
		key := strconv.Itoa(a.status) + " " + a.code
		cl.rep.add(func(r *report) { r.byCode[key]++ })
		if a.status >= 500 {
			cl.rep.fail("%s %s: %d %s: %s", method, path, a.status, a.code, a.msg)
		}
	}
	return a, nil
}

// call sends a request and, while it gets no answer (the server is down or
// restarting, the connection was cut), sends the very same request again.
// That is safe for every request the soak retries: GETs and DELETEs, steps
// and resets with their seq, creates with their request_id.
func (cl *client) call(ctx context.Context, method, path string, body any, useJSON bool) (answer, error) {
	delay := 20 * time.Millisecond
	for first := true; ; first = false {
		if !first {
			cl.rep.add(func(r *report) { r.retried++ })
		}
		a, err := cl.send(ctx, method, path, body, useJSON)
		if err == nil {
			if a.status == http.StatusConflict && a.code == "busy" || a.status == http.StatusServiceUnavailable || a.status == http.StatusTooManyRequests {
				err = fmt.Errorf("%d %s", a.status, a.code)
			} else {
				return a, nil
			}
		} else {
			cl.rep.add(func(r *report) { r.transport++ })
		}
		if ctx.Err() != nil {
			return a, ctx.Err()
		}
		time.Sleep(delay)
		delay = min(2*delay, time.Second)
	}
}

func encode(v any, useJSON bool) ([]byte, error) {
	if useJSON {
		return json.Marshal(v)
	}
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.SetCustomStructTag("json")
	err := enc.Encode(v)
	return buf.Bytes(), err
}

func decode(b []byte, ct string, v any) error {
	if strings.HasPrefix(ct, "application/json") {
		return json.Unmarshal(b, v)
	}
	dec := msgpack.NewDecoder(bytes.NewReader(b))
	dec.SetCustomStructTag("json")
	return dec.Decode(v)
}

// decodeRecord is decode for a record answer: JSON numbers are read
// exactly (a seed has 64 bits), as wire.RecordFrom reads them.
func decodeRecord(b []byte, ct string, r *recordAnswer) error {
	if !strings.HasPrefix(ct, "application/json") {
		return decode(b, ct, r)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(r)
}

// loop runs sessions until ctx ends.
func (cl *client) loop(ctx context.Context) {
	for ctx.Err() == nil {
		if err := cl.session(ctx); err != nil && ctx.Err() == nil {
			cl.rep.fail("%v", err)
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// sess is the client's view of its session.
type sess struct {
	id      string
	n, p    int
	na      int // actions per env: the spec's num_actions
	json    bool
	seq     int64
	mask    []bool // [n*na] of the last batch
	created int64  // unix nanos
}

var errLost = errors.New("session lost")

// session creates a session, plays it for a while and deletes it.
func (cl *client) session(ctx context.Context) error {
	// One of the games (all of the registry's unless -game names some),
	// with a random seat count of those it allows and, where it has the
	// parameters, that count and 1..3 deals.
	names := cl.cfg.games
	if len(names) == 0 {
		names = games.Default().Names()
	}
	typ, err := games.Default().Lookup(names[cl.intn(len(names))])
	if err != nil {
		return err
	}
	p := typ.Players[cl.intn(len(typ.Players))]
	game := map[string]any{"name": typ.Name}
	if slices.Contains(typ.ParamNames(), "players") {
		game["players"] = p
	}
	n := 1 + cl.intn(cl.cfg.maxEnvs)
	if slices.Contains(typ.ParamNames(), "deals") {
		game["deals"] = 1 + cl.intn(3)
	}
	req := map[string]any{
		"game":       game,
		"num_envs":   n,
		"seed":       cl.rng.Uint64() >> 1,
		"request_id": fmt.Sprintf("soak-%016x", cl.rng.Uint64()),
	}
	switch cl.intn(4) {
	case 0: // self-play: every seat
	case 1:
		req["opponent"], req["learner_seats"] = "random", []int{cl.intn(p)}
	default:
		req["opponent"], req["learner_seats"] = "heuristic", []int{0}
	}
	if cl.intn(4) == 0 {
		req["packing"] = "bits"
	}
	s := &sess{n: n, p: p, json: cl.intn(6) == 0, created: time.Now().UnixNano()}
	if cl.intn(4) == 0 {
		// Drop the create's connection (half-way through its body, or with
		// its answer lost); the same create with its request_id follows.
		cl.abort(ctx, "/v1/sessions", req, s.json)
		cl.rep.add(func(r *report) { r.abortedCreates++ })
	}
	a, err := cl.call(ctx, "POST", "/v1/sessions", req, s.json)
	if err != nil {
		return nil // the run ended
	}
	if a.status != http.StatusOK {
		return fmt.Errorf("create %v: %d %s: %s", req, a.status, a.code, a.msg)
	}
	var ca createAnswer
	if err := decode(a.body, a.ct, &ca); err != nil {
		return fmt.Errorf("create answer: %w", err)
	}
	if ca.Spec.NumEnvs != n || ca.Spec.Players != p || ca.Seq != 0 {
		return fmt.Errorf("create answer: spec %d envs %d players seq %d, asked %d envs %d players", ca.Spec.NumEnvs, ca.Spec.Players, ca.Seq, n, p)
	}
	if want := obs.PackedLen(ca.Spec.NumActions); ca.Spec.Obs.Packed != nil && ca.Spec.Obs.Packed.MaskBytes != want {
		return fmt.Errorf("create answer: mask_bytes %d for %d actions, want %d", ca.Spec.Obs.Packed.MaskBytes, ca.Spec.NumActions, want)
	}
	s.id, s.na = ca.Session, ca.Spec.NumActions
	cl.rep.add(func(r *report) { r.created++ })
	path := "/v1/sessions/" + s.id

	err = cl.batch(ctx, s, "/reset", map[string]any{"seed": cl.intn(1000), "seq": s.seq})
	steps := 20 + cl.intn(200)
	for i := 0; err == nil && i < steps && ctx.Err() == nil; i++ {
		switch r := cl.intn(100); {
		case r < 3:
			err = cl.illegal(ctx, s)
		case r < 6:
			err = cl.abortedStep(ctx, s)
		case r < 8:
			_, err = cl.record(ctx, s, cl.intn(n))
		default:
			err = cl.step(ctx, s, cl.actions(s))
		}
	}
	if errors.Is(err, errLost) || ctx.Err() != nil {
		return nil
	}
	if err != nil {
		return err
	}
	a, err = cl.call(ctx, "DELETE", path, nil, s.json)
	if err == nil && a.status != http.StatusOK && a.status != http.StatusNotFound {
		return fmt.Errorf("delete: %d %s", a.status, a.code)
	}
	return nil
}

// actions picks a random legal action in every env.
func (cl *client) actions(s *sess) []int {
	out := make([]int, s.n)
	legal := make([]int, s.na)
	for i := range s.n {
		k := 0
		for a, ok := range s.mask[i*s.na : (i+1)*s.na] {
			if ok {
				legal[k] = a
				k++
			}
		}
		if k > 0 {
			out[i] = legal[cl.intn(k)]
		}
	}
	return out
}

// lostOr turns a 404 after a restart into errLost; anything else not 200 into an error.
func (cl *client) lostOr(s *sess, what string, a answer) error {
	if a.status == http.StatusNotFound && a.code == "not_found" && cl.restarted.Load() > s.created {
		cl.rep.add(func(r *report) { r.lost++ })
		return errLost
	}
	return fmt.Errorf("%s: %d %s: %s", what, a.status, a.code, a.msg)
}

// batch sends a reset or step (with s.seq) and checks and takes in its answer.
func (cl *client) batch(ctx context.Context, s *sess, route string, body map[string]any) error {
	a, err := cl.call(ctx, "POST", "/v1/sessions/"+s.id+route, body, s.json)
	if err != nil {
		return err
	}
	if a.status != http.StatusOK {
		return cl.lostOr(s, route, a)
	}
	var b batchAnswer
	if err := decode(a.body, a.ct, &b); err != nil {
		return fmt.Errorf("%s answer: %w", route, err)
	}
	if b.Seq != s.seq+1 {
		cl.rep.fail("%s with seq %d answered seq %d, want %d", route, s.seq, b.Seq, s.seq+1)
	}
	s.seq = b.Seq
	s.mask = make([]bool, s.n*s.na)
	mb := obs.PackedLen(s.na)
	switch {
	case len(b.Mask.Data) == s.n*s.na:
		for i, x := range b.Mask.Data {
			s.mask[i] = x != 0
		}
	case len(b.MaskBits.Data) == s.n*mb:
		for i := range s.n {
			row := b.MaskBits.Data[i*mb:]
			for a := range s.na {
				s.mask[i*s.na+a] = row[a/8]>>(a%8)&1 == 1
			}
		}
	default:
		return fmt.Errorf("%s answer: mask of %d bytes, bits of %d, for %d envs", route, len(b.Mask.Data), len(b.MaskBits.Data), s.n)
	}
	if route != "/step" {
		return nil
	}
	cl.rep.add(func(r *report) { r.steps++; r.envSteps += int64(s.n) })
	for k := range s.n {
		if b.Done.Data[k] == 0 {
			continue
		}
		scores := make([]int, s.p)
		for j := range s.p {
			scores[j] = int(int32(binary.LittleEndian.Uint32(b.Scores.Data[4*(k*s.p+j):])))
		}
		if err := cl.checkFinished(ctx, s, k, scores); err != nil {
			return err
		}
	}
	return nil
}

func (cl *client) step(ctx context.Context, s *sess, actions []int) error {
	return cl.batch(ctx, s, "/step", map[string]any{"actions": actions, "seq": s.seq})
}

// illegal sends one action the seat cannot play: 422, and nothing changes
// (the session's seq stays, so the next step goes on from the same batch).
func (cl *client) illegal(ctx context.Context, s *sess) error {
	acts := cl.actions(s)
	k := cl.intn(s.n)
	for a := range s.na {
		if !s.mask[k*s.na+a] {
			acts[k] = a
			break
		}
	}
	cl.rep.add(func(r *report) { r.illegal++ })
	a, err := cl.call(ctx, "POST", "/v1/sessions/"+s.id+"/step", map[string]any{"actions": acts, "seq": s.seq}, s.json)
	if err != nil {
		return err
	}
	if a.status == http.StatusUnprocessableEntity && a.code == "illegal_action" {
		return nil
	}
	if a.status == http.StatusNotFound {
		return cl.lostOr(s, "illegal step", a)
	}
	return fmt.Errorf("illegal step: %d %s, want 422 illegal_action", a.status, a.code)
}

// abort sends a POST and drops its connection: half-way through the body,
// or right after the whole request (so the server may apply it, and its
// answer is lost). It reports whether the whole request was sent.
func (cl *client) abort(ctx context.Context, path string, body any, useJSON bool) bool {
	b, err := encode(body, useJSON)
	if err != nil {
		return false
	}
	ct := "application/msgpack"
	if useJSON {
		ct = "application/json"
	}
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", path, cl.addr, ct, len(b))
	whole := cl.intn(2) == 0
	d := net.Dialer{Timeout: 5 * time.Second}
	if conn, err := d.DialContext(ctx, "tcp", cl.addr); err == nil {
		msg := append([]byte(head), b...)
		if !whole {
			msg = msg[:len(head)+len(b)/2]
		}
		_, _ = conn.Write(msg)
		_ = conn.Close()
	}
	cl.rep.add(func(r *report) { r.aborted++; r.requests++ })
	return whole
}

// abortedStep drops a step's connection on purpose (abort), then sends the
// same step again with the same seq: it must be applied exactly once.
func (cl *client) abortedStep(ctx context.Context, s *sess) error {
	body := map[string]any{"actions": cl.actions(s), "seq": s.seq}
	whole := cl.abort(ctx, "/v1/sessions/"+s.id+"/step", body, s.json)
	before := s.seq
	if err := cl.batch(ctx, s, "/step", body); err != nil {
		return err
	}
	a, err := cl.call(ctx, "GET", "/v1/sessions/"+s.id, nil, s.json)
	if err != nil {
		return err
	}
	if a.status != http.StatusOK {
		return cl.lostOr(s, "get session", a)
	}
	var ca createAnswer
	if err := decode(a.body, a.ct, &ca); err != nil {
		return err
	}
	if ca.Seq != before+1 {
		cl.rep.fail("an aborted step (whole request sent: %v) and its retry left seq %d, want %d", whole, ca.Seq, before+1)
	}
	return nil
}

func (cl *client) record(ctx context.Context, s *sess, k int) (*recordAnswer, error) {
	a, err := cl.call(ctx, "GET", fmt.Sprintf("/v1/sessions/%s/envs/%d/record", s.id, k), nil, s.json)
	if err != nil {
		return nil, err
	}
	if a.status != http.StatusOK {
		return nil, cl.lostOr(s, "record", a)
	}
	var r recordAnswer
	if err := decodeRecord(a.body, a.ct, &r); err != nil {
		return nil, fmt.Errorf("record answer: %w", err)
	}
	return &r, nil
}

// checkFinished replays env k's finished game from its record with the
// registry's game (env.Record.Replay: from its seed, or from the game's own
// record fields, the card game's deals) and compares the returns of the
// replay, of the record and of the batch's scores.
func (cl *client) checkFinished(ctx context.Context, s *sess, k int, scores []int) error {
	r, err := cl.record(ctx, s, k)
	if err != nil {
		return err
	}
	if r.Finished == nil {
		cl.rep.fail("session %s env %d: done, but no finished record", s.id, k)
		return nil
	}
	rec, err := envRecord(r.Finished)
	if err != nil {
		cl.rep.fail("env %d: %v", k, err)
		return nil
	}
	st, err := rec.Replay(games.Default())
	if err != nil {
		cl.rep.fail("record of env %d (%s %v): %v", k, rec.Game, rec.Values, err)
		return nil
	}
	got := env.Returns(st)
	same := len(got) == len(scores) && len(rec.Returns) == len(scores)
	for i := 0; same && i < len(scores); i++ {
		same = got[i] == float64(scores[i]) && rec.Returns[i] == float64(scores[i])
	}
	if !same {
		cl.rep.fail("env %d: replayed returns %v, record returns %v, batch scores %v", k, got, rec.Returns, scores)
		return nil
	}
	cl.rep.add(func(r *report) {
		r.replayed++
		r.replayedByGame[rec.Game]++
	})
	return nil
}
