//go:build race

package duel

// raceEnabled shortens the long random runs under the race detector (10x slower).
const raceEnabled = true
