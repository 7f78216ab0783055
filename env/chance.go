package env

import "fmt"

// The single-state layer with explicit chance nodes, as OpenSpiel has it
// (spiel.h's State with ChanceMode kExplicitStochastic): what the pyspiel
// bridge and the C ABI's dg_state_* calls serve, for any game that
// implements ChanceGame.
//
// A State (above) draws its chance inside, from the seed NewInitialState
// was given: fast for batches, and what the engine steps. OpenSpiel's
// algorithms (MCTS, ISMCTS, CFR, exact tree walks) want every chance event
// as a node of the tree instead, with its outcomes and their probabilities.
// A game offers such states by implementing ChanceGame; the bridge serves
// exactly the games that do.
//
// The rule for a game that does not: it is not bridged, and a request for
// one is refused with a clear error (dg_state_new answers bad_request naming
// the game). The bridge never invents chance nodes for a State that draws
// inside: one initial chance node over seeds would claim 2^64 equally likely
// outcomes where the game has few (the test game's seed picks only the
// first seat), and a seed may drive draws later in the game that would then
// be hidden inside a "decision". A game whose only chance is such a draw
// implements ChanceGame with that draw as a chance node of its own (a few
// lines: see docs/games.md).

// ChancePlayer is CurrentPlayer's answer at a chance node (OpenSpiel's
// kChancePlayerId). A ChanceState answers TerminalPlayer once the game is
// over.
const ChancePlayer = -1

// ChanceOutcome is one outcome of a chance node: the action that applies it
// and its probability.
type ChanceOutcome struct {
	Action int
	Prob   float64
}

// PlayerAction is one entry of a history: who acted (ChancePlayer for a
// chance outcome) and the action.
type PlayerAction struct {
	Player, Action int
}

// ChanceInfo is what a ChanceGame adds to its Game's sizes for OpenSpiel's
// GameInfo and tensor shapes. MaxGameLength, the utilities, the players and
// the actions are the Game's.
type ChanceInfo struct {
	// MaxChanceOutcomes bounds the outcomes of one chance node; chance
	// outcomes are actions 0..MaxChanceOutcomes-1.
	MaxChanceOutcomes int
	// MaxChanceNodes bounds the chance nodes of one game's history.
	MaxChanceNodes int
	// ObservationTensorSize and InformationStateTensorSize are the lengths
	// of the float32 tensors a ChanceState writes.
	ObservationTensorSize      int
	InformationStateTensorSize int
}

// ChanceGame is a Game that also provides states with explicit chance
// nodes. Only games implementing it are offered as OpenSpiel games (see
// the rule at the top of this file).
type ChanceGame interface {
	Game
	// NewChanceState is the start of a game: a chance node when the game
	// begins with chance.
	NewChanceState() ChanceState
	// DeserializeChanceState reads what ChanceState.Serialize wrote,
	// replaying and checking it; a text of another game or configuration,
	// or a damaged one, is an error.
	DeserializeChanceState(text string) (ChanceState, error)
	ChanceInfo() ChanceInfo
}

