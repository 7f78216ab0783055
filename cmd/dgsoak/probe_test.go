package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func buildServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "dgserver")
	if out, err := exec.Command("go", "build", "-o", bin, "../dgserver").CombinedOutput(); err != nil {
		t.Fatalf("go build dgserver: %v\n%s", err, out)
	}
	return bin
}

// TestLockoutProbe runs -mode lockout scaled down (40 idle and 10 slow
// connections against http.max_conns = 20): the request with the token is
// answered. (It waits a second: the slow ones, refused 401, hold their
// connections for net/http's half a second of lingering before the close,
// and 10 of them fill this address's share of 10.)
func TestLockoutProbe(t *testing.T) {
	rep, err := lockout(context.Background(), lockoutConfig{
		server: buildServer(t), idle: 40, slow: 10, slowEvery: time.Second, token: "s3cret",
		maxConns: 20, wait: time.Second, timeout: 20 * time.Second,
	}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	rep.print(&out)
	if rep.idleOpened != 40 || rep.slowOpened != 10 || !rep.answered || rep.status != 200 {
		t.Fatalf("lockout probe:\n%s", out.String())
	}
}

// TestChurnProbe runs -mode churn briefly with small sessions: it creates
// and deletes sessions and reports the server's memory (the bounds depend
// on the sizes and are checked by the full run, docs/benchmarks.md).
func TestChurnProbe(t *testing.T) {
	rep, err := churn(context.Background(), churnConfig{
		server: buildServer(t), duration: 2 * time.Second, clients: 2, numEnvs: 256, players: 4, deals: 4, budget: 64 << 20,
	}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	rep.print(&out)
	t.Log("\n" + out.String())
	if rep.created == 0 || rep.baseline == 0 || rep.peak < rep.baseline || rep.maxReserved == 0 {
		t.Fatalf("churn probe measured nothing:\n%s", out.String())
	}
}

func TestProbeFlagsAreChecked(t *testing.T) {
	for _, args := range [][]string{{"-mode", "nope"}, {"-mode", "churn", "-envs", "0"}} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, &stdout, &stderr); code != 2 {
			t.Errorf("run(%v) = %d, want 2 (stderr %q)", args, code, stderr.String())
		}
	}
}
