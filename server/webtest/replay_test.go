package webtest_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserReplayFileIsChecked loads hostile replay files into the watch
// view: each is refused with a message naming what is wrong, before
// anything is drawn, and the tab stays responsive (a good file opens
// after each). A 1 KB file claiming 30,000,000 deals used to freeze the
// tab drawing a score column for each; string scores were concatenated
// into the totals.
func TestBrowserReplayFileIsChecked(t *testing.T) {
	ts := newTestServer(t, "")
	sid, _ := finishGame(t, ts, map[string]any{
		"game": map[string]any{"players": 3, "deals": 1}, "seed": 4,
		"learner_seats": []int{0}, "opponent": "random",
	})
	var rec map[string]any // the record route's answer, every field kept
	ts.api(t, "GET", "/v1/sessions/"+sid+"/envs/0/record", nil, &rec)
	dir := t.TempDir()
	write := func(name string, v any) string {
		t.Helper()
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", rec)
	// edited is the finished game of the record, changed by f.
	edited := func(f func(g map[string]any)) map[string]any {
		var g map[string]any
		raw, _ := json.Marshal(rec["finished"])
		if err := json.Unmarshal(raw, &g); err != nil {
			t.Fatal(err)
		}
		f(g)
		return g
	}
	deal0 := func(g map[string]any) map[string]any { return g["deals"].([]any)[0].(map[string]any) }
	huge := filepath.Join(dir, "huge.json")
	if err := os.WriteFile(huge, []byte(strings.Repeat(" ", 5<<20)+"{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, file, says string
	}{
		{"30,000,000 deals", write("deals.json", edited(func(g map[string]any) { g["game"].(map[string]any)["deals"] = 30000000 })), `"game.deals" must be 1..90`},
		{"string scores", write("scores.json", edited(func(g map[string]any) { deal0(g)["scores"] = []any{"10", "2", "3"} })), `"scores" must list 3 integers`},
		{"string totals", write("totals.json", edited(func(g map[string]any) { g["totals"] = []any{"10", 2, 3} })), `"totals" must list 3 integers`},
		{"fractional scores", write("frac.json", edited(func(g map[string]any) { deal0(g)["scores"] = []any{1.5, 2, 3} })), `"scores" must list 3 integers`},
		{"more deals than the game has", write("more.json", edited(func(g map[string]any) {
			g["deals"] = append(g["deals"].([]any), g["deals"].([]any)[0])
		})), `"deals" lists 2 deals, the game has 1`},
		{"a deal that is not an object", write("null.json", edited(func(g map[string]any) { g["deals"] = []any{nil} })), "deal 1 is not an object"},
		{"a file over 4 MiB", huge, "at most"},
	}
	ctx := browser(t, 1280, 900)
	do(t, ctx, chromedp.Navigate(ts.url+"/#watch"))
	waitFor(t, ctx, `document.body.dataset.state === "ready"`)
	for _, tc := range cases {
		t.Run("refuses "+tc.name, func(t *testing.T) {
			do(t, ctx, chromedp.SetUploadFiles(chromedp.CSS("#watch-file"), []string{tc.file}))
			waitFor(t, ctx, `!document.getElementById("banner").hidden`)
			banner := js[string](t, ctx, `document.getElementById("banner").textContent`)
			if !strings.Contains(banner, tc.says) {
				t.Fatalf("banner %q does not say %q", banner, tc.says)
			}
			if n := js[int](t, ctx, `document.querySelectorAll("#watch-scores th").length`); n > 10 {
				t.Fatalf("the score table has %d header cells after a refused file", n)
			}
			// The tab still works: the good file opens.
			do(t, ctx, chromedp.SetUploadFiles(chromedp.CSS("#watch-file"), []string{good}))
			waitFor(t, ctx, `document.getElementById("banner").hidden && document.getElementById("watch").dataset.pos === "0:0" && document.getElementById("watch-status").textContent.includes("good.json")`)
		})
	}
}
