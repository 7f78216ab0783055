//go:build !testgame

package games_test

// wantNames are the games of a plain build, the default first.
var wantNames = []string{"david_goliath", "duel"}
