package env

// The optional interfaces of a bot that a teacher uses to label positions
// (cmd/dgteach): a bot that scores every legal action, and one whose
// budget is a number of sampled worlds. A caller finds them with a type
// assertion on the Bot a registry made; a bot without them still plays.

// ActionValuer is implemented by bots that score every legal action of a
// state for the seat to act: the card game's search (each card's mean
// outcome, over worlds that resample the hidden hands, of the deal for
// that seat less the others' mean).
type ActionValuer interface {
	Bot
	// ActionValues writes the value of legal[j] into dst[j] for every j
	// (len(dst) == len(legal)); legal is s's legal actions, ascending
	// (AppendLegalActions). It uses only what the seat to act knows, draws
	// randomness only from rng, leaves s as it was, and runs on the
	// caller's goroutine: a caller labelling many states runs them in
	// parallel itself, and the values do not depend on how.
	ActionValues(s State, rng *RNG, legal []int, dst []float64)
}

// Sampler is implemented by bots whose budget is a number of sampled
// worlds a decision (the card game's search: its determinizations).
type Sampler interface {
	// WithSamples is the same bot with n worlds a decision (n >= 1).
	WithSamples(n int) Bot
}
