package webtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/duel"
	"github.com/davidgoliath/dgenv/server"
)

// newDuelServer serves the app with the committed duel policy (the bot
// "policy:duel") behind a recorder.
func newDuelServer(t *testing.T) *testServer {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.Engine.Workers = 1
	return serveWithPolicy(t, cfg, "duel.onnx")
}

type duelRecords struct {
	Finished *duelRecordWire `json:"finished"`
	Current  *duelRecordWire `json:"current"`
}

type duelRecordWire struct {
	Game    map[string]any `json:"game"`
	Actions []int          `json:"actions"`
	Returns []float64      `json:"returns"`
	Seed    *uint64        `json:"seed"`
}

// replayDuel rebuilds a served duel's record in Go, independently of the
// page: the state after its first n actions (all when n < 0).
func replayDuel(t *testing.T, r *duelRecordWire, n int) *duel.State {
	t.Helper()
	if r == nil || r.Seed == nil {
		t.Fatal("no duel record with a seed")
	}
	g, err := duel.NewGame(duel.Params{MaxRounds: int(r.Game["max_rounds"].(float64))})
	if err != nil {
		t.Fatal(err)
	}
	s := g.NewInitialState(*r.Seed)
	if n < 0 {
		n = len(r.Actions)
	}
	for i, a := range r.Actions[:n] {
		if err := s.ApplyAction(a); err != nil {
			t.Fatalf("replaying the record: action %d: %v", i, err)
		}
	}
	return s
}

// kindsOf lists a hand's cards as kinds, in kind order.
func kindsOf(hand [duel.NumKinds]uint8) []int {
	var out []int
	for k, n := range hand {
		for range n {
			out = append(out, k)
		}
	}
	return out
}

// describedChoice is one legal action as the duel describes it.
type describedChoice struct {
	cards []int
	to    int
	group string
}

func choiceOf(t *testing.T, s *duel.State, a int) describedChoice {
	t.Helper()
	for _, f := range s.Describe() {
		if f.Name != "legal" {
			continue
		}
		for _, c := range f.Value.([][]env.Field) {
			var d describedChoice
			act := -1
			for _, x := range c {
				switch x.Name {
				case "action":
					act = x.Value.(int)
				case "cards":
					d.cards = x.Value.([]int)
				case "to":
					d.to = x.Value.(int)
				case "group":
					d.group = x.Value.(string)
				}
			}
			if act == a {
				return d
			}
		}
	}
	t.Fatalf("action %d is not among the described choices", a)
	return describedChoice{}
}

// checkDuelShown compares what the page shows of position s with s itself:
// the figures, rocks and trees, both wounds, the hands (face up where
// faceUp, else only their size), the round.
func checkDuelShown(t *testing.T, ctx context.Context, prefix string, s *duel.State, faceUp [2]bool) {
	t.Helper()
	for seat := range 2 {
		sq := js[int](t, ctx, fmt.Sprintf(`Number((document.querySelector("#%s-board .fig.f%d") || {closest: () => ({dataset: {sq: -1}})}).closest(".sq").dataset.sq)`, prefix, seat))
		if sq != s.Position(seat) {
			t.Fatalf("%s shown on %s, the record has %s", duel.SeatName(seat), duel.SquareName(sq), duel.SquareName(s.Position(seat)))
		}
		w := js[int](t, ctx, fmt.Sprintf(`Number(document.querySelector('#%s-seats [data-seat="%d"] .wounds').dataset.wounds)`, prefix, seat))
		if w != s.Wounds(seat) {
			t.Fatalf("%s's wounds shown %d, the record has %d", duel.SeatName(seat), w, s.Wounds(seat))
		}
		n := js[int](t, ctx, fmt.Sprintf(`Number(document.querySelector('#%s-seats [data-seat="%d"] [data-hand-size]').dataset.handSize)`, prefix, seat))
		if n != s.HandSize(seat) {
			t.Fatalf("%s's hand size shown %d, the record has %d", duel.SeatName(seat), n, s.HandSize(seat))
		}
		shownHand := ints(t, ctx, fmt.Sprintf(`[...document.querySelectorAll('#%s-seats [data-seat="%d"] .mini-hand .dcard')].map(e => Number(e.dataset.kind))`, prefix, seat))
		if faceUp[seat] {
			requireEqual(t, duel.SeatName(seat)+"'s hand", shownHand, kindsOf(s.Hand(seat)))
		} else if len(shownHand) != 0 {
			t.Fatalf("%s's hand is shown face up: %v", duel.SeatName(seat), shownHand)
		}
	}
	for _, kind := range []string{"rock", "tree"} {
		got := ints(t, ctx, fmt.Sprintf(`[...document.querySelectorAll("#%s-board .obst.%s")].map(e => Number(e.closest(".sq").dataset.sq))`, prefix, kind))
		var want []int
		for sq := range duel.NumSquares {
			if (kind == "rock" && s.IsRock(sq)) || (kind == "tree" && s.IsTree(sq)) {
				want = append(want, sq)
			}
		}
		sort.Ints(got)
		requireEqual(t, kind+"s", got, want)
	}
}

