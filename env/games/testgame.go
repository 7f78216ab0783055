//go:build testgame

package games

import "github.com/davidgoliath/dgenv/env/testgame"

// A build with -tags testgame also registers the test game Nim
// (env/testgame): the binaries and the library built so (make build's
// bin/dgserver-testgame, bin/dgeval-testgame, bin/libdgenv-testgame.so)
// serve it with no line of their own naming it.
func init() { registrars = append(registrars, testgame.Register) }
