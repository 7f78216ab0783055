//go:build testgame

package games_test

// wantNames are the games of the test build: the shipped ones, then the
// test games (testgame.go).
var wantNames = []string{"david_goliath", "duel", "nim"}
