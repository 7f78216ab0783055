// Package webtest drives dgserver's browser app (server/web, docs/web.md) in
// a real headless Chromium through chromedp: it plays whole deals against
// the bots by clicking, checks what the page shows against the session's
// record, replays finished games, and saves screenshots.
//
// Chromium comes from Debian's package "chromium" (make test installs it
// with apt-get when it is missing); DGENV_CHROMIUM names another binary.
// Screenshots go to DGENV_SCREENSHOTS, or to dgenv-web-screenshots in the
// temporary directory.
package webtest_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/davidgoliath/dgenv/env/games"
	"github.com/davidgoliath/dgenv/env/policy"
	"github.com/davidgoliath/dgenv/server"
)

// Generous: the machine running the tests may be slow and busy.
const (
	testTimeout = 4 * time.Minute
	waitTimeout = 90 * time.Second
)

// chromium finds the browser. Missing, it fails the test where apt-get could
// install it, and skips loudly only where there is no apt-get.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("DGENV_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if _, err := exec.LookPath("apt-get"); err == nil {
		t.Fatal("chromium is not installed: `make test` installs it (apt-get install chromium), or set DGENV_CHROMIUM")
	}
	msg := "!!! SKIPPING the browser tests: no chromium and no apt-get to install it; set DGENV_CHROMIUM to a Chromium binary to run them !!!"
	fmt.Fprintln(os.Stderr, msg)
	t.Skip(msg)
	return ""
}

// browser starts a fresh headless Chromium (its own profile) with a window
// of w x h CSS pixels (and any extra options) and returns a tab's context.
func browser(t *testing.T, w, h int, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(w, h),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		// The network is closed here: without these, Chromium stalls on
		// its background fetches.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("force-color-profile", "srgb"),
		chromedp.Flag("force-device-scale-factor", "1"),
	}
	opts = append(opts, extra...)
	// Every uncaught exception and console error of the page fails the test.
	var mu sync.Mutex
	var jsErrors []string
	listen := func(ev any) {
		var msg string
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			msg = "uncaught: " + e.ExceptionDetails.Text
			if e.ExceptionDetails.Exception != nil {
				msg += " " + e.ExceptionDetails.Exception.Description
			}
		case *runtime.EventConsoleAPICalled:
			if e.Type != runtime.ConsoleAPICalledTypeError {
				return
			}
			msg = "console.error:"
			for _, a := range e.Args {
				if a.Description != "" {
					msg += " " + a.Description
				} else {
					msg += " " + string(a.Value)
				}
			}
		default:
			return
		}
		mu.Lock()
		jsErrors = append(jsErrors, msg)
		mu.Unlock()
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx, chromedp.WithListener(listen))
	ctx, cancelT := context.WithTimeout(ctx, testTimeout)
	t.Cleanup(func() {
		cancelT()
		cancelC()
		cancelA()
		mu.Lock()
		defer mu.Unlock()
		for _, m := range jsErrors {
			t.Errorf("the page reported %s", m)
		}
	})
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// recorder stands between the page and the server: it counts the page's
// requests, the most it ever had in flight, and can answer the first step
// with a 409 busy (the page must retry it without showing it).
type recorder struct {
	h         http.Handler
	inFlight  atomic.Int32
	maxFlight atomic.Int32
	mu        sync.Mutex
	counts    map[string]int // "POST /v1/sessions/{id}/step" -> n
	busyOnce  atomic.Bool    // answer the next step with 409 once
	busySent  atomic.Int32
	lastBatch []byte // the body of the last reset or step answered 200: the batch the page holds
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if !strings.HasPrefix(req.URL.Path, "/v1/") {
		r.h.ServeHTTP(w, req)
		return
	}
	n := r.inFlight.Add(1)
	defer r.inFlight.Add(-1)
	for {
		m := r.maxFlight.Load()
		if n <= m || r.maxFlight.CompareAndSwap(m, n) {
			break
		}
	}
	key := req.Method + " " + routeOf(req.URL.Path)
	r.mu.Lock()
	r.counts[key]++
	r.mu.Unlock()
	if key == "POST /v1/sessions/{id}/step" && r.busyOnce.CompareAndSwap(true, false) {
		r.busySent.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusConflict)
		_, _ = w.Write([]byte(`{"error":{"code":"busy","message":"session: another request is in flight"}}`))
		return
	}
	if key == "POST /v1/sessions/{id}/step" || key == "POST /v1/sessions/{id}/reset" {
		c := &capture{ResponseWriter: w}
		r.h.ServeHTTP(c, req)
		if c.status == http.StatusOK || c.status == 0 {
			r.mu.Lock()
			r.lastBatch = c.body
			r.mu.Unlock()
		}
		return
	}
	r.h.ServeHTTP(w, req)
}

// capture keeps a copy of an answer's status and body.
type capture struct {
	http.ResponseWriter
	status int
	body   []byte
}

func (c *capture) WriteHeader(code int) {
	c.status = code
	c.ResponseWriter.WriteHeader(code)
}

func (c *capture) Write(b []byte) (int, error) {
	c.body = append(c.body, b...)
	return c.ResponseWriter.Write(b)
}

