package main

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/testgame"
)

// boomBot plays randomly until armed, then panics (a bot's bug).
type boomBot struct{ armed *atomic.Bool }

func (b boomBot) Act(s env.State, rng *env.RNG) int {
	if b.armed.Load() {
		panic("bot exploded")
	}
	return env.RandomBot{}.Act(s, rng)
}

// withRegistry serves reg as the library's games for the test.
func withRegistry(t *testing.T, reg *env.Registry) {
	gameRegistry.Lock()
	old := gameRegistry.r
	gameRegistry.r = reg
	gameRegistry.Unlock()
	t.Cleanup(func() {
		gameRegistry.Lock()
		gameRegistry.r = old
		gameRegistry.Unlock()
	})
}

// TestAPanicWhileSteppingIsInternal: a bot panicking inside a step or a
// reset is the library's internal error (as the server's 500), not the
// caller's bad request, and the batch says it is broken.
func TestAPanicWhileSteppingIsInternal(t *testing.T) {
	var armed atomic.Bool
	reg := env.NewRegistry()
	if err := testgame.Register(reg); err != nil {
		t.Fatal(err)
	}
	if err := reg.RegisterBot(testgame.Name, "test-boom", func(env.Game) (env.Bot, error) { return boomBot{&armed}, nil }); err != nil {
		t.Fatal(err)
	}
	withRegistry(t, reg)
	cfg := []byte(`{"game":{"name":"` + testgame.Name + `"},"num_envs":4,"seed":1,"learner_seats":[0],"opponent":"test-boom"}`)

	t.Run("step", func(t *testing.T) {
		armed.Store(false)
		e, err := newVecEnv(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer e.close()
		arena := make([]byte, e.bytes)
		if err := e.reset(1, true, arena); err != nil {
			t.Fatal(err)
		}
		acts := make([]int32, 4)
		if err := e.randomActions(acts); err != nil {
			t.Fatal(err)
		}
		armed.Store(true)
		err = e.step(acts, arena)
		wantCode(t, "a step whose opponent panics", err, "internal", "")
		if !strings.Contains(err.Message, "bot exploded") || !strings.Contains(err.Message, "broken") {
			t.Errorf("message %q: want the panic and that the batch is broken", err.Message)
		}
		wantCode(t, "the next step", e.step(acts, arena), "internal", "")
	})
	t.Run("reset", func(t *testing.T) {
		armed.Store(false)
		// The seed picks Nim's first seat: in some of 16 envs the bot moves
		// first, so a reset calls it.
		e, err := newVecEnv([]byte(strings.Replace(string(cfg), `"num_envs":4`, `"num_envs":16`, 1)))
		if err != nil {
			t.Fatal(err)
		}
		defer e.close()
		armed.Store(true)
		arena := make([]byte, e.bytes)
		wantCode(t, "a reset whose opponent panics", e.reset(7, true, arena), "internal", "")
	})
}
