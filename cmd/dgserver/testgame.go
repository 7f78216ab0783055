//go:build testgame

package main

import (
	"github.com/davidgoliath/dgenv/env/testgame"
)

// A dgserver built with -tags testgame also serves the test game "nim"
// (env/testgame/README.md): the proof that a game plugs in without a
// change to server/ or python/.
func init() { extraGames = append(extraGames, testgame.Register) }