// ChanceState is one game in progress with explicit chance nodes
// (OpenSpiel's State). Players are seats 0..NumPlayers-1; every method
// taking a player accepts any seat, whoever is to act. It is not safe for
// concurrent use.
type ChanceState interface {
	Game() Game
	// CurrentPlayer is the seat to act, ChancePlayer at a chance node, or
	// TerminalPlayer once the game is over.
	CurrentPlayer() int
	IsTerminal() bool
	// AppendLegalActions appends the legal actions in ascending order: at
	// a chance node, the actions of the chance outcomes; none once
	// terminal.
	AppendLegalActions(dst []int) []int
	// AppendChanceOutcomes appends the outcomes of a chance node, in the
	// order of AppendLegalActions, their probabilities summing to 1;
	// nothing at other nodes.
	AppendChanceOutcomes(dst []ChanceOutcome) []ChanceOutcome
	// ChanceRun says how a caller may apply a run of chance outcomes
	// without asking between them: at a chance node whose outcomes are
	// equally likely, the number of chance nodes in a row, this one
	// included, each of which draws one of these outcomes without
	// replacement, equally likely among those left (a deal: the cards left
	// to deal). 0 when there is no such promise (and at other nodes).
	ChanceRun() int
	// ApplyAction applies a legal action or chance outcome, or returns a
	// *IllegalActionError (Env -1) and changes nothing.
	ApplyAction(a int) error
	// ActionString names action a of player (ChancePlayer for an outcome).
	ActionString(player, a int) string
	// WriteReturns writes each seat's return so far into dst[:NumPlayers].
	WriteReturns(dst []float64)
	// WriteRewards writes each seat's rewards since the last node where a
	// player acted into dst[:NumPlayers] (OpenSpiel's convention: read at
	// every player node and at the end, they add up to the returns).
	WriteRewards(dst []float64)
	// ObservationTensor and InformationStateTensor write player's tensors
	// into dst[:size] (ChanceInfo's sizes). They show only what player
	// knows; the information state is everything it has seen (perfect
	// recall), the observation what it sees now.
	ObservationTensor(player int, dst []float32)
	InformationStateTensor(player int, dst []float32)
	// ObservationString and InformationStateString are the same in words;
	// String shows the whole state.
	ObservationString(player int) string
	InformationStateString(player int) string
	String() string
	// AppendHistory appends every action so far (chance outcomes
	// included), in order.
	AppendHistory(dst []PlayerAction) []PlayerAction
	Clone() ChanceState
	// Serialize writes the state as text the game's DeserializeChanceState
	// reads back.
	Serialize() string
	// ResampleFromInfostate returns a state player cannot tell from this
	// one (same information state tensor and string, same node), with
	// what player has not seen drawn anew from seed; its history is that
	// of the resampled world.
	ResampleFromInfostate(player int, seed uint64) (ChanceState, error)
}

// SampleChance draws one of a chance node's outcomes by its probability
// with u uniform in [0, 1).
func SampleChance(outcomes []ChanceOutcome, u float64) int {
	for _, o := range outcomes {
		if u < o.Prob {
			return o.Action
		}
		u -= o.Prob
	}
	return outcomes[len(outcomes)-1].Action // rounding left u just above the sum
}

// rolloutStream is the stream of RandomRollout's draws.
const rolloutStream = 0x0110

// RandomRollout plays n games to the end from copies of s (chance outcomes
// drawn by their probabilities, players' actions uniformly among the
// legal ones), with draws from seed, and adds each seat's final returns to
// sum[:NumPlayers]. s is left as it was. An MCTS evaluator's rollouts in
// one call.
func RandomRollout(s ChanceState, n int, seed uint64, sum []float64) error {
	rng := NewRNG(seed, rolloutStream)
	ret := make([]float64, s.Game().NumPlayers())
	var legal []int
	var outcomes []ChanceOutcome
	for range n {
		c := s.Clone()
		for !c.IsTerminal() {
			legal = c.AppendLegalActions(legal[:0])
			if len(legal) == 0 {
				return fmt.Errorf("rollout: no legal action at a node that is not terminal:\n%s", c)
			}
			a := legal[0]
			switch {
			case c.CurrentPlayer() != ChancePlayer || c.ChanceRun() > 0: // uniform
				a = legal[rng.IntN(len(legal))]
			default:
				outcomes = c.AppendChanceOutcomes(outcomes[:0])
				a = SampleChance(outcomes, rng.Float64())
			}
			if err := c.ApplyAction(a); err != nil {
				return fmt.Errorf("rollout: a legal action was refused: %w", err)
			}
		}
		c.WriteReturns(ret)
		for i, v := range ret {
			sum[i] += v
		}
	}
	return nil
}
