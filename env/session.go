package env

import (
	"fmt"
	"math"
)

// DefaultMemoryBudget is the memory budget of a front end whose config
// names none: the server's limits.memory_budget and the in-process
// library's memory_budget.
const DefaultMemoryBudget = 2 << 30

// The observation dtypes and packings a session request takes, as the
// wire spells them.
const (
	ObsU1       = "<u1"
	ObsF4       = "<f4"
	PackingNone = "none"
	PackingBits = "bits"
)

// OneOpponentForm is the rule of a request with both opponent and
// opponents, written once: the plan refuses such a request first, and
// VecConfig.Check a config made without the plan.
const OneOpponentForm = "give one bot for every other seat (opponent) or a bot per seat (opponents), not both"

// SessionRequest is a request for a batch of envs, decoded by a front end
// from its wire form (the server's POST /v1/sessions body, the in-process
// library's config): every field as the caller gave it.
type SessionRequest struct {
	Game   string         // "" is the registry's default game
	Params map[string]any // the game's parameters (defaults for those absent)
	// NumEnvs is nil when absent (1).
	NumEnvs *int
	// Seed is nil when absent: the front end's Caps.Seed draws one.
	Seed         *uint64
	LearnerSeats []int
	Opponent     string
	// Opponents is nil when absent, else a bot name per seat ("" on
	// learner seats).
	Opponents []string
	Reward    string
	Packing   string // "", "none" or "bits"
	ObsDtype  string // "", "<u1", "|u1" or "<f4"
	Workers   int    // 0: GOMAXPROCS
}

// Caps are a front end's limits on a session, and how its messages name
// them (its config keys). A zero cap is no cap.
type Caps struct {
	// MaxEnvs bounds num_envs (0: MaxNumEnvs, the engine's own bound);
	// MaxEnvsName names it ("this server's max_envs_per_session").
	MaxEnvs     int
	MaxEnvsName string
	// MaxSearchEnvs bounds num_envs of a session with a costly bot
	// (Costly) on any seat; MaxSearchEnvsName names it.
	MaxSearchEnvs     int
	MaxSearchEnvsName string
	// MaxBlob bounds the bytes of an answer's largest tensor; MaxBlobName
	// says why ("4 GiB msgpack allows one binary").
	MaxBlob     int64
	MaxBlobName string
	// MemoryBudget bounds a session's worst-case memory (CostOf);
	// MemoryBudgetName names it ("the whole memory_budget"), and
	// MemoryBudgetField is the request field that set it ("" when the
	// front end's own config did), named by a too_large.
	MemoryBudget      int64
	MemoryBudgetName  string
	MemoryBudgetField string
	// DefaultOpponent plays the other seats of a request that leaves
	// seats to play and names no opponent; DefaultOpponentName names it
	// ("sessions.default_opponent").
	DefaultOpponent     string
	DefaultOpponentName string
	// Seed draws the seed of a request without one (a front end passes a
	// random one; nil gives 0).
	Seed func() uint64
}

// Plan is a checked session request: the game, the engine's config with
// its bots, and what the session costs.
type Plan struct {
	Game     Game
	Config   VecConfig
	ObsDtype string // "<u1" or "<f4"
	Cost     SessionCost
	// Costly names a costly bot (search) that plays a seat, or is "": a
	// session with one counts against the search caps.
	Costly string
}

// PlanSession turns a request into a plan or one coded error, the one
// sequence of checks of every front end: the game and its parameters,
// num_envs, reward, obs_dtype, packing, the opponents, the engine's own
// config checks, then the caps (costly bots, answer size, memory budget).
// An error names the request field to blame (details "field"); an unknown
// game lists the games, an unknown bot the game's bots.
// NewGameOf makes the game reg registers under name ("" for the default
// game) with the given parameters, or the coded error both front ends give
// (an unknown name lists the games). A batch (PlanSession) and a single
// state (the C library's dg_state_*) find their game through it.
func NewGameOf(reg *Registry, name string, params map[string]any) (Game, *Error) {
	typ, err := reg.Lookup(name)
	if err != nil {
		return nil, FromEngine(err).With("games", reg.Names())
	}
	g, err := typ.New(params)
	if err != nil {
		return nil, FromEngine(err)
	}
	return g, nil
}