// batch is the last batch the page received (reset or step): its mask's
// legal actions in env 0 and its player.
func (r *recorder) batch(t *testing.T) (legal []int, player int) {
	t.Helper()
	r.mu.Lock()
	body := r.lastBatch
	r.mu.Unlock()
	var b struct {
		Mask   struct{ Data string } `json:"mask"`
		Player struct{ Data string } `json:"player"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("the last batch the page got: %v", err)
	}
	mask, err := base64.StdEncoding.DecodeString(b.Mask.Data)
	if err != nil {
		t.Fatal(err)
	}
	for a, m := range mask {
		if m == 1 {
			legal = append(legal, a)
		}
	}
	p, err := base64.StdEncoding.DecodeString(b.Player.Data)
	if err != nil || len(p) != 1 {
		t.Fatalf("the last batch's player (one int8 for env 0): %q %v", b.Player.Data, err)
	}
	return legal, int(int8(p[0]))
}

func (r *recorder) count(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[key]
}

// routeOf replaces a session id in a path with {id}.
func routeOf(p string) string {
	parts := strings.Split(p, "/")
	if len(parts) > 3 && parts[1] == "v1" && parts[2] == "sessions" {
		parts[3] = "{id}"
	}
	return strings.Join(parts, "/")
}

type testServer struct {
	srv   *server.Server
	rec   *recorder
	url   string
	token string
}

// newTestServer serves the API and the app (with the trained policy in
// policies/ as the bot "policy:beat-heuristic") behind a recorder.
func newTestServer(t *testing.T, token string, mutate ...func(*server.Config)) *testServer {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.AuthToken = token
	cfg.Engine.Workers = 1
	for _, m := range mutate {
		m(&cfg)
	}
	// Only the 4-player policy, whatever else policies/ holds: the tests
	// check which bots the page offers for each player count.
	return serveWithPolicy(t, cfg, "beat-heuristic.onnx")
}

// serveWithPolicy serves cfg's server with the one policy file of
// policies/ named file behind a recorder.
func serveWithPolicy(t *testing.T, cfg server.Config, file string) *testServer {
	t.Helper()
	policies, err := policy.LoadFS(games.Default(), fstest.MapFS{file: {Data: mustRead(t, "../../policies/"+file)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(cfg, nil, server.WithPolicies(policies))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	rec := &recorder{h: srv.Handler(), counts: map[string]int{}}
	hs := httptest.NewServer(rec)
	t.Cleanup(hs.Close)
	return &testServer{srv: srv, rec: rec, url: hs.URL, token: cfg.AuthToken}
}

// metrics is the server's /metrics text, read in-process.
func (s *testServer) metrics() string {
	req := httptest.NewRequest("GET", "http://localhost/metrics", nil)
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	w := httptest.NewRecorder()
	s.srv.Handler().ServeHTTP(w, req)
	return w.Body.String()
}

// api calls the server in-process, around the page's recorder.
func (s *testServer) api(t *testing.T, method, path string, body any, out any) {
	t.Helper()
	var rd *strings.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = strings.NewReader(string(b))
	} else {
		rd = strings.NewReader("")
	}
	req := httptest.NewRequest(method, "http://localhost"+path, rd)
	req.Header.Set("Content-Type", "application/json")
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	w := httptest.NewRecorder()
	s.srv.Handler().ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		t.Fatalf("%s %s: %d %s", method, path, w.Code, w.Body.String())
	}
	if out != nil {
		if err := json.Unmarshal(w.Body.Bytes(), out); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
}

type gameRecord struct {
	Game struct {
		Players int `json:"players"`
		Deals   int `json:"deals"`
	} `json:"game"`
	Deals []struct {
		Dealer int      `json:"dealer"`
		Hands  [][]int  `json:"hands"`
		Plays  [][2]int `json:"plays"`
		Scores []int    `json:"scores"`
		Done   bool     `json:"done"`
	} `json:"deals"`
	Totals []int `json:"totals"`
}

type records struct {
	Finished *gameRecord `json:"finished"`
	Current  *gameRecord `json:"current"`
}

// legal lists the cards seat may play at the end of the record's last deal:
// its cards of the colour led if it has any, else all its cards.
func legal(g *gameRecord, seat int) []int {
	d := g.Deals[len(g.Deals)-1]
	P := g.Game.Players
	var hand []int
	for _, c := range d.Hands[seat] {
		played := false
		for _, p := range d.Plays {
			if p[1] == c {
				played = true
			}
		}
		if !played {
			hand = append(hand, c)
		}
	}
	trick := d.Plays[len(d.Plays)-len(d.Plays)%P:]
	if len(trick) == 0 {
		return hand
	}
	lead := trick[0][1] / 18
	var follow []int
	for _, c := range hand {
		if c/18 == lead {
			follow = append(follow, c)
		}
	}
	if len(follow) > 0 {
		return follow
	}
	return hand
}

// lastPlay is the last card seat played in the record.
func lastPlay(g *gameRecord, seat int) int {
	for k := len(g.Deals) - 1; k >= 0; k-- {
		d := g.Deals[k]
		for i := len(d.Plays) - 1; i >= 0; i-- {
			if d.Plays[i][0] == seat {
				return d.Plays[i][1]
			}
		}
	}
	return -1
}

// js evaluates expr in the page.
func js[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// waitFor polls a JavaScript condition until it holds (page state, never a
// sleep); on a timeout it reports the page's state and banner.
func waitFor(t *testing.T, ctx context.Context, cond string) {
	t.Helper()
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(waitTimeout), chromedp.WithPollingInterval(20*time.Millisecond)))
	if err != nil {
		state, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.dataset.state + " | banner: " + document.getElementById("banner").textContent`))
		t.Fatalf("waiting for %s: %v (page state: %s)", cond, err, state)
	}
}

