package server

import (
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

// TestReadBodyGrowsAsBytesArrive: a body that declares 30 MB and sends 2
// bytes must not make the server allocate 30 MB.
func TestReadBodyGrowsAsBytesArrive(t *testing.T) {
	r := httptest.NewRequest("POST", "http://localhost/v1/policies/x/act", strings.NewReader("{}"))
	r.ContentLength = 30 << 20
	w := httptest.NewRecorder()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var buf []byte
	b, e := readBody(w, r, 40<<20, &buf)
	runtime.ReadMemStats(&after)
	if e != nil || string(b) != "{}" {
		t.Fatalf("readBody = %q, %v", b, e)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Fatalf("allocated %d bytes for a 2-byte body", got)
	}
}
