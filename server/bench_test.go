package server_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/davidgoliath/dgenv/server"
)

// bufWriter is a ResponseWriter that keeps the body in a reused buffer,
// so the benchmark sees the handler's own allocations only.
type bufWriter struct {
	h    http.Header
	body []byte
}

func (w *bufWriter) Header() http.Header         { return w.h }
func (w *bufWriter) Write(b []byte) (int, error) { w.body = append(w.body, b...); return len(b), nil }
func (w *bufWriter) WriteHeader(int)             {}

// BenchmarkStepHandler serves msgpack step requests in-process (no
// sockets): the decode -> step -> write path and its allocations.
func BenchmarkStepHandler(b *testing.B) {
	for _, n := range []int{1, 64, 4096} {
		b.Run(fmt.Sprintf("envs=%d", n), func(b *testing.B) {
			c := newClient(b, func(c *server.Config) { c.Engine.Workers = 0 })
			id := c.create(map[string]any{"num_envs": n, "seed": 1}).Session
			mask := c.reset(id, map[string]any{"seed": 1}).Mask.Data
			path := "/v1/sessions/" + id + "/step"
			w := &bufWriter{h: http.Header{}, body: make([]byte, 0, 8<<20)}
			rd := bytes.NewReader(nil)
			req, _ := http.NewRequest("POST", path, rd)
			req.Header.Set("Content-Type", ctMsgpack)
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				body := stepBody(b, legalActions(mask, n, func(_, k int) int { return 0 }))
				rd.Reset(body)
				req.Body = io.NopCloser(rd)
				req.ContentLength = int64(len(body))
				w.body = w.body[:0]
				b.StartTimer()
				c.h.ServeHTTP(w, req)
				b.StopTimer()
				var bt batch
				decodeAnswer(b, answer{200, http.Header{"Content-Type": {ctMsgpack}}, w.body}, &bt)
				if bt.Mask.Data == nil {
					b.Fatalf("step failed: %q", w.body)
				}
				mask = bt.Mask.Data
				b.StartTimer()
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "env-steps/s")
		})
	}
}

// BenchmarkStepLoopback steps one session over a real loopback connection.
func BenchmarkStepLoopback(b *testing.B) {
	for _, n := range []int{1, 64, 4096} {
		b.Run(fmt.Sprintf("envs=%d", n), func(b *testing.B) {
			srv := newServer(b, func(c *server.Config) { c.Engine.Workers = 0 })
			url, _ := serve(b, srv)
			c := &client{tb: b, base: url}
			id := c.create(map[string]any{"num_envs": n, "seed": 1}).Session
			bt := c.reset(id, map[string]any{"seed": 1})
			hc := freshClient(b)
			buf := make([]byte, 8<<20)
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				body := stepBody(b, legalActions(bt.Mask.Data, n, func(_, k int) int { return 0 }))
				b.StartTimer()
				resp, err := hc.Post(url+"/v1/sessions/"+id+"/step", ctMsgpack, bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				m, _ := io.ReadFull(resp.Body, buf[:resp.ContentLength])
				resp.Body.Close()
				b.StopTimer()
				bt = batch{}
				decodeAnswer(b, answer{resp.StatusCode, resp.Header, buf[:m]}, &bt)
				b.StartTimer()
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "env-steps/s")
		})
	}
}
