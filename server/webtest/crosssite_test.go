package webtest_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// hostilePage is what a site the user happens to open could serve: it
// sends the server every kind of request a page may send another origin
// without asking first (no-cors: the answer is hidden, the request still
// runs), then one that needs a CORS preflight. window.done resolves to
// what each attempt gave.
const hostilePage = `<!doctype html><title>cat pictures</title><script>
window.done = (async () => {
  const target = %q + "/v1/sessions";
  const json = JSON.stringify({num_envs: 1});
  const tries = [
    ["a Blob of no type", {mode: "no-cors", method: "POST", body: new Blob([json])}],
    ["a text/plain Blob", {mode: "no-cors", method: "POST", body: new Blob([json], {type: "text/plain"})}],
    ["a string (text/plain)", {mode: "no-cors", method: "POST", body: json}],
    ["no body", {mode: "no-cors", method: "POST"}],
    ["a form", {mode: "no-cors", method: "POST", body: new URLSearchParams({num_envs: "1"})}],
    ["JSON, preflighted", {mode: "cors", method: "POST", headers: {"Content-Type": "application/json"}, body: json}],
  ];
  const out = [];
  for (const [name, init] of tries) {
    for (let i = 0; i < 3; i++) {
      try {
        const r = await fetch(target, init);
        out.push(name + ": " + r.type + " " + r.status);
      } catch (e) {
        out.push(name + ": refused (" + e.message + ")");
      }
    }
  }
  return out;
})();
</script>`

// TestBrowserCrossSiteRequestsCreateNothing opens a hostile page served
// from another loopback port: its requests reach the server (counted) and
// none creates a session.
func TestBrowserCrossSiteRequestsCreateNothing(t *testing.T) {
	ts := newTestServer(t, "")
	hostile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, hostilePage, ts.url)
	}))
	t.Cleanup(hostile.Close)
	if hostile.URL == ts.url {
		t.Fatal("the hostile page must be served from another origin")
	}
	ctx := browser(t, 800, 600)
	do(t, ctx, chromedp.Navigate(hostile.URL+"/"))
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.done`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the hostile page's attempts:\n%s", strings.Join(got, "\n"))
	// The five no-cors kinds, three times each, reached the server.
	if n := ts.rec.count("POST /v1/sessions"); n != 15 {
		t.Fatalf("the server saw %d cross-site POSTs, want 15 (the test's requests must arrive)", n)
	}
	if m := ts.metrics(); !strings.Contains(m, "\ndgserver_sessions_active 0\n") {
		t.Fatalf("a cross-site page created sessions: %s", metricLine(m, "dgserver_sessions_active"))
	}
}

// TestBrowserRebindingPageReadsNothing opens the server under a DNS name
// that resolves to loopback (what a rebinding site becomes): the page and
// the API refuse that Host, so its same-origin requests get nothing.
func TestBrowserRebindingPageReadsNothing(t *testing.T) {
	ts := newTestServer(t, "")
	u, err := url.Parse(ts.url)
	if err != nil {
		t.Fatal(err)
	}
	ctx := browser(t, 800, 600, chromedp.Flag("host-resolver-rules", "MAP rebind.test 127.0.0.1"))
	do(t, ctx, chromedp.Navigate("http://rebind.test:"+u.Port()+"/"))
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]int](`Promise.all([
	  fetch("/").then(r => r.status),
	  fetch("/v1/games").then(r => r.status),
	  fetch("/v1/sessions", {method: "POST", headers: {"Content-Type": "application/json"}, body: "{}"}).then(r => r.status),
	])`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	for i, st := range got {
		if st != http.StatusForbidden {
			t.Errorf("request %d from the rebound page: status %d, want 403", i, st)
		}
	}
	if n := ts.rec.count("POST /v1/sessions"); n != 1 {
		t.Fatalf("the server saw %d POSTs from the rebound page, want 1", n)
	}
	if m := ts.metrics(); !strings.Contains(m, "\ndgserver_sessions_active 0\n") {
		t.Fatalf("a rebound page created sessions: %s", metricLine(m, "dgserver_sessions_active"))
	}
	// The same server under its own address serves the app.
	do(t, ctx, chromedp.Navigate("http://localhost:"+u.Port()+"/"))
	waitFor(t, ctx, `document.body.dataset.state === "ready"`)
}

func metricLine(m, name string) string {
	for _, l := range strings.Split(m, "\n") {
		if strings.HasPrefix(l, name+" ") {
			return l
		}
	}
	return name + " missing"
}