func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

func click(t *testing.T, ctx context.Context, css string) {
	t.Helper()
	do(t, ctx, chromedp.Click(chromedp.CSS(css), chromedp.NodeVisible))
}

// screenshot saves the whole page as name.png in the screenshot directory.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("DGENV_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "dgenv-web-screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)
}

// setPace moves the bot pace slider as a person would (an input event).
func setPace(t *testing.T, ctx context.Context, ms int) {
	t.Helper()
	do(t, ctx, chromedp.SetValue(chromedp.CSS("#pace"), fmt.Sprint(ms)),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("pace").dispatchEvent(new Event("input"))`))
}

// choose picks value in the select css as a person would (a change event).
func choose(t *testing.T, ctx context.Context, css, value string) {
	t.Helper()
	do(t, ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const e = document.querySelector(%q); e.value = %q; e.dispatchEvent(new Event("change")); })()`, css, value)))
	if got := js[string](t, ctx, fmt.Sprintf(`document.querySelector(%q).value`, css)); got != value && css != "#bot" { // #bot goes back to "choose…"
		t.Fatalf("%s: %q chosen, the page shows %q (not offered?)", css, value, got)
	}
}

// seatSelect is the setup's choice for seat s.
func seatSelect(s int) string { return fmt.Sprintf(`#seats select[data-seat="%d"]`, s) }

func ints(t *testing.T, ctx context.Context, expr string) []int {
	t.Helper()
	return js[[]int](t, ctx, expr)
}

// shown reads numbers the page shows, by CSS selector, in document order.
func shown(t *testing.T, ctx context.Context, css string) []int {
	t.Helper()
	return ints(t, ctx, fmt.Sprintf(`[...document.querySelectorAll(%q)].map(e => Number(e.textContent))`, css))
}

func requireEqual[T comparable](t *testing.T, what string, got, want []T) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s: the page shows %v, want %v", what, got, want)
	}
}

func noBanner(t *testing.T, ctx context.Context) {
	t.Helper()
	if msg := js[string](t, ctx, `document.getElementById("banner").hidden ? "" : document.getElementById("banner").textContent`); msg != "" {
		t.Fatalf("the page shows an error: %s", msg)
	}
}

