package env

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Bot chooses the action of the seat to act in s, using only what that seat
// knows, and returns a legal action. Bots are shared by many envs and
// goroutines: they keep no per-game state and draw randomness only from rng.
type Bot interface {
	Act(s State, rng *RNG) int
}

// BotFactory makes a bot for game g, or says why it cannot play g (a
// trained policy knows one observation layout).
type BotFactory func(g Game) (Bot, error)

// Costly is implemented by bots that think for a long time a move (the
// search bot): a server caps the envs of a session they play in.
type Costly interface {
	Costly() bool
}

// IsCostly says whether b declares itself costly.
func IsCostly(b Bot) bool {
	c, ok := b.(Costly)
	return ok && c.Costly()
}

// RandomBot plays uniformly among the legal actions of any game.
type RandomBot struct{}

// Act implements Bot: the k-th legal action in ascending order, k drawn
// uniformly. It allocates nothing (a buffer for AppendLegalActions would
// escape through the interface call), so a batch stepping it does not.
func (RandomBot) Act(s State, rng *RNG) int {
	na := s.Game().NumDistinctActions()
	n := 0
	for a := range na {
		if s.IsLegal(a) {
			n++
		}
	}
	k := rng.IntN(n)
	for a := range na {
		if s.IsLegal(a) {
			if k == 0 {
				return a
			}
			k--
		}
	}
	panic("env: RandomBot: no legal action")
}

// Registry holds game types and, per game, the bots that can play it. It
// is a value: whoever serves games builds one. Safe for concurrent use.
type Registry struct {
	mu    sync.RWMutex
	order []string
	types map[string]*entry
}

type entry struct {
	t    *Type
	bots map[string]BotFactory
}

// NewRegistry returns an empty registry. The first type registered is the
// default (the one an empty name means).
func NewRegistry() *Registry { return &Registry{types: map[string]*entry{}} }

// Register adds a game type; every type gets the bot "random".
func (r *Registry) Register(t *Type) error {
	if t.Name == "" || t.Make == nil || len(t.Players) == 0 {
		return fmt.Errorf("game type %q: name, players and Make are required", t.Name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.types[t.Name]; dup {
		return fmt.Errorf("game type %q registered twice", t.Name)
	}
	r.types[t.Name] = &entry{t: t, bots: map[string]BotFactory{
		"random": func(Game) (Bot, error) { return RandomBot{}, nil },
	}}
	r.order = append(r.order, t.Name)
	return nil
}

// MustRegister is Register, panicking on error (for wiring code).
func (r *Registry) MustRegister(t *Type) {
	if err := r.Register(t); err != nil {
		panic(err)
	}
}

// RegisterBot makes a bot available by name for one game.
func (r *Registry) RegisterBot(game, name string, f BotFactory) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.types[game]
	if !ok {
		return fmt.Errorf("bot %q: unknown game %q", name, game)
	}
	e.bots[name] = f
	return nil
}

// Names lists the registered games, the default first.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Clone(r.order)
}

// Lookup finds a game type by name; "" is the default.
func (r *Registry) Lookup(name string) (*Type, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if name == "" && len(r.order) > 0 {
		name = r.order[0]
	}
	e, ok := r.types[name]
	if !ok {
		return nil, &ParamError{"name", name, fmt.Sprintf("unknown game (known: %s)", strings.Join(r.order, ", "))}
	}
	return e.t, nil
}

// Bots lists the bots of a game, sorted.
func (r *Registry) Bots(game string) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.types[game]
	if !ok {
		return nil
	}
	names := make([]string, 0, len(e.bots))
	for n := range e.bots {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// UnknownBotError is NewBot's error for a name the game has no bot of.
type UnknownBotError struct {
	Game, Name string
	Known      []string
}

func (e *UnknownBotError) Error() string {
	return fmt.Sprintf("opponent %q: unknown bot for %s (known: %s)", e.Name, e.Game, strings.Join(e.Known, ", "))
}

// NewBot makes the bot name for game g.
func (r *Registry) NewBot(g Game, name string) (Bot, error) {
	game := g.Type().Name
	r.mu.RLock()
	e, ok := r.types[game]
	var f BotFactory
	if ok {
		f = e.bots[name]
	}
	r.mu.RUnlock()
	if f == nil {
		return nil, &UnknownBotError{Game: game, Name: name, Known: r.Bots(game)}
	}
	b, err := f(g)
	if err != nil {
		return nil, fmt.Errorf("opponent %q: %w", name, err)
	}
	return b, nil
}

// NewSeatBots makes the bot of each seat named in opponents (nil where the
// name is "", a learner seat) for game g: VecConfig.Bots. An error names
// the field "opponents" and the seat.
func (r *Registry) NewSeatBots(g Game, opponents []string) ([]Bot, error) {
	if opponents == nil {
		return nil, nil
	}
	bots := make([]Bot, len(opponents))
	for s, name := range opponents {
		if name == "" {
			continue
		}
		b, err := r.NewBot(g, name)
		if err != nil {
			reason := fmt.Sprintf("seat %d: %v", s, err)
			if ub, ok := err.(*UnknownBotError); ok {
				reason = fmt.Sprintf("seat %d: unknown bot for %s (known: %s)", s, ub.Game, strings.Join(ub.Known, ", "))
			}
			return nil, &ConfigError{"opponents", fmt.Sprintf("%q", name), reason}
		}
		bots[s] = b
	}
	return bots, nil
}
