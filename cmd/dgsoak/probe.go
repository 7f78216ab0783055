package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Two probes of issue 18 against bin/dgserver, each printing its figures
// (docs/benchmarks.md):
//
//	dgsoak -mode churn      16 clients create and delete the largest sessions the budget allows
//	dgsoak -mode lockout    1,100 idle and 300 slow connections, then an authenticated request

// rssOf reads a /proc/PID/status field (VmRSS, VmHWM) in bytes.
func rssOf(pid int, field string) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// churnConfig is -mode churn's.
type churnConfig struct {
	server   string
	duration time.Duration
	clients  int
	numEnvs  int // envs of each session
	players  int
	deals    int
	budget   int64
	policies string // the server's policies.dir (as make run): a larger baseline
}

// churnReport is what a churn run measured.
type churnReport struct {
	budget, baseline, peak int64
	created, refused       int64 // creates answered 200, and 429
	maxReserved            int64 // the largest dgserver_memory_reserved_bytes seen
	settle                 time.Duration
	settledRSS             int64
	settled                bool
	rssAt                  [3]int64 // RSS 1 s, 5 s and 30 s after the last delete
}

func (r *churnReport) print(w io.Writer) {
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }
	fmt.Fprintf(w, "budget_mib=%.0f baseline_rss_mib=%.1f\n", mib(r.budget), mib(r.baseline))
	fmt.Fprintf(w, "sessions_created=%d refused_429=%d max_reserved_mib=%.0f\n", r.created, r.refused, mib(r.maxReserved))
	fmt.Fprintf(w, "peak_rss_mib=%.0f (%.2fx the budget)\n", mib(r.peak), float64(r.peak)/float64(r.budget))
	fmt.Fprintf(w, "rss_mib after the last delete: 1s %.1f, 5s %.1f, 30s %.1f\n", mib(r.rssAt[0]), mib(r.rssAt[1]), mib(r.rssAt[2]))
	if r.settled {
		fmt.Fprintf(w, "rss_after_last_delete_mib=%.1f (%.2fx the baseline) after %.1fs\n", mib(r.settledRSS), float64(r.settledRSS)/float64(r.baseline), r.settle.Seconds())
	} else {
		fmt.Fprintf(w, "rss_after_last_delete_mib=%.1f: still above 2x the baseline after %.0fs\n", mib(r.settledRSS), r.settle.Seconds())
	}
}

// ok: the bounds (peak <= 1.25x the budget; under 2x the baseline
// within 30 s of the last delete).
func (r *churnReport) ok() bool {
	return r.created > 0 && float64(r.peak) <= 1.25*float64(r.budget) && r.settled && r.settle <= 30*time.Second
}

// churn starts the server with the given budget; each client loops:
// create a session of numEnvs envs with float32 observations (429: try
// again shortly), reset it (every buffer written, the answer read), delete
// it. The peak RSS is sampled every 50 ms and read from VmHWM at the end;
// then RSS is watched until it is under twice the idle server's.
func churn(ctx context.Context, c churnConfig, logw io.Writer) (*churnReport, error) {
	env := []string{"DGSERVER_LIMITS_MEMORY_BUDGET=" + strconv.FormatInt(c.budget, 10)}
	if c.policies != "" {
		env = append(env, "DGSERVER_POLICIES_DIR="+c.policies)
	}
	srv, err := startServerEnv(c.server, "127.0.0.1:0", env)
	if err != nil {
		return nil, err
	}
	defer srv.stop(&report{byCode: map[string]int64{}})
	pid := srv.cmd.Process.Pid
	time.Sleep(time.Second)
	rep := &churnReport{budget: c.budget, baseline: rssOf(pid, "VmRSS")}
	base := "http://" + srv.addr
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c.clients}}
	defer hc.CloseIdleConnections()
	runCtx, cancel := context.WithTimeout(ctx, c.duration)
	defer cancel()
	var lastDelete atomic.Int64
	var created, refused atomic.Int64
	body := fmt.Sprintf(`{"num_envs": %d, "game": {"players": %d, "deals": %d}, "obs_dtype": "<f4", "seed": 1}`, c.numEnvs, c.players, c.deals)
	call := func(method, path, body, accept string) (int, []byte, error) {
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			return 0, nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", accept)
		resp, err := hc.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, b, err
	}
	var wg sync.WaitGroup
	errc := make(chan error, c.clients)
	for range c.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for runCtx.Err() == nil {
				status, b, err := call("POST", "/v1/sessions", body, "application/json")
				if err != nil {
					errc <- err
					return
				}
				if status == http.StatusTooManyRequests {
					refused.Add(1)
					time.Sleep(100 * time.Millisecond)
					continue
				}
				if status != http.StatusOK {
					errc <- fmt.Errorf("create: %d %s", status, b[:min(len(b), 300)])
					return
				}
				created.Add(1)
				id := jsonField(b, "session")
				if status, b, err := call("POST", "/v1/sessions/"+id+"/reset", "{}", "application/msgpack"); err != nil || status != http.StatusOK {
					errc <- fmt.Errorf("reset: %d %v %s", status, err, b[:min(len(b), 300)])
					return
				}
				if status, b, err := call("DELETE", "/v1/sessions/"+id, "", "application/json"); err != nil || status != http.StatusOK {
					errc <- fmt.Errorf("delete: %d %v %s", status, err, b[:min(len(b), 300)])
					return
				}
				lastDelete.Store(time.Now().UnixNano())
			}
		}()
	}
	sample := time.NewTicker(50 * time.Millisecond)
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		defer sample.Stop()
		for {
			rep.peak = max(rep.peak, rssOf(pid, "VmRSS"))
			if r := reservedBytes(base); r > rep.maxReserved {
				rep.maxReserved = r
			}
			select {
			case <-stopSampling:
				return
			case <-sample.C:
			}
		}
	}()
	wg.Wait()
	close(stopSampling)
	<-sampled
	close(errc)
	for err := range errc {
		return nil, err
	}
	rep.created, rep.refused = created.Load(), refused.Load()
	rep.peak = max(rep.peak, rssOf(pid, "VmHWM"))
	last := time.Unix(0, lastDelete.Load())
	fmt.Fprintf(logw, "dgsoak: churn ended; watching RSS after the last delete\n")
	marks := [3]time.Duration{time.Second, 5 * time.Second, 30 * time.Second}
	for {
		rss := rssOf(pid, "VmRSS")
		since := time.Since(last)
		for i, m := range marks {
			if since <= m || rep.rssAt[i] == 0 {
				rep.rssAt[i] = rss
			}
		}
		if !rep.settled {
			rep.settledRSS, rep.settle = rss, since
			rep.settled = rss < 2*rep.baseline
		}
		if since > 31*time.Second && (rep.settled || since > 60*time.Second) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return rep, nil
}