// TestBrowserPlay plays a game of two deals against a trained policy by clicking, on
// a server that requires a token: the page asks for it. At every turn the
// cards the page lets one click are exactly the legal ones; at the end the
// scores and totals it shows are the record's. The page sends one step per
// click, one request at a time, and retries a 409 without showing it.
func TestBrowserPlay(t *testing.T) {
	ts := newTestServer(t, "s3cret-token")
	ctx := browser(t, 1280, 900)
	do(t, ctx, chromedp.Navigate(ts.url+"/"))
	waitFor(t, ctx, `document.body.dataset.state === "token"`)
	// A wrong token is refused, and the page asks again.
	do(t, ctx, chromedp.SendKeys(chromedp.CSS("#token"), "wrong"))
	click(t, ctx, "#token-form button[type=submit]")
	waitFor(t, ctx, `document.body.dataset.state === "token" && document.getElementById("banner").textContent.includes("refused")`)
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById("token").value = ""`), chromedp.SendKeys(chromedp.CSS("#token"), ts.token))
	click(t, ctx, "#token-form button[type=submit]")
	waitFor(t, ctx, `document.body.dataset.state === "ready"`)

	// Each seat offers "you" and every bot; the served policy only for the
	// player count it was trained for (4).
	seatOptions := func(players string) []string {
		choose(t, ctx, "#players", players)
		return js[[]string](t, ctx, `[...document.querySelectorAll('#seats select[data-seat="1"] option:not([disabled])')].map(o => o.value)`)
	}
	// The server's bots of the card game, a policy's (policy:<name>,
	// search:policy:<name>) for its player count only.
	var games struct {
		Games []struct {
			Name string   `json:"name"`
			Bots []string `json:"bots"`
		} `json:"games"`
	}
	ts.api(t, "GET", "/v1/games", nil, &games)
	var pols struct {
		Policies []struct {
			Name string `json:"name"`
			Game struct {
				Players int `json:"players"`
			} `json:"game"`
		} `json:"policies"`
	}
	ts.api(t, "GET", "/v1/policies", nil, &pols)
	wantChoices := func(players int) []string {
		var rest []string
		for _, g := range games.Games {
			if g.Name != "david_goliath" {
				continue
			}
			for _, b := range g.Bots {
				name, ok := strings.CutPrefix(strings.TrimPrefix(b, "search:"), "policy:")
				if !ok {
					continue
				}
				for _, p := range pols.Policies {
					if p.Name == name && p.Game.Players == players {
						rest = append(rest, b)
					}
				}
			}
		}
		slices.Sort(rest)
		return append([]string{"you", "heuristic", "search", "random"}, rest...)
	}
	requireEqual(t, "seat choices for 5 players", seatOptions("5"), wantChoices(5))
	four := wantChoices(4)
	if !slices.Contains(four, "policy:beat-heuristic") || !slices.Contains(four, "search:policy:beat-heuristic") {
		t.Fatalf("the server offers %v for 4 players, no policy:beat-heuristic and its guided search", four)
	}
	requireEqual(t, "seat choices for 4 players", seatOptions("4"), four)

	// 4 players, two deals; you at seat 0 against a table of three
	// different bots: heuristic, random and the trained policy; no delay.
	choose(t, ctx, "#bot", "random") // every bot seat at once...
	requireEqual(t, "every bot seat set", js[[]string](t, ctx, `[...document.querySelectorAll("#seats select")].map(s => s.value)`), []string{"you", "random", "random", "random"})
	choose(t, ctx, seatSelect(1), "heuristic") // ...then seat by seat
	choose(t, ctx, seatSelect(3), "policy:beat-heuristic")
	do(t, ctx, chromedp.SetValue(chromedp.CSS("#deals"), "2"))
	setPace(t, ctx, 0)
	table := []string{"you", "heuristic", "random", "policy:beat-heuristic"}
	requireEqual(t, "seat setup", js[[]string](t, ctx, `[...document.querySelectorAll("#seats select")].map(s => s.value)`), table)
	screenshot(t, ctx, "play-setup")
	ts.rec.busyOnce.Store(true)
	click(t, ctx, "#new-game")

	var sid string
	var rec records
	prev := -1 // the card the page was last told to play
	shot := false
	for move := 0; ; move++ {
		if move > 30 {
			t.Fatal("more than 30 moves in two deals of 15 tricks")
		}
		inHand := 15 - move%15
		waitFor(t, ctx, fmt.Sprintf(`(document.body.dataset.state === "your-turn" && document.querySelectorAll("#hand button.card").length === %d) || ["game-over", "error"].includes(document.body.dataset.state)`, inHand))
		noBanner(t, ctx)
		sid = js[string](t, ctx, `document.body.dataset.session`)
		if move == 0 {
			// The session seats each bot where the page said, and the seat
			// labels name them.
			var info struct {
				Spec struct {
					LearnerSeats []int     `json:"learner_seats"`
					Opponents    []*string `json:"opponents"`
				} `json:"spec"`
			}
			ts.api(t, "GET", "/v1/sessions/"+sid, nil, &info)
			var opp []string
			for _, o := range info.Spec.Opponents {
				if o == nil {
					opp = append(opp, "you")
				} else {
					opp = append(opp, *o)
				}
			}
			requireEqual(t, "the session's opponents", opp, table)
			requireEqual(t, "the session's learner seats", info.Spec.LearnerSeats, []int{0})
			labels := js[[]string](t, ctx, `[...document.querySelectorAll("#play-seats .seat")].map(e => e.querySelector(".seat-head strong").textContent)`)
			requireEqual(t, "seat labels", labels, []string{"You", "Seat 1heuristic", "Seat 2random", "Seat 3beat-heuristic"})
		}
		ts.api(t, "GET", "/v1/sessions/"+sid+"/envs/0/record", nil, &rec)
		over := js[string](t, ctx, `document.body.dataset.state`) == "game-over"
		if prev >= 0 {
			g := rec.Current
			if over {
				g = rec.Finished
			}
			if last := lastPlay(g, 0); last != prev {
				t.Fatalf("move %d: seat 0 last played %d, the page was told to play %d", move, last, prev)
			}
		}
		if over {
			if move != 30 {
				t.Fatalf("game over after %d moves, want 30", move)
			}
			break
		}
		// The record the page follows is the game in progress.
		want := legal(rec.Current, 0)
		enabled := ints(t, ctx, `[...document.querySelectorAll("#hand button.card:not([disabled])")].map(b => Number(b.dataset.card))`)
		slices.Sort(want)
		slices.Sort(enabled)
		requireEqual(t, fmt.Sprintf("move %d: playable cards", move), enabled, want)
		all := ints(t, ctx, `[...document.querySelectorAll("#hand button.card")].map(b => Number(b.dataset.card))`)
		if len(all) != inHand {
			t.Fatalf("move %d: %d cards in hand, want %d", move, len(all), inHand)
		}
		// The trick on the table is the record's trick in progress.
		d := rec.Current.Deals[len(rec.Current.Deals)-1]
		inTrick := d.Plays[len(d.Plays)-len(d.Plays)%4:]
		var wantTrick []int
		for _, p := range inTrick {
			wantTrick = append(wantTrick, p[1])
		}
		if len(wantTrick) > 0 {
			requireEqual(t, fmt.Sprintf("move %d: trick", move), ints(t, ctx, `[...document.querySelectorAll("#play-trick .card")].map(c => Number(c.dataset.card))`), wantTrick)
		}
		if !shot && move >= 4 && len(wantTrick) >= 2 {
			// The pace as a person would have it, for the picture.
			setPace(t, ctx, 700)
			if got := js[string](t, ctx, `document.getElementById("pace-out").textContent`); got != "0.7 s" {
				t.Fatalf("pace shown as %q after setting 700 ms", got)
			}
			screenshot(t, ctx, "play-in-progress")
			setPace(t, ctx, 0)
			shot = true
		}
		var card int
		if move == 0 {
			// By keyboard: the first playable card has the focus; → moves
			// to the next playable one, Enter plays it.
			order := ints(t, ctx, `[...document.querySelectorAll("#hand button.card:not([disabled])")].map(b => Number(b.dataset.card))`)
			card = order[1%len(order)]
			waitFor(t, ctx, `document.activeElement && document.activeElement.matches("#hand button.card:not([disabled])")`)
			do(t, ctx, chromedp.KeyEvent(kb.ArrowRight), chromedp.KeyEvent(kb.Enter))
		} else {
			card = enabled[len(enabled)-1]
			// A click on a disabled card does nothing.
			if len(all) > len(enabled) {
				for _, c := range all {
					if !slices.Contains(enabled, c) {
						click(t, ctx, fmt.Sprintf(`#hand button.card[data-card="%d"]`, c))
						break
					}
				}
			}
			click(t, ctx, fmt.Sprintf(`#hand button.card[data-card="%d"]`, card))
		}
		waitFor(t, ctx, fmt.Sprintf(`document.body.dataset.state !== "your-turn" || document.querySelectorAll("#hand button.card").length !== %d`, inHand))
		prev = card
	}

	fin := rec.Finished
	if fin == nil || len(fin.Deals) != 2 || !fin.Deals[1].Done {
		t.Fatalf("no finished game of two deals in the record: %+v", rec)
	}
	// Every card seat 0 played was clicked (or chosen by keyboard) on the page.
	if n := ts.rec.count("POST /v1/sessions/{id}/step"); n != 30+1 { // 30 clicks and the one retried 409
		t.Fatalf("the page sent %d steps for 30 clicks (one retried after a 409)", n)
	}
	if ts.rec.busySent.Load() != 1 {
		t.Fatal("the 409 was never sent")
	}
	if m := ts.rec.maxFlight.Load(); m != 1 {
		t.Fatalf("the page had %d requests in flight at once", m)
	}
	requireEqual(t, "deal 1 scores", shown(t, ctx, `#play-scores td[data-deal="0"]`), fin.Deals[0].Scores)
	requireEqual(t, "deal 2 scores", shown(t, ctx, `#play-scores td[data-deal="1"]`), fin.Deals[1].Scores)
	requireEqual(t, "game totals", shown(t, ctx, `#play-scores td[data-total]`), fin.Totals)
	requireEqual(t, "seat panels' game points", shown(t, ctx, `#play-seats [data-game-points]`), fin.Totals)
	requireEqual(t, "seat panels' deal points", shown(t, ctx, `#play-seats [data-deal-points]`), fin.Deals[1].Scores)
	if text := js[string](t, ctx, `document.getElementById("game-over-text").textContent`); !strings.Contains(text, fmt.Sprint(fin.Totals[0])) {
		t.Fatalf("game over text %q lacks your total %d", text, fin.Totals[0])
	}
	noBanner(t, ctx)
	screenshot(t, ctx, "play-game-over")

	// Watch the game just played: every hand face up at the start, the
	// record's totals at the end.
	click(t, ctx, "#watch-this")
	waitFor(t, ctx, `!document.getElementById("watch-area").hidden && document.getElementById("watch").dataset.pos === "0:0"`)
	if n := js[int](t, ctx, `document.querySelectorAll("#watch-seats .mini-hand .card").length`); n != 60 {
		t.Fatalf("the replay shows %d cards face up at the start, want 60", n)
	}
	click(t, ctx, "#w-last")
	waitFor(t, ctx, `document.getElementById("watch").dataset.pos === "1:60"`)
	requireEqual(t, "replay totals", shown(t, ctx, `#watch-scores td[data-total]`), fin.Totals)

	// A new game keeps the seats and the session: one reset, no new session.
	click(t, ctx, "#tab-play")
	sessions := ts.rec.count("POST /v1/sessions")
	click(t, ctx, "#again")
	waitFor(t, ctx, `document.body.dataset.state === "your-turn" && document.querySelectorAll("#hand button.card").length === 15`)
	if n := ts.rec.count("POST /v1/sessions"); n != sessions || ts.rec.count("POST /v1/sessions/{id}/reset") != 2 {
		t.Fatalf("new game: %d sessions created (want %d), %d resets (want 2)", n, sessions, ts.rec.count("POST /v1/sessions/{id}/reset"))
	}
	if js[string](t, ctx, `document.body.dataset.session`) != sid {
		t.Fatal("new game: the page changed session")
	}
	requireEqual(t, "seat setup after a new game", js[[]string](t, ctx, `[...document.querySelectorAll("#seats select")].map(s => s.value)`), table)
	requireEqual(t, "seat labels after a new game", js[[]string](t, ctx, `[...document.querySelectorAll("#play-seats .seat .kind")].map(e => e.textContent)`), []string{"heuristic", "random", "beat-heuristic"})
	noBanner(t, ctx)

	// The setup is kept in the browser: a reload shows the same table.
	do(t, ctx, chromedp.Reload())
	waitFor(t, ctx, `document.body.dataset.state === "ready"`)
	requireEqual(t, "seat setup after a reload", js[[]string](t, ctx, `[...document.querySelectorAll("#seats select")].map(s => s.value)`), table)
}

