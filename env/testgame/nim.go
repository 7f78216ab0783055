// Package testgame is a second, tiny game that exists only to prove the
// game interface: nothing outside tests and the "testgame" build of
// dgserver registers it, and the server and the Python client serve and
// play it knowing nothing of it (README.md says how to start that server).
//
// The game is Nim for 2 or 3 players: a heap of `heap` stones; the seat to
// act takes 1..`take` of them (action k takes k+1); whoever takes the last
// stone wins (return 1, the others 0). The seed picks the first seat, so a
// seed and the actions replay a game.
package testgame

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/obs"
)

// Name is the game's name in a registry.
const Name = "nim"

// Register adds Nim (and its bots "random" and "greedy") to r.
func Register(r *env.Registry) error {
	if err := r.Register(Type()); err != nil {
		return err
	}
	return r.RegisterBot(Name, "greedy", func(g env.Game) (env.Bot, error) { return Greedy{}, nil })
}

// Type is Nim as an env.Type.
func Type() *env.Type {
	t := &env.Type{
		Name:    Name,
		Doc:     "Nim, a test game: take 1..take stones, the last stone wins",
		Players: []int{2, 3},
		Params: []env.Param{
			{Name: "players", Default: 2, Min: 2, Max: 3, Doc: "seats"},
			{Name: "heap", Default: 10, Min: 1, Max: 40, Doc: "stones at the start"},
			{Name: "take", Default: 3, Min: 1, Max: 5, Doc: "most stones one move takes (the number of actions)"},
		},
	}
	t.Make = func(v env.Values) (env.Game, error) {
		return &Game{t: t, players: v["players"], heap: v["heap"], take: v["take"]}, nil
	}
	return t
}

// Game is one configuration of Nim.
type Game struct {
	t                   *env.Type
	players, heap, take int
}

func (g *Game) Type() *env.Type { return g.t }
func (g *Game) Values() env.Values {
	return env.Values{"players": g.players, "heap": g.heap, "take": g.take}
}
func (g *Game) NumDistinctActions() int { return g.take }
func (g *Game) NumPlayers() int         { return g.players }
func (g *Game) MaxGameLength() int      { return g.heap }
func (g *Game) MinUtility() float64     { return 0 }
func (g *Game) MaxUtility() float64     { return 1 }

// Observation: the heap left, the observer's seat relative to the seat to
// act (one-hot), and a flag for the game being over.
func (g *Game) Observation() env.Layout {
	return env.Layout{Size: 2 + g.players, Sections: []obs.Section{
		{Name: "heap", Offset: 0, Shape: []int{1}, Min: 0, Max: g.heap, Doc: "stones left"},
		{Name: "to_act", Offset: 1, Shape: []int{g.players}, Min: 0, Max: 1, Doc: "1 at (seat to act - observer) mod players"},
		{Name: "over", Offset: 1 + g.players, Shape: []int{1}, Min: 0, Max: 1, Doc: "1 once the last stone is taken"},
	}}
}

// NewInitialState implements env.Game.
func (g *Game) NewInitialState(seed uint64) env.State {
	s := &State{g: g, hist: make([]int, 0, g.MaxGameLength())} // room for any game: Reset and play allocate nothing
	s.Reset(seed)
	return s
}

// DeserializeState reads "seed;a,b,c" and replays it.
func (g *Game) DeserializeState(text string) (env.State, error) {
	seedText, acts, _ := strings.Cut(text, ";")
	seed, err := strconv.ParseUint(seedText, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("nim state %q: seed: %w", text, err)
	}
	s := g.NewInitialState(seed)
	if acts != "" {
		for _, f := range strings.Split(acts, ",") {
			a, err := strconv.Atoi(f)
			if err != nil {
				return nil, fmt.Errorf("nim state %q: %w", text, err)
			}
			if err := s.ApplyAction(a); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

// State is a game of Nim.
type State struct {
	g            *Game
	seed         uint64
	heap, player int
	winner       int // -1 while in play
	hist         []int
}

// Reset implements env.Resetter.
func (s *State) Reset(seed uint64) {
	s.seed, s.heap, s.winner, s.hist = seed, s.g.heap, -1, s.hist[:0]
	s.player = int(seed % uint64(s.g.players))
}

func (s *State) Game() env.Game { return s.g }
func (s *State) CurrentPlayer() int {
	if s.winner >= 0 {
		return -1
	}
	return s.player
}
func (s *State) IsTerminal() bool   { return s.winner >= 0 }
func (s *State) IsLegal(a int) bool { return s.winner < 0 && a >= 0 && a < s.g.take && a < s.heap }
func (s *State) AppendLegalActions(dst []int) []int {
	for a := range s.g.take {
		if s.IsLegal(a) {
			dst = append(dst, a)
		}
	}
	return dst
}
func (s *State) WriteMask(dst []uint8) {
	for a := range s.g.take {
		dst[a] = 0
		if s.IsLegal(a) {
			dst[a] = 1
		}
	}
}

// ApplyAction implements env.State.
func (s *State) ApplyAction(a int) error {
	if !s.IsLegal(a) {
		return fmt.Errorf("nim: action %d is not legal (heap %d, take 1..%d)", a, s.heap, s.g.take)
	}
	s.ApplyUnchecked(a)
	return nil
}

// ApplyUnchecked implements env.State.
func (s *State) ApplyUnchecked(a int) {
	s.heap -= a + 1
	s.hist = append(s.hist, a)
	if s.heap == 0 {
		s.winner = s.player
		return
	}
	s.player = (s.player + 1) % s.g.players
}

// WriteReturns implements env.State: 1 for the winner, else 0.
func (s *State) WriteReturns(dst []float64) {
	for i := range s.g.players {
		dst[i] = 0
		if i == s.winner {
			dst[i] = 1
		}
	}
}

// WriteObservation implements env.State.
func (s *State) WriteObservation(dst []uint8, player int) {
	p := s.g.players
	clear(dst[:2+p])
	dst[0] = uint8(s.heap)
	if s.winner >= 0 {
		dst[1+p] = 1
		return
	}
	dst[1+(s.player-player+p)%p] = 1
}

func (s *State) Clone() env.State {
	c := *s
	c.hist = append([]int(nil), s.hist...)
	return &c
}
func (s *State) Serialize() string {
	parts := make([]string, len(s.hist))
	for i, a := range s.hist {
		parts[i] = strconv.Itoa(a)
	}
	return strconv.FormatUint(s.seed, 10) + ";" + strings.Join(parts, ",")
}
func (s *State) History() []int                    { return append([]int(nil), s.hist...) }
func (s *State) ActionString(player, a int) string { return fmt.Sprintf("take %d", a+1) }
func (s *State) String() string {
	return fmt.Sprintf("heap %d, seat %d to act, winner %d", s.heap, s.player, s.winner)
}

// Seed implements env.Seeded.
func (s *State) Seed() (uint64, bool) { return s.seed, true }

// Greedy takes the move that leaves a multiple of take+1 (the winning
// strategy for two players) when it can, else one stone.
type Greedy struct{}

// Act implements env.Bot.
func (Greedy) Act(st env.State, _ *env.RNG) int {
	s := st.(*State)
	if k := s.heap % (s.g.take + 1); k > 0 {
		return k - 1
	}
	return 0
}
