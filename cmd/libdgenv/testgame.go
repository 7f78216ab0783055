//go:build testgame

package main

import (
	"github.com/davidgoliath/dgenv/env/testgame"
)

// A libdgenv built with -tags testgame also serves the test game "nim"
// (env/testgame/README.md), as dgserver's test build does: the proof that
// a game gets the in-process library and the pyspiel bridge without a
// change to cmd/ or python/ (python/tests/test_openspiel_bridge.py).
func init() {
	if err := testgame.Register(gameRegistry.r); err != nil {
		panic(err)
	}
}