// finishGame plays a session's env 0 to the end of a game (first legal card
// each time) and returns its records.
func finishGame(t *testing.T, ts *testServer, create map[string]any) (string, records) {
	t.Helper()
	var created struct {
		Session string `json:"session"`
	}
	ts.api(t, "POST", "/v1/sessions", create, &created)
	type tensor struct {
		Data string `json:"data"`
	}
	var batch struct {
		Mask tensor `json:"mask"`
		Done tensor `json:"done"`
	}
	ts.api(t, "POST", "/v1/sessions/"+created.Session+"/reset", map[string]any{}, &batch)
	for i := 0; i < 1000; i++ {
		mask, err := base64.StdEncoding.DecodeString(batch.Mask.Data)
		if err != nil {
			t.Fatal(err)
		}
		a := slices.Index(mask, 1)
		ts.api(t, "POST", "/v1/sessions/"+created.Session+"/step", map[string]any{"actions": []int{a}}, &batch)
		done, _ := base64.StdEncoding.DecodeString(batch.Done.Data)
		if done[0] == 1 {
			var rec records
			ts.api(t, "GET", "/v1/sessions/"+created.Session+"/envs/0/record", nil, &rec)
			return created.Session, rec
		}
	}
	t.Fatal("the game did not end")
	return "", records{}
}

