package testgame_test

import (
	"testing"

	"github.com/davidgoliath/dgenv/env/envtest"
	"github.com/davidgoliath/dgenv/env/testgame"
)

func TestStateBytesBoundsAState(t *testing.T) {
	for _, params := range []map[string]any{nil, {"heap": 40, "take": 1}} {
		g, err := testgame.Type().New(params)
		if err != nil {
			t.Fatal(err)
		}
		envtest.StateBytes(t, g)
	}
}