// TestBrowserDuelPlay plays whole duels by clicking, as David against the
// heuristic and as Goliath against random: at every decision the choices
// offered are exactly the legal actions of the record replayed in Go, the
// board, wounds and hands shown are the record's (the bot's hand hidden),
// moves are played by a card and a square, attacks by their cards and a
// square, the rest by the choice; at the end the result shown is the
// record's, and every action is explained in the log.
func TestBrowserDuelPlay(t *testing.T) {
	ts := newDuelServer(t)
	var gamesList struct {
		Games []struct {
			Name string   `json:"name"`
			Bots []string `json:"bots"`
		} `json:"games"`
	}
	ts.api(t, "GET", "/v1/games", nil, &gamesList)
	var duelBots []string
	for _, g := range gamesList.Games {
		if g.Name == duel.Name {
			duelBots = slices.Clone(g.Bots)
		}
	}
	if !slices.Contains(duelBots, "policy:duel") || !slices.Contains(duelBots, "heuristic") {
		t.Fatalf("the server offers %v for the duel, want policy:duel and heuristic among them", duelBots)
	}
	for _, tc := range []struct {
		role int
		bot  string
		pace int
		shot string
	}{
		{duel.David, "heuristic", 0, "duel-play"},
		{duel.Goliath, "random", 200, ""}, // the bot's plays one by one, at a visible pace
	} {
		t.Run(fmt.Sprintf("%s against %s", duel.SeatName(tc.role), tc.bot), func(t *testing.T) {
			ctx := browser(t, 1280, 1000)
			do(t, ctx, chromedp.Navigate(ts.url+"/"))
			waitFor(t, ctx, `document.body.dataset.state === "ready"`)
			choose(t, ctx, "#game-choice", "duel")
			offered := js[[]string](t, ctx, `[...document.querySelectorAll("#duel-bot option")].map(o => o.value)`)
			want := slices.Clone(duelBots)
			slices.Sort(want)
			slices.Sort(offered)
			requireEqual(t, "the duel's bots", offered, want)
			choose(t, ctx, "#duel-role", fmt.Sprint(tc.role))
			choose(t, ctx, "#duel-bot", tc.bot)
			setPace(t, ctx, tc.pace)
			click(t, ctx, "#new-game")
			waitFor(t, ctx, `document.body.dataset.state === "your-turn" || document.body.dataset.state === "game-over"`)
			sid := js[string](t, ctx, `document.body.dataset.session`)
			rng := rand.New(rand.NewPCG(uint64(tc.role), 7))
			groups := map[string]int{}
			shot := tc.shot == ""
			var heur duel.HeuristicBot
			botRNG := env.NewRNG(uint64(tc.role), 3)
			for turn := 0; ; turn++ {
				waitFor(t, ctx, `document.body.dataset.state === "your-turn" || document.body.dataset.state === "game-over"`)
				noBanner(t, ctx)
				var recs duelRecords
				ts.api(t, "GET", "/v1/sessions/"+sid+"/envs/0/record", nil, &recs)
				if js[string](t, ctx, `document.body.dataset.state`) == "game-over" {
					break
				}
				s := replayDuel(t, recs.Current, -1)
				if s.CurrentPlayer() != tc.role {
					t.Fatalf("turn %d: the page asks %s, the record has %s to act", turn, duel.SeatName(tc.role), duel.SeatName(s.CurrentPlayer()))
				}
				checkDuelShown(t, ctx, "duel", s, [2]bool{tc.role == 0, tc.role == 1})
				offeredActions := ints(t, ctx, `[...document.querySelectorAll("#duel-choices button[data-action]")].map(b => Number(b.dataset.action))`)
				requireEqual(t, fmt.Sprintf("turn %d: the choices offered", turn), offeredActions, s.LegalActions())
				mask, player := ts.rec.batch(t) // what the session answered the page
				requireEqual(t, fmt.Sprintf("turn %d: the choices offered against the session's mask", turn), offeredActions, mask)
				if player != tc.role {
					t.Fatalf("turn %d: the session's batch has seat %d to act, the page asks you (%d)", turn, player, tc.role)
				}
				if got := js[int](t, ctx, `document.querySelectorAll("#duel-log li[data-step]").length`); got != len(recs.Current.Actions) {
					t.Fatalf("turn %d: the log explains %d actions, the game has %d", turn, got, len(recs.Current.Actions))
				}
				// Mostly the heuristic's choice (so the game ends), sometimes any legal one.
				a := heur.ActState(s, &botRNG)
				if rng.IntN(4) == 0 {
					legal := s.LegalActions()
					a = legal[rng.IntN(len(legal))]
				}
				c := choiceOf(t, s, a)
				groups[c.group]++
				if (c.group == "move" || c.group == "attack") && c.to >= 0 {
					for _, k := range c.cards {
						click(t, ctx, fmt.Sprintf(`#duel-hand button.dcard[data-kind="%d"]:not([disabled])`, k))
					}
					// The squares offered for these cards are exactly the legal actions' targets.
					var targets []int
					for _, b := range s.LegalActions() {
						d := choiceOf(t, s, b)
						if slices.Equal(d.cards, c.cards) && d.to >= 0 {
							targets = append(targets, d.to)
						}
					}
					slices.Sort(targets)
					shownTargets := ints(t, ctx, `[...document.querySelectorAll("#duel-board button.target")].map(b => Number(b.dataset.sq)).sort((a, b) => a - b)`)
					requireEqual(t, fmt.Sprintf("turn %d: squares for %v", turn, c.cards), shownTargets, slices.Compact(targets))
					if !shot && turn >= 4 {
						screenshot(t, ctx, tc.shot) // a card picked, its squares offered
						shot = true
					}
					click(t, ctx, fmt.Sprintf(`#duel-board button[data-sq="%d"][data-action="%d"]`, c.to, a))
				} else {
					click(t, ctx, fmt.Sprintf(`#duel-choices button[data-action="%d"]`, a))
				}
				if turn > 2000 {
					t.Fatal("the duel did not end")
				}
			}
			var recs duelRecords
			ts.api(t, "GET", "/v1/sessions/"+sid+"/envs/0/record", nil, &recs)
			fin := recs.Finished
			s := replayDuel(t, fin, -1)
			if !s.IsTerminal() {
				t.Fatal("the page says game over, the record's game is not over")
			}
			checkDuelShown(t, ctx, "duel", s, [2]bool{tc.role == 0, tc.role == 1})
			title := js[string](t, ctx, `document.getElementById("duel-over-title").textContent`)
			switch w := s.Winner(); {
			case w == tc.role && title != "You win!":
				t.Fatalf("the record's winner is you, the page says %q", title)
			case w == 1-tc.role && !strings.Contains(title, duel.SeatName(w)+" ("+tc.bot+") wins"):
				t.Fatalf("the record's winner is the bot, the page says %q", title)
			case w < 0 && title != "A draw":
				t.Fatalf("the record's game is a draw, the page says %q", title)
			}
			if got := js[int](t, ctx, `document.querySelectorAll("#duel-log li[data-step]").length`); got != len(fin.Actions) {
				t.Fatalf("the log explains %d actions, the game has %d", got, len(fin.Actions))
			}
			bot := 1 - tc.role
			texts := js[[]string](t, ctx, fmt.Sprintf(`[...document.querySelectorAll("#duel-log li.s%d")].map(li => li.textContent)`, bot))
			for _, x := range texts {
				if !strings.HasPrefix(x, duel.SeatName(bot)+" ("+tc.bot+")") {
					t.Fatalf("a bot play explained as %q, want it to start with the bot's name", x)
				}
			}
			t.Logf("%d actions, %d rounds, winner %d; clicked: %v", len(fin.Actions), s.Round(), s.Winner(), groups)
			if tc.shot != "" {
				screenshot(t, ctx, tc.shot+"-over")
			}
		})
	}
}