// jsonField is a string field of a small JSON object.
func jsonField(b []byte, key string) string {
	_, rest, ok := bytes.Cut(b, []byte(`"`+key+`":"`))
	if !ok {
		return ""
	}
	v, _, _ := bytes.Cut(rest, []byte(`"`))
	return string(v)
}

// reservedBytes reads dgserver_memory_reserved_bytes from /metrics.
func reservedBytes(base string) int64 {
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(base + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "dgserver_memory_reserved_bytes "); ok {
			x, _ := strconv.ParseFloat(v, 64)
			return int64(x)
		}
	}
	return 0
}

// lockoutConfig is -mode lockout's.
type lockoutConfig struct {
	server        string
	idle, slow    int
	slowEvery     time.Duration
	token         string // "" : a server without a token
	maxConns      int    // 0: the server's default
	wait, timeout time.Duration
}

// lockoutReport is what a lockout run measured.
type lockoutReport struct {
	idleOpened, slowOpened int
	idleAnswered           int // idle connections answered their /v1/healthz
	answered               bool
	status                 int
	err                    error // of the request, when not answered
	latency                time.Duration
}

func (r *lockoutReport) print(w io.Writer) {
	fmt.Fprintf(w, "idle_connections=%d (answered %d) slow_connections=%d\n", r.idleOpened, r.idleAnswered, r.slowOpened)
	if r.answered {
		fmt.Fprintf(w, "authenticated_request status=%d seconds=%.3f\n", r.status, r.latency.Seconds())
	} else {
		fmt.Fprintf(w, "authenticated_request: no answer after %.1fs: %v\n", r.latency.Seconds(), r.err)
	}
}

// lockout starts the server (with the token, if any), opens idle
// connections that each ask /v1/healthz once without the token and then sit
// idle, then slow ones that send a create's headers announcing 60,000 bytes
// and then one byte every slowEvery without the token, waits, and times one
// request with the token on a fresh connection.
func lockout(ctx context.Context, c lockoutConfig, logw io.Writer) (*lockoutReport, error) {
	var env []string
	if c.token != "" {
		env = append(env, "DGSERVER_AUTH_TOKEN="+c.token)
	}
	if c.maxConns > 0 {
		env = append(env, "DGSERVER_HTTP_MAX_CONNS="+strconv.Itoa(c.maxConns))
	}
	srv, err := startServerEnv(c.server, "127.0.0.1:0", append(env, "DGSERVER_LIMITS_SESSION_TTL=10m"))
	if err != nil {
		return nil, err
	}
	defer srv.stop(&report{byCode: map[string]int64{}})
	rep := &lockoutReport{}
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	// The idle connections ask at once and read their answers together
	// (those past http.max_conns of a server that makes them wait get none
	// within the 10 s), so that the phase is short next to idle_timeout.
	d := net.Dialer{Timeout: 2 * time.Second}
	var readers sync.WaitGroup
	var answeredIdle atomic.Int64
	for range c.idle {
		conn, err := d.DialContext(ctx, "tcp", srv.addr)
		if err != nil {
			break
		}
		conns = append(conns, conn)
		if _, err := io.WriteString(conn, "GET /v1/healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
			continue
		}
		rep.idleOpened++
		readers.Add(1)
		go func() {
			defer readers.Done()
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			if resp, err := http.ReadResponse(bufio.NewReader(conn), nil); err == nil {
				resp.Body.Close()
				answeredIdle.Add(1)
			}
			_ = conn.SetReadDeadline(time.Time{})
		}()
	}
	readers.Wait()
	rep.idleAnswered = int(answeredIdle.Load())
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer func() { close(stop); wg.Wait() }()
	for range c.slow {
		conn, err := d.DialContext(ctx, "tcp", srv.addr)
		if err != nil {
			break
		}
		conns = append(conns, conn)
		if _, err := io.WriteString(conn, "POST /v1/sessions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n"); err != nil {
			continue
		}
		rep.slowOpened++
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(c.slowEvery)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					if _, err := conn.Write([]byte{' '}); err != nil {
						return
					}
				}
			}
		}()
	}
	fmt.Fprintf(logw, "dgsoak: %d idle and %d slow connections open; waiting %v\n", rep.idleOpened, rep.slowOpened, c.wait)
	time.Sleep(c.wait)
	hc := &http.Client{Transport: &http.Transport{}, Timeout: c.timeout}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+srv.addr+"/v1/games", nil)
	if err != nil {
		return nil, err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	start := time.Now()
	resp, err := hc.Do(req)
	rep.latency = time.Since(start)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		rep.answered, rep.status = true, resp.StatusCode
	}
	rep.err = err
	return rep, nil
}