// TestBrowserWatch replays a finished 3-player game of two deals from the
// session's record route and from a saved file: forward and back, card by
// card and trick by trick, every hand face up, the scores after each trick
// and the record's totals at the end; at phone width too.
func TestBrowserWatch(t *testing.T) {
	ts := newTestServer(t, "")
	sid, rec := finishGame(t, ts, map[string]any{
		"game": map[string]any{"players": 3, "deals": 2}, "seed": 11,
		"learner_seats": []int{0}, "opponent": "search",
	})
	fin := rec.Finished
	ctx := browser(t, 1280, 900)
	do(t, ctx, chromedp.Navigate(ts.url+"/#watch"))
	waitFor(t, ctx, `document.body.dataset.state === "ready"`)
	do(t, ctx, chromedp.SendKeys(chromedp.CSS("#watch-id"), sid))
	click(t, ctx, "#watch-session button[type=submit]")
	waitFor(t, ctx, `document.getElementById("watch").dataset.pos === "0:0"`)
	noBanner(t, ctx)
	if n := js[int](t, ctx, `document.querySelectorAll("#watch-seats .mini-hand .card").length`); n != 45 {
		t.Fatalf("%d cards face up at the start, want 45", n)
	}
	// One trick, card by card.
	for i := 1; i <= 3; i++ {
		click(t, ctx, "#w-next")
		waitFor(t, ctx, fmt.Sprintf(`document.getElementById("watch").dataset.pos === "0:%d"`, i))
	}
	if n := js[int](t, ctx, `document.querySelectorAll("#watch-seats .mini-hand .card").length`); n != 42 {
		t.Fatalf("%d cards face up after a trick, want 42", n)
	}
	if n := js[int](t, ctx, `document.querySelectorAll("#watch-log li[data-trick]").length`); n != 1 {
		t.Fatalf("the trick log lists %d tricks, want 1", n)
	}
	if !strings.Contains(js[string](t, ctx, `document.querySelector("#watch-trick .outcome").textContent`), "takes") {
		t.Fatal("no outcome shown for the trick taken")
	}
	// Back one card: the trick is open again.
	click(t, ctx, "#w-prev")
	waitFor(t, ctx, `document.getElementById("watch").dataset.pos === "0:2"`)
	if n := js[int](t, ctx, `document.querySelectorAll("#watch-trick .card").length`); n != 2 {
		t.Fatalf("%d cards in the trick after stepping back, want 2", n)
	}
	// Trick by trick (keyboard ↓) to the end of the first deal: the deal's
	// scores are the record's, and so is the points line after the last trick.
	for i := 0; i < 15; i++ {
		do(t, ctx, chromedp.KeyEvent(kb.ArrowDown))
	}
	waitFor(t, ctx, `document.getElementById("watch").dataset.pos === "0:45"`)
	requireEqual(t, "first deal's points", shown(t, ctx, `#watch-seats [data-deal-points]`), fin.Deals[0].Scores)
	if last := js[string](t, ctx, `document.querySelector("#watch-log li:first-child .log-pts").textContent`); last != "points: "+strings.Trim(strings.ReplaceAll(fmt.Sprint(fin.Deals[0].Scores), " ", " · "), "[]") {
		t.Fatalf("points after the last trick: %q, want %v", last, fin.Deals[0].Scores)
	}
	screenshot(t, ctx, "watch-deal-end")
	click(t, ctx, "#w-last")
	waitFor(t, ctx, `document.getElementById("watch").dataset.last === "1"`)
	requireEqual(t, "deal 2 scores", shown(t, ctx, `#watch-scores td[data-deal="1"]`), fin.Deals[1].Scores)
	requireEqual(t, "totals", shown(t, ctx, `#watch-scores td[data-total]`), fin.Totals)
	click(t, ctx, "#w-prev")
	waitFor(t, ctx, `document.getElementById("watch").dataset.pos === "1:44"`)
	if n := js[int](t, ctx, `document.querySelectorAll("#watch-seats .mini-hand .card").length`); n != 1 {
		t.Fatalf("%d cards face up before the last card, want 1", n)
	}
	// The middle of the second deal, for the screenshot.
	do(t, ctx, chromedp.SetValue(chromedp.CSS("#w-slider"), "73"))
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById("w-slider").dispatchEvent(new Event("input"))`))
	waitFor(t, ctx, `document.getElementById("watch").dataset.pos === "1:27"`)
	screenshot(t, ctx, "watch")

	// The same game from a saved record file.
	dir := t.TempDir()
	raw, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "game.json")
	if err := os.WriteFile(file, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	do(t, ctx, chromedp.Reload()) // a fresh page: nothing left of the session's replay
	waitFor(t, ctx, `document.body.dataset.state === "ready" && document.getElementById("watch-area").hidden`)
	do(t, ctx, chromedp.SetUploadFiles(chromedp.CSS("#watch-file"), []string{file}))
	waitFor(t, ctx, `document.getElementById("watch").dataset.pos === "0:0" && document.getElementById("watch-status").textContent.includes("game.json")`)
	click(t, ctx, "#w-last")
	waitFor(t, ctx, `document.getElementById("watch").dataset.last === "1"`)
	requireEqual(t, "totals from the file", shown(t, ctx, `#watch-scores td[data-total]`), fin.Totals)
	noBanner(t, ctx)

	// A file that is not a record is refused with a message.
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"game": {"players": 9}, "deals": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	do(t, ctx, chromedp.SetUploadFiles(chromedp.CSS("#watch-file"), []string{bad}))
	waitFor(t, ctx, `!document.getElementById("banner").hidden && document.getElementById("banner").textContent.includes("not a dgenv game record")`)

	// Phone width: nothing wider than the screen.
	do(t, ctx, chromedp.EmulateViewport(390, 844))
	do(t, ctx, chromedp.SetUploadFiles(chromedp.CSS("#watch-file"), []string{file}))
	waitFor(t, ctx, `document.getElementById("banner").hidden && document.getElementById("watch").dataset.pos === "0:0"`)
	click(t, ctx, "#w-next-trick")
	click(t, ctx, "#w-next")
	waitFor(t, ctx, `document.getElementById("watch").dataset.pos === "0:4"`)
	if w := js[int](t, ctx, `document.documentElement.scrollWidth - window.innerWidth`); w > 0 {
		t.Fatalf("at 390 px the page is %d px too wide", w)
	}
	screenshot(t, ctx, "watch-phone")
}

