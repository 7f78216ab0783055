package duel

import (
	"testing"

	"github.com/davidgoliath/dgenv/env/envtest"
)

func TestStateBytesBoundsAState(t *testing.T) {
	g, err := SpielType().Default()
	if err != nil {
		t.Fatal(err)
	}
	envtest.StateBytes(t, g)
}
