package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/davidgoliath/dgenv/env/games"
)

// TestShortSoak builds dgserver and runs a short soak against it: 8
// clients, a SIGKILL and restart half-way. It checks only what does not
// depend on the machine's speed: no failed check, no 5xx, games replayed,
// one restart.
func TestShortSoak(t *testing.T) {
	d := 20 * time.Second
	if testing.Short() {
		d = 5 * time.Second
	}
	bin := filepath.Join(t.TempDir(), "dgserver")
	if out, err := exec.Command("go", "build", "-o", bin, "../dgserver").CombinedOutput(); err != nil {
		t.Fatalf("go build dgserver: %v\n%s", err, out)
	}
	rep, err := soak(context.Background(), config{server: bin, duration: d, clients: 8, maxEnvs: 16, restartAt: 0.5, seed: 3}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	rep.print(&out)
	t.Log("\n" + out.String())
	if !rep.ok() {
		t.Fatalf("soak failed:\n%s", out.String())
	}
	if rep.restarts != 1 || len(rep.peakRSS) != 2 || rep.created == 0 || rep.steps == 0 {
		t.Fatalf("restarts = %d, server lives = %d, sessions = %d, steps = %d; want 1 restart, 2 lives and some work:\n%s", rep.restarts, len(rep.peakRSS), rep.created, rep.steps, out.String())
	}
	// Every game the server knows is played and its records replayed
	// (the sessions draw one game each).
	if !testing.Short() {
		for _, name := range games.Default().Names() {
			if rep.replayedByGame[name] == 0 {
				t.Errorf("no game of %q was replayed: every game must be soaked\n%s", name, out.String())
			}
		}
	}
	for code := range rep.byCode {
		// busy: a retry can wait behind the request it repeats (an aborted
		// one still running) for longer than busy_wait on a loaded machine.
		if code != "422 illegal_action" && code != "404 not_found" && code != "409 busy" {
			t.Errorf("error answers %q: only the provoked 422, the 404 of lost sessions and busy are expected", code)
		}
	}
}

func TestFlagsAreChecked(t *testing.T) {
	for _, args := range [][]string{{"-clients", "0"}, {"-duration", "0s"}, {"-restart-at", "1"}, {"-nope"}, {"-game", "nope"}, {"-game", "duel,"}} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, &stdout, &stderr); code != 2 {
			t.Errorf("run(%v) = %d, want 2 (stderr %q)", args, code, stderr.String())
		}
	}
}