// TestBrowserPhonePlay plays at phone width with five players, two of them
// people taking turns, against random bots at a visible pace: the page is
// no wider than the screen and a game goes on.
func TestBrowserPhonePlay(t *testing.T) {
	ts := newTestServer(t, "")
	ctx := browser(t, 390, 844)
	do(t, ctx, chromedp.EmulateViewport(390, 844))
	do(t, ctx, chromedp.Navigate(ts.url+"/"))
	waitFor(t, ctx, `document.body.dataset.state === "ready"`)
	do(t, ctx, chromedp.SetValue(chromedp.CSS("#players"), "5"))
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById("players").dispatchEvent(new Event("change"))`))
	choose(t, ctx, "#bot", "random")
	choose(t, ctx, seatSelect(2), "you") // seat 2 becomes a person too
	do(t, ctx,
		chromedp.SetValue(chromedp.CSS("#deals"), "1"),
		chromedp.SetValue(chromedp.CSS("#pace"), "100"))
	click(t, ctx, "#new-game")
	for move := 0; move < 6; move++ {
		waitFor(t, ctx, `document.body.dataset.state === "your-turn"`)
		noBanner(t, ctx)
		seat := js[int](t, ctx, `Number(document.querySelector("#play-seats .seat.acting").dataset.seat)`)
		if seat != 0 && seat != 2 {
			t.Fatalf("your turn, but seat %d acts", seat)
		}
		// The hand shown is the acting person's, its legal cards enabled.
		var rec records
		ts.api(t, "GET", "/v1/sessions/"+js[string](t, ctx, `document.body.dataset.session`)+"/envs/0/record", nil, &rec)
		want := legal(rec.Current, seat)
		enabled := ints(t, ctx, `[...document.querySelectorAll("#hand button.card:not([disabled])")].map(b => Number(b.dataset.card))`)
		slices.Sort(want)
		slices.Sort(enabled)
		requireEqual(t, fmt.Sprintf("move %d: seat %d's playable cards", move, seat), enabled, want)
		if move == 5 {
			break
		}
		before := js[int](t, ctx, `document.querySelectorAll("#play-log li[data-trick]").length * 100 + document.querySelectorAll("#play-trick .card").length`)
		click(t, ctx, `#hand button.card:not([disabled])`)
		waitFor(t, ctx, fmt.Sprintf(`document.body.dataset.state !== "your-turn" || document.querySelectorAll("#play-log li[data-trick]").length * 100 + document.querySelectorAll("#play-trick .card").length !== %d`, before))
	}
	if w := js[int](t, ctx, `document.documentElement.scrollWidth - window.innerWidth`); w > 0 {
		t.Fatalf("at 390 px the page is %d px too wide", w)
	}
	screenshot(t, ctx, "play-phone")
}

