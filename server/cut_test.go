package server_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/davidgoliath/dgenv/server"
)

// cutPoints are where a request's connection is cut: before the body ends
// (nothing is done), after the body but before any answer is read, and in
// the middle of the answer (the work is done, the answer lost).
var cutPoints = []string{"mid-body", "after-body", "mid-answer"}

// sendCut sends one HTTP request on a fresh connection to addr and cuts the
// connection at the given point.
func sendCut(t *testing.T, addr, method, path string, body []byte, at string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	head := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/msgpack\r\nContent-Length: %d\r\n\r\n", method, path, len(body))
	_, err = io.WriteString(conn, head)
	require.NoError(t, err)
	switch at {
	case "mid-body":
		_, err = conn.Write(body[:len(body)/2])
		require.NoError(t, err)
	case "after-body":
		_, err = conn.Write(body)
		require.NoError(t, err)
	case "mid-answer":
		_, err = conn.Write(body)
		require.NoError(t, err)
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second)))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		half := make([]byte, resp.ContentLength/2)
		_, err = io.ReadFull(resp.Body, half)
		require.NoError(t, err)
	default:
		t.Fatalf("cut point %q", at)
	}
}

// TestRetryWithSeqAfterACutConnection cuts a reset's and then each step's
// connection at every point, then retries it with the same seq on a new
// connection: the retry must answer exactly the bytes an uncut twin session
// answers (the same batch, stepped once, with the same seq).
func TestRetryWithSeqAfterACutConnection(t *testing.T) {
	srv := newServer(t)
	url, _ := serve(t, srv)
	addr := strings.TrimPrefix(url, "http://")
	c := &client{tb: t, base: url}
	settings := map[string]any{"num_envs": 256, "seed": 11, "game": map[string]any{"players": 4, "deals": 1},
		"learner_seats": []int{0}, "opponent": "heuristic"}
	cut := c.create(settings).Session
	twin := c.create(settings).Session
	var seq int64
	var b batch
	round := 0
	for _, at := range cutPoints {
		for _, op := range []string{"reset with a seed", "step", "step", "reset without a seed", "step"} {
			round++
			path, body := "/step", []byte(nil)
			switch op {
			case "reset with a seed":
				path, body = "/reset", mp(t, map[string]any{"seed": 5 + round, "seq": seq})
			case "reset without a seed":
				path, body = "/reset", mp(t, map[string]any{"seq": seq})
			default:
				acts := legalActions(b.Mask.Data, 256, func(i, k int) int { return (i + round) % k })
				body = stepBodySeq(t, acts, seq)
			}
			t.Run(fmt.Sprintf("%d %s cut %s", round, op, at), func(t *testing.T) {
				sendCut(t, addr, "POST", "/v1/sessions/"+cut+path, body, at)
				got := c.do("POST", "/v1/sessions/"+cut+path, ctMsgpack, body)
				want := c.do("POST", "/v1/sessions/"+twin+path, ctMsgpack, body)
				require.Equal(t, http.StatusOK, want.Status, "%s", want.Body)
				require.Equal(t, http.StatusOK, got.Status, "%s", got.Body)
				require.Equal(t, want.Body, got.Body, "the retry's batch differs from the uncut twin's")
				var s struct {
					Seq int64 `json:"seq"`
				}
				decodeAnswer(t, got, &s)
				require.Equal(t, seq+1, s.Seq)
				decodeAnswer(t, got, &b)
				// A second retry answers the same batch again.
				require.Equal(t, want.Body, c.do("POST", "/v1/sessions/"+cut+path, ctMsgpack, body).Body)
				seq = s.Seq
			})
		}
	}
	var info struct {
		Seq int64 `json:"seq"`
	}
	decodeAnswer(t, c.do("GET", "/v1/sessions/"+cut, "", nil), &info)
	require.Equal(t, seq, info.Seq, "GET reports the seq")
	// Each of the 9 steps was retried once after it was answered (cut or
	// not), and the 3 cut mid-answer were done before their retry.
	m := regexp.MustCompile(`dgserver_retries_answered_total\{route="step"\} (\d+)`).FindSubmatch(c.do("GET", "/metrics", "", nil).Body)
	require.NotNil(t, m)
	n, _ := strconv.Atoi(string(m[1]))
	require.GreaterOrEqual(t, n, 12)
}

// TestCreateWithRequestIDAfterACutConnection cuts a create's connection at
// every point, then retries it: exactly one session exists for the
// request_id, and the retry answers it.
func TestCreateWithRequestIDAfterACutConnection(t *testing.T) {
	srv := newServer(t)
	url, _ := serve(t, srv)
	addr := strings.TrimPrefix(url, "http://")
	c := &client{tb: t, base: url}
	for _, at := range cutPoints {
		t.Run(at, func(t *testing.T) {
			before, _ := server.Counts(srv)
			req := map[string]any{"num_envs": 4096, "seed": 3, "request_id": "run-7." + at}
			sendCut(t, addr, "POST", "/v1/sessions", mp(t, req), at)
			// The cut create may still be building its 4096 envs when the
			// retry comes (a slow, loaded machine): 409 busy then says "retry",
			// and a client does, as the Python client does.
			first := createRetryingBusy(t, c, req)
			again := c.create(req)
			require.Equal(t, first, again, "a retry answers the same session")
			after, _ := server.Counts(srv)
			require.Equal(t, before+1, after, "one session for the request_id, no orphan")
		})
	}
}

// createRetryingBusy posts a create, retrying while the answer is 409 busy
// (its request_id's session is still being created), for up to a minute.
func createRetryingBusy(t *testing.T, c *client, req map[string]any) created {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; {
		a := c.do("POST", "/v1/sessions", ctMsgpack, mp(t, req))
		if a.Status == http.StatusConflict && bytes.Contains(a.Body, []byte("busy")) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		require.Equal(t, http.StatusOK, a.Status, "create: %q", a.Body)
		var out created
		decodeAnswer(t, a, &out)
		return out
	}
}

func stepBodySeq(tb testing.TB, actions []int32, seq int64) []byte {
	data := make([]byte, 4*len(actions))
	for i, a := range actions {
		data[4*i] = byte(a)
		data[4*i+1] = byte(a >> 8)
		data[4*i+2] = byte(a >> 16)
		data[4*i+3] = byte(a >> 24)
	}
	return mp(tb, map[string]any{"seq": seq, "actions": map[string]any{"dtype": "<i4", "shape": []int{len(actions)}, "data": data}})
}