// TestBrowserDuelWatch replays a finished duel from its session, step by
// step: both hands face up at every position, the board and wounds the
// record's; by round; to the end, where the result is the record's.
func TestBrowserDuelWatch(t *testing.T) {
	ts := newDuelServer(t)
	var created struct {
		Session string `json:"session"`
	}
	ts.api(t, "POST", "/v1/sessions", map[string]any{"game": map[string]any{"name": "duel"}, "num_envs": 1, "seed": 3, "learner_seats": []int{0}, "opponent": "heuristic"}, &created)
	var batch struct {
		Mask struct {
			Data []byte `json:"data"`
		} `json:"mask"`
		Done struct {
			Data []byte `json:"data"`
		} `json:"done"`
	}
	ts.api(t, "POST", "/v1/sessions/"+created.Session+"/reset", map[string]any{}, &batch)
	// Goliath played by the heuristic on a replay of the record, so the duel ends.
	var heur duel.HeuristicBot
	rng := env.NewRNG(3, 3)
	for i := 0; ; i++ {
		var recs duelRecords
		ts.api(t, "GET", "/v1/sessions/"+created.Session+"/envs/0/record", nil, &recs)
		s := replayDuel(t, recs.Current, -1)
		ts.api(t, "POST", "/v1/sessions/"+created.Session+"/step", map[string]any{"actions": []int{heur.ActState(s, &rng)}}, &batch)
		if batch.Done.Data[0] == 1 {
			break
		}
		if i > 2000 {
			t.Fatal("the duel did not end")
		}
	}
	var recs duelRecords
	ts.api(t, "GET", "/v1/sessions/"+created.Session+"/envs/0/record", nil, &recs)
	fin := recs.Finished
	ctx := browser(t, 1280, 1000)
	do(t, ctx, chromedp.Navigate(ts.url+"/#watch"))
	waitFor(t, ctx, `document.body.dataset.state === "ready"`)
	do(t, ctx, chromedp.SendKeys(chromedp.CSS("#watch-id"), created.Session))
	click(t, ctx, "#watch-session button[type=submit]")
	waitFor(t, ctx, `document.body.dataset.state === "watching" && document.getElementById("watch").dataset.pos === "0"`)
	noBanner(t, ctx)
	both := [2]bool{true, true}
	checkDuelShown(t, ctx, "watch-duel", replayDuel(t, fin, 0), both)
	// Step by step through the first 40 actions, then by keyboard back 5.
	steps := min(40, len(fin.Actions))
	for i := 1; i <= steps; i++ {
		click(t, ctx, "#w-next")
		waitFor(t, ctx, fmt.Sprintf(`document.getElementById("watch").dataset.pos === "%d"`, i))
		checkDuelShown(t, ctx, "watch-duel", replayDuel(t, fin, i), both)
		if got := js[int](t, ctx, `document.querySelectorAll("#watch-duel-log li[data-step]").length`); got != i {
			t.Fatalf("position %d: the log explains %d actions", i, got)
		}
		if i == 20 {
			screenshot(t, ctx, "duel-watch")
		}
	}
	for i := steps - 1; i >= steps-5; i-- {
		do(t, ctx, chromedp.KeyEvent(kb.ArrowLeft))
		waitFor(t, ctx, fmt.Sprintf(`document.getElementById("watch").dataset.pos === "%d"`, i))
		checkDuelShown(t, ctx, "watch-duel", replayDuel(t, fin, i), both)
	}
	// A round forward starts the next round.
	before := replayDuel(t, fin, steps-5).Round()
	click(t, ctx, "#w-next-trick")
	pos := js[int](t, ctx, `Number(document.getElementById("watch").dataset.pos)`)
	if r := replayDuel(t, fin, pos).Round(); r != before+1 && pos != len(fin.Actions) {
		t.Fatalf("a round forward from round %d went to position %d, round %d", before+1, pos, r+1)
	}
	checkDuelShown(t, ctx, "watch-duel", replayDuel(t, fin, pos), both)
	click(t, ctx, "#w-last")
	waitFor(t, ctx, `document.getElementById("watch").dataset.last === "1"`)
	end := replayDuel(t, fin, -1)
	checkDuelShown(t, ctx, "watch-duel", end, both)
	status := js[string](t, ctx, `document.getElementById("watch-status").textContent`)
	want := "A draw"
	if w := end.Winner(); w >= 0 {
		want = duel.SeatName(w) + " (heuristic) wins: " + duel.SeatName(1-w) + " has 3 wounds"
		if w == duel.Goliath {
			want = "Goliath (client) wins: David has 3 wounds"
		}
	}
	if !strings.Contains(status, want) {
		t.Fatalf("at the end the page says %q, want %q", status, want)
	}
	if got := js[int](t, ctx, `document.querySelectorAll("#watch-duel-log li[data-step]").length`); got != len(fin.Actions) {
		t.Fatalf("at the end the log explains %d actions, the game has %d", got, len(fin.Actions))
	}
	noBanner(t, ctx)
	// At phone width (390 px) nothing is wider than the screen.
	do(t, ctx, chromedp.EmulateViewport(390, 844))
	waitFor(t, ctx, `window.innerWidth === 390`)
	if w := js[int](t, ctx, `document.documentElement.scrollWidth - window.innerWidth`); w > 0 {
		screenshot(t, ctx, "duel-watch-phone")
		t.Fatalf("at 390 px the duel replay is %d px too wide", w)
	}
	screenshot(t, ctx, "duel-watch-phone")
	do(t, ctx, chromedp.EmulateViewport(1280, 1000))
	// The record route's answer saved as a file (its bytes as curl saves
	// them) replays the same duel: the server describes it (POST
	// /v1/positions), both hands face up, the positions the session's.
	dir := t.TempDir()
	saved := filepath.Join(dir, "duel.json")
	raw := ts.raw(t, "GET", "/v1/sessions/"+created.Session+"/envs/0/record")
	if err := os.WriteFile(saved, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	do(t, ctx, chromedp.SetUploadFiles(chromedp.CSS("#watch-file"), []string{saved}))
	waitFor(t, ctx, `document.body.dataset.state === "watching" && document.getElementById("watch").dataset.pos === "0" && document.getElementById("watch-status").textContent.includes("duel.json, finished duel")`)
	noBanner(t, ctx)
	checkDuelShown(t, ctx, "watch-duel", replayDuel(t, fin, 0), both)
	for i := 1; i <= 12; i++ {
		click(t, ctx, "#w-next")
		waitFor(t, ctx, fmt.Sprintf(`document.getElementById("watch").dataset.pos === "%d"`, i))
		checkDuelShown(t, ctx, "watch-duel", replayDuel(t, fin, i), both)
	}
	click(t, ctx, "#w-last")
	waitFor(t, ctx, `document.getElementById("watch").dataset.last === "1"`)
	checkDuelShown(t, ctx, "watch-duel", end, both)
	want = "A draw" // the seats are named without who played them
	if w := end.Winner(); w >= 0 {
		want = duel.SeatName(w) + " wins: " + duel.SeatName(1-w) + " has 3 wounds"
	}
	if got := js[string](t, ctx, `document.getElementById("watch-status").textContent`); !strings.Contains(got, want) {
		t.Fatalf("at the end of the saved duel the page says %q, want %q", got, want)
	}
	if got := js[int](t, ctx, `document.querySelectorAll("#watch-duel-log li[data-step]").length`); got != len(fin.Actions) {
		t.Fatalf("at the end of the saved duel the log explains %d actions, the game has %d", got, len(fin.Actions))
	}
	// A corrupted file (a return changed) is refused with the server's
	// reason, and the replay stays as it was.
	var edited map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // the seed keeps its 64 bits
	if err := dec.Decode(&edited); err != nil {
		t.Fatal(err)
	}
	edited["finished"].(map[string]any)["returns"] = []any{5, -5}
	bad, err := json.Marshal(edited)
	if err != nil {
		t.Fatal(err)
	}
	corrupted := filepath.Join(dir, "corrupted.json")
	if err := os.WriteFile(corrupted, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	do(t, ctx, chromedp.SetUploadFiles(chromedp.CSS("#watch-file"), []string{corrupted}))
	waitFor(t, ctx, `document.getElementById("banner").textContent.includes("corrupted.json: the duel record does not replay")`)
	if banner := js[string](t, ctx, `document.getElementById("banner").textContent`); !strings.Contains(banner, "returns") {
		t.Fatalf("the banner %q does not say what is wrong (the returns)", banner)
	}
	checkDuelShown(t, ctx, "watch-duel", end, both)
}

// raw is a route's answer in JSON, its bytes as the server sent them.
func (s *testServer) raw(t *testing.T, method, path string) []byte {
	t.Helper()
	req := httptest.NewRequest(method, "http://localhost"+path, nil)
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	w := httptest.NewRecorder()
	s.srv.Handler().ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		t.Fatalf("%s %s: %d %s", method, path, w.Code, w.Body.String())
	}
	return w.Body.Bytes()
}