// TestBrowserRulesAgree runs the page's own reading of records (game.js)
// over finished games of every player count that the engine played: the
// seat it expects to act is always the seat that played next, and its count
// of every deal is the engine's score. The page would otherwise show a
// trick taken by the wrong seat.
func TestBrowserRulesAgree(t *testing.T) {
	ts := newTestServer(t, "")
	var games []*gameRecord
	for players := 3; players <= 6; players++ {
		const n = 4
		var created struct {
			Session string `json:"session"`
		}
		ts.api(t, "POST", "/v1/sessions", map[string]any{
			"game": map[string]any{"players": players, "deals": 2}, "num_envs": n, "seed": 100 + players,
		}, &created)
		type tensor struct {
			Data string `json:"data"`
		}
		var batch struct {
			Mask    tensor `json:"mask"`
			Episode tensor `json:"episode"`
		}
		ts.api(t, "POST", "/v1/sessions/"+created.Session+"/reset", map[string]any{}, &batch)
		for step := 0; ; step++ {
			if step > 1000 {
				t.Fatal("the games did not end")
			}
			ep, _ := base64.StdEncoding.DecodeString(batch.Episode.Data)
			finished := 0
			for i := 0; i < n; i++ {
				if ep[8*i] > 0 {
					finished++
				}
			}
			if finished == n {
				break
			}
			mask, _ := base64.StdEncoding.DecodeString(batch.Mask.Data)
			actions := make([]int, n)
			for i := range actions {
				row := mask[90*i : 90*i+90]
				var legal []int
				for a, m := range row {
					if m == 1 {
						legal = append(legal, a)
					}
				}
				actions[i] = legal[(step*7+i*3)%len(legal)] // varied, repeatable
			}
			ts.api(t, "POST", "/v1/sessions/"+created.Session+"/step", map[string]any{"actions": actions}, &batch)
		}
		for k := 0; k < n; k++ {
			var rec records
			ts.api(t, "GET", fmt.Sprintf("/v1/sessions/%s/envs/%d/record", created.Session, k), nil, &rec)
			games = append(games, rec.Finished)
		}
	}
	raw, err := json.Marshal(games)
	if err != nil {
		t.Fatal(err)
	}
	ctx := browser(t, 800, 600)
	do(t, ctx, chromedp.Navigate(ts.url+"/"))
	waitFor(t, ctx, `document.body.dataset.state === "ready"`)
	problems, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`import("/game.js").then((g) => {
		const out = [];
		const games = `+string(raw)+`;
		games.forEach((rec, i) => {
			const P = rec.game.players;
			g.asGameRecord(rec);
			rec.deals.forEach((d, k) => {
				for (let n = 0; n < d.plays.length; n++) {
					const v = g.dealView(P, d, n);
					if (v.toAct !== d.plays[n][0]) out.push("game " + i + " deal " + k + " play " + n + ": the page expects seat " + v.toAct + ", seat " + d.plays[n][0] + " played");
				}
				const m = g.checkDeal(P, d, k);
				if (m) out.push("game " + i + ": " + m);
			});
			const totals = g.totalsBefore(rec, rec.deals.length);
			if (totals.join() !== rec.totals.join()) out.push("game " + i + ": totals " + totals + " vs " + rec.totals);
		});
		return out;
	})`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) > 0 {
		t.Fatalf("the page reads records differently from the engine:\n%s", strings.Join(problems, "\n"))
	}
	t.Logf("%d games of 3-6 players agree", len(games))
}

// TestBrowserSessionExpired: a game left idle past the session TTL says so
// when the next card is clicked, and New game starts over in a new session.
func TestBrowserSessionExpired(t *testing.T) {
	ts := newTestServer(t, "", func(c *server.Config) {
		c.Limits.SessionTTL = 5 * time.Second
		c.Limits.SweepInterval = 50 * time.Millisecond
	})
	ctx := browser(t, 1000, 800)
	do(t, ctx, chromedp.Navigate(ts.url+"/"))
	waitFor(t, ctx, `document.body.dataset.state === "ready"`)
	choose(t, ctx, "#players", "3")
	choose(t, ctx, "#bot", "random")
	do(t, ctx,
		chromedp.SetValue(chromedp.CSS("#deals"), "1"),
		chromedp.SetValue(chromedp.CSS("#pace"), "0"))
	click(t, ctx, "#new-game")
	waitFor(t, ctx, `document.body.dataset.state === "your-turn"`)
	sid := js[string](t, ctx, `document.body.dataset.session`)
	// Polls the server's metrics (a request on the session would keep it
	// alive) for as long as the TTL and the sweeper take.
	deadline := time.Now().Add(waitTimeout)
	for !strings.Contains(ts.metrics(), "\ndgserver_sessions_expired_total 1\n") {
		if time.Now().After(deadline) {
			t.Fatal("the idle session never expired")
		}
		time.Sleep(100 * time.Millisecond)
	}
	click(t, ctx, `#hand button.card:not([disabled])`)
	waitFor(t, ctx, `document.body.dataset.state === "error" && document.getElementById("banner").textContent.includes("expired")`)
	click(t, ctx, "#setup-box summary")
	click(t, ctx, "#new-game")
	waitFor(t, ctx, `document.body.dataset.state === "your-turn" && document.getElementById("banner").hidden`)
	if js[string](t, ctx, `document.body.dataset.session`) == sid {
		t.Fatal("New game after the expiry kept the expired session")
	}
}

func mustRead(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBrowserOldSetupIsRead: a setup saved by the page before per-seat
// bots (people's seats and one bot for the rest) comes back as that table;
// a saved policy of another player count falls back to heuristic.
func TestBrowserOldSetupIsRead(t *testing.T) {
	ts := newTestServer(t, "")
	ctx := browser(t, 1000, 800)
	do(t, ctx, chromedp.Navigate(ts.url+"/"))
	waitFor(t, ctx, `document.body.dataset.state === "ready"`)
	seats := func() []string {
		return js[[]string](t, ctx, `[...document.querySelectorAll("#seats select")].map(s => s.value)`)
	}
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`localStorage.setItem("dgenv-setup", JSON.stringify({players: 5, deals: 1, humans: [0, 2], bot: "random", pace: 0}))`), chromedp.Reload())
	waitFor(t, ctx, `document.body.dataset.state === "ready"`)
	requireEqual(t, "an old setup", seats(), []string{"you", "random", "you", "random", "random"})
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`localStorage.setItem("dgenv-setup", JSON.stringify({players: 5, deals: 1, seats: ["you", "policy:beat-heuristic", "search", "random", "heuristic", "random"]}))`), chromedp.Reload())
	waitFor(t, ctx, `document.body.dataset.state === "ready"`)
	requireEqual(t, "a policy of 4 players at a table of 5", seats(), []string{"you", "heuristic", "search", "random", "heuristic"})
}