func PlanSession(reg *Registry, req SessionRequest, caps Caps) (*Plan, *Error) {
	g, e := NewGameOf(reg, req.Game, req.Params)
	if e != nil {
		return nil, e
	}
	n := 1
	if req.NumEnvs != nil {
		n = *req.NumEnvs
	}
	if caps.MaxEnvs == 0 {
		if n < 1 || n > MaxNumEnvs {
			return nil, FromEngine(&ConfigError{"num_envs", n, fmt.Sprintf("must be 1..%d", MaxNumEnvs)})
		}
	} else if n < 1 || n > caps.MaxEnvs {
		return nil, FieldError("num_envs", "num_envs = %d: must be 1..%d (%s)", n, caps.MaxEnvs, caps.MaxEnvsName)
	}
	mode, err := ParseRewardMode(req.Reward)
	if err != nil {
		return nil, FromEngine(err)
	}
	obsDtype := ObsU1
	switch req.ObsDtype {
	case "", ObsU1, "|u1":
	case ObsF4:
		obsDtype = ObsF4
	default:
		return nil, FieldError("obs_dtype", "obs_dtype %q: want \"<u1\" or \"<f4\"", req.ObsDtype)
	}
	packed := false
	switch req.Packing {
	case "", PackingNone:
	case PackingBits:
		if obsDtype != ObsU1 {
			return nil, FieldError("packing", "packing %q sends obs as bits: obs_dtype must be \"<u1\", not %q", req.Packing, obsDtype)
		}
		packed = true
	default:
		return nil, FieldError("packing", "packing %q: want %q or %q", req.Packing, PackingNone, PackingBits)
	}
	var seed uint64
	switch {
	case req.Seed != nil:
		seed = *req.Seed
	case caps.Seed != nil:
		seed = caps.Seed()
	}
	opponent, defaulted := req.Opponent, false
	if def := caps.DefaultOpponent; def != "" && opponent == "" && req.Opponents == nil &&
		len(req.LearnerSeats) > 0 && len(req.LearnerSeats) < g.NumPlayers() {
		opponent, defaulted = def, true
	}
	vc := VecConfig{NumEnvs: n, Seed: seed, LearnerSeats: req.LearnerSeats, Opponent: opponent,
		Reward: mode, Workers: req.Workers, Packed: packed}
	if req.Opponents != nil {
		if req.Opponent != "" {
			return nil, FieldError("opponents", "opponent %q and opponents: %s", req.Opponent, OneOpponentForm)
		}
		vc.Opponents = req.Opponents
		if vc.Bots, err = reg.NewSeatBots(g, vc.Opponents); err != nil {
			return nil, FromEngine(err).With("bots", reg.Bots(g.Type().Name))
		}
	}
	if opponent != "" {
		if vc.Bot, err = reg.NewBot(g, opponent); err != nil {
			e := FromEngine(err)
			if defaulted {
				e.Message = fmt.Sprintf("no opponent given, and the default opponent (%s %q) cannot play this game: %s; name an opponent", caps.DefaultOpponentName, opponent, e.Message)
			}
			return nil, e.With("field", "opponent").With("bots", reg.Bots(g.Type().Name))
		}
	}
	// The engine's own checks (seats, opponents) before the caps, so a
	// request wrong in both names the field.
	if _, err := vc.Check(g.NumPlayers()); err != nil {
		return nil, FromEngine(err)
	}
	plan := &Plan{Game: g, Config: vc, ObsDtype: obsDtype, Costly: costlyBot(vc)}
	// A costly bot (search) thinks for milliseconds a move: a large batch
	// of it would hold a step for minutes.
	if plan.Costly != "" && caps.MaxSearchEnvs > 0 && n > caps.MaxSearchEnvs {
		return nil, FieldError("num_envs", "num_envs = %d: at most %d with the %s opponent (%s)", n, caps.MaxSearchEnvs, plan.Costly, caps.MaxSearchEnvsName)
	}
	plan.Cost = CostOf(n, g, obsDtype == ObsF4, packed)
	if caps.MaxBlob > 0 && plan.Cost.MaxBlob > caps.MaxBlob {
		return nil, FieldError("num_envs", "num_envs = %d: an answer's largest tensor would be %d bytes, over the %s; use fewer envs, obs_dtype \"<u1\" or packing \"bits\"", n, plan.Cost.MaxBlob, caps.MaxBlobName)
	}
	if budget := caps.MemoryBudget; budget > 0 && plan.Cost.Bytes > budget {
		e := Errorf(CodeTooLarge, "a session of these settings needs up to %s, more than %s (%s): use fewer envs or smaller game parameters, obs_dtype \"<u1\" or packing \"bits\"", MiB(plan.Cost.Bytes), caps.MemoryBudgetName, MiB(budget))
		if caps.MemoryBudgetField != "" {
			e.Message += ", or raise " + caps.MemoryBudgetField
			e.With("field", caps.MemoryBudgetField)
		}
		return nil, e.With("limit", budget).With("bytes_needed", plan.Cost.Bytes)
	}
	return plan, nil
}

// New builds the plan's batch. A panic while building (a bot's bug) is an
// internal error that wraps the *PanicError.
func (p *Plan) New() (Vec, *Error) {
	v, err := NewVec(p.Game, p.Config)
	if err != nil {
		return nil, FromEngine(err)
	}
	return v, nil
}

// costlyBot names a costly bot (search) that plays a seat of vc's envs, or
// is "". An env with any such seat counts once against the search caps,
// however many of its seats the bot plays (as with one opponent).
func costlyBot(vc VecConfig) string {
	if vc.Bot != nil && IsCostly(vc.Bot) {
		return vc.Opponent
	}
	for s, b := range vc.Bots {
		if b != nil && IsCostly(b) {
			return vc.Opponents[s]
		}
	}
	return ""
}

// MiB formats bytes as MiB for messages.
func MiB(b int64) string { return fmt.Sprintf("%.0f MiB", math.Ceil(float64(b)/(1<<20))) }
