//go:build testgame

package main

import "github.com/davidgoliath/dgenv/internal/testgame"

// A dgserver built with -tags testgame also serves the test game "nim"
// (internal/testgame/README.md): the proof that a game plugs in without a
// change to server/ or python/.
func init() { extraGames = append(extraGames, testgame.Register) }
