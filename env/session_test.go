package env_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/davidgoliath/dgenv/env"
	"github.com/davidgoliath/dgenv/env/testgame"
)

// thinker is a costly bot (as search is): a session with it counts
// against the search caps.
type thinker struct{ env.RandomBot }

func (thinker) Costly() bool { return true }

func planRegistry(t *testing.T) *env.Registry {
	t.Helper()
	reg := env.NewRegistry()
	if err := testgame.Register(reg); err != nil {
		t.Fatal(err)
	}
	if err := reg.RegisterBot(testgame.Name, "thinker", func(env.Game) (env.Bot, error) { return thinker{}, nil }); err != nil {
		t.Fatal(err)
	}
	return reg
}

func intp(n int) *int { return &n }

// TestPlanSessionRefusesEachFieldWithItsCode is the plan's table: every
// code and field it gives, in its order of checks, under both kinds of
// caps (none, as the in-process library's, and a server's).
func TestPlanSessionRefusesEachFieldWithItsCode(t *testing.T) {
	reg := planRegistry(t)
	g, err := reg.Lookup(testgame.Name)
	if err != nil {
		t.Fatal(err)
	}
	game, err := g.Default()
	if err != nil {
		t.Fatal(err)
	}
	perEnv := env.CostOf(1000, game, false, false).Bytes
	server := env.Caps{
		MaxEnvs: 100, MaxEnvsName: "max_envs_per_session",
		MaxSearchEnvs: 8, MaxSearchEnvsName: "limits.max_search_envs",
		MaxBlob: 64, MaxBlobName: "64 bytes of the test",
		MemoryBudget: 1 << 30, MemoryBudgetName: "the whole budget",
		DefaultOpponent: "nobody", DefaultOpponentName: "sessions.default_opponent",
	}
	none := env.Caps{}
	budget := env.Caps{MemoryBudget: perEnv - 1, MemoryBudgetName: "the whole memory_budget", MemoryBudgetField: "memory_budget"}
	for _, c := range []struct {
		name  string
		req   env.SessionRequest
		caps  env.Caps
		code  env.Code
		field string
		has   []string // substrings of the message
		keys  []string // details besides field
	}{
		{"an unknown game", env.SessionRequest{Game: "chess"}, none, env.CodeBadRequest, "game.name", []string{`"chess"`, "unknown game"}, []string{"games"}},
		{"a parameter out of range", env.SessionRequest{Params: map[string]any{"heap": 99}}, none, env.CodeBadRequest, "game.heap", []string{"game.heap = 99"}, nil},
		{"an unknown parameter", env.SessionRequest{Params: map[string]any{"deals": 1}}, none, env.CodeBadRequest, "game.deals", []string{"unknown parameter"}, nil},
		{"num_envs 0, the engine's bound", env.SessionRequest{NumEnvs: intp(0)}, none, env.CodeBadRequest, "num_envs", []string{fmt.Sprintf("num_envs = 0: must be 1..%d", env.MaxNumEnvs)}, nil},
		{"num_envs past the engine", env.SessionRequest{NumEnvs: intp(env.MaxNumEnvs + 1)}, none, env.CodeBadRequest, "num_envs", nil, nil},
		{"num_envs past the front end's cap", env.SessionRequest{NumEnvs: intp(101)}, server, env.CodeBadRequest, "num_envs", []string{"num_envs = 101: must be 1..100 (max_envs_per_session)"}, nil},
		{"num_envs before reward", env.SessionRequest{NumEnvs: intp(0), Reward: "x"}, server, env.CodeBadRequest, "num_envs", nil, nil},
		{"a reward", env.SessionRequest{Reward: "x"}, none, env.CodeBadRequest, "reward", []string{`want "points" or "zero_sum"`}, nil},
		{"an obs_dtype", env.SessionRequest{ObsDtype: "<f8"}, none, env.CodeBadRequest, "obs_dtype", []string{`obs_dtype "<f8"`}, nil},
		{"obs_dtype before packing", env.SessionRequest{ObsDtype: "<f8", Packing: "zip"}, none, env.CodeBadRequest, "obs_dtype", nil, nil},
		{"a packing", env.SessionRequest{Packing: "zip"}, none, env.CodeBadRequest, "packing", []string{`packing "zip": want "none" or "bits"`}, nil},
		{"bits of float32", env.SessionRequest{Packing: "bits", ObsDtype: "<f4"}, none, env.CodeBadRequest, "packing", []string{`not "<f4"`}, nil},
		{"opponent and opponents", env.SessionRequest{Opponent: "random", Opponents: []string{"", "random"}}, none, env.CodeBadRequest, "opponents", []string{"not both"}, nil},
		{"an unknown bot of opponents", env.SessionRequest{Opponents: []string{"", "nobody"}}, none, env.CodeBadRequest, "opponents", []string{"nobody"}, []string{"bots"}},
		{"opponents of the wrong length", env.SessionRequest{Opponents: []string{"", "random", "random"}}, none, env.CodeBadRequest, "opponents", []string{"want a list of 2 entries"}, nil},
		{"an unknown opponent", env.SessionRequest{LearnerSeats: []int{0}, Opponent: "nobody"}, none, env.CodeBadRequest, "opponent", []string{"nobody"}, []string{"bots"}},
		{"a default opponent that cannot play", env.SessionRequest{LearnerSeats: []int{0}}, server, env.CodeBadRequest, "opponent", []string{"no opponent given", "sessions.default_opponent", `"nobody"`, "name an opponent"}, []string{"bots"}},
		{"a learner seat out of range", env.SessionRequest{LearnerSeats: []int{2}, Opponent: "random"}, none, env.CodeBadRequest, "learner_seats", nil, nil},
		{"seats left to play and no opponent", env.SessionRequest{LearnerSeats: []int{0}}, none, env.CodeBadRequest, "opponent", []string{"required"}, nil},
		{"a costly opponent past its cap", env.SessionRequest{NumEnvs: intp(9), LearnerSeats: []int{0}, Opponent: "thinker"}, server, env.CodeBadRequest, "num_envs", []string{"at most 8 with the thinker opponent (limits.max_search_envs)"}, nil},
		{"a costly bot of opponents past its cap", env.SessionRequest{NumEnvs: intp(9), Opponents: []string{"", "thinker"}}, server, env.CodeBadRequest, "num_envs", []string{"thinker"}, nil},
		{"an answer's tensor past its cap", env.SessionRequest{NumEnvs: intp(65)}, server, env.CodeBadRequest, "num_envs", []string{"64 bytes of the test"}, nil},
		{"over the whole memory budget, set by the request", env.SessionRequest{NumEnvs: intp(1000)}, budget, env.CodeTooLarge, "memory_budget", []string{"more than the whole memory_budget"}, []string{"limit", "bytes_needed"}},
		{"over the whole memory budget of the front end", env.SessionRequest{NumEnvs: intp(8)}, env.Caps{MemoryBudget: 1, MemoryBudgetName: "the server's budget"}, env.CodeTooLarge, "", []string{"the server's budget"}, []string{"limit", "bytes_needed"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, e := env.PlanSession(reg, c.req, c.caps)
			if e == nil {
				t.Fatalf("planned %+v, want a %s", p, c.code)
			}
			if e.Code != c.code || e.Field() != c.field {
				t.Fatalf("%s naming %q (%s), want %s naming %q", e.Code, e.Field(), e.Message, c.code, c.field)
			}
			for _, s := range c.has {
				if !strings.Contains(e.Message, s) {
					t.Errorf("message %q lacks %q", e.Message, s)
				}
			}
			want := slices.Clone(c.keys)
			if c.field != "" {
				want = append(want, "field")
			}
			var got []string
			for k := range e.Details {
				got = append(got, k)
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("details %v, want the keys %v", e.Details, want)
			}
		})
	}
}

func TestPlanSessionPlans(t *testing.T) {
	reg := planRegistry(t)
	caps := env.Caps{MaxEnvs: 100, MaxSearchEnvs: 8, MaxBlob: math.MaxUint32, MemoryBudget: 1 << 30,
		DefaultOpponent: "greedy", Seed: func() uint64 { return 42 }}
	p, e := env.PlanSession(reg, env.SessionRequest{Params: map[string]any{"heap": 12}, NumEnvs: intp(8), LearnerSeats: []int{1},
		Reward: "zero_sum", ObsDtype: "<f4", Workers: 3}, caps)
	if e != nil {
		t.Fatal(e)
	}
	vc := p.Config
	if p.Game.Type().Name != testgame.Name || p.Game.Values()["heap"] != 12 || vc.NumEnvs != 8 || vc.Seed != 42 ||
		vc.Opponent != "greedy" || vc.Bot == nil || vc.Reward != env.RewardZeroSum || vc.Workers != 3 || vc.Packed ||
		p.ObsDtype != env.ObsF4 || p.Costly != "" {
		t.Fatalf("plan %+v, config %+v", p, vc)
	}
	if want := env.CostOf(8, p.Game, true, false); p.Cost != want {
		t.Errorf("cost %+v, want CostOf's %+v", p.Cost, want)
	}
	seed := uint64(7)
	p, e = env.PlanSession(reg, env.SessionRequest{NumEnvs: intp(8), Seed: &seed, Opponents: []string{"thinker", ""}, Packing: "bits"}, caps)
	if e != nil {
		t.Fatal(e)
	}
	if p.Config.Seed != 7 || p.Costly != "thinker" || !p.Config.Packed || p.ObsDtype != env.ObsU1 || p.Config.Bots[0] == nil {
		t.Fatalf("plan %+v", p)
	}
	v, e := p.New()
	if e != nil {
		t.Fatal(e)
	}
	defer v.Close()
	if got := v.LearnerSeats(); !slices.Equal(got, []int{1}) {
		t.Errorf("learner seats %v, want [1]", got)
	}
}

// TestFromEngineMapsEachTypedError: the one mapping of the engine's errors.
func TestFromEngineMapsEachTypedError(t *testing.T) {
	coded := env.Errorf(env.CodeLimit, "full")
	for _, c := range []struct {
		err     error
		code    env.Code
		field   string
		message string
	}{
		{&env.ParamError{Name: "heap", Value: 99, Reason: "must be 1..40"}, env.CodeBadRequest, "game.heap", "game.heap = 99: must be 1..40"},
		{&env.ConfigError{Field: "reward", Value: "x", Reason: "no"}, env.CodeBadRequest, "reward", "reward = x: no"},
		{&env.UnknownBotError{Game: "nim", Name: "x"}, env.CodeBadRequest, "opponent", (&env.UnknownBotError{Game: "nim", Name: "x"}).Error()},
		{&env.IllegalActionError{Env: 3, Player: 1, Action: 9, Legal: nil}, env.CodeIllegalAction, "", "env 3: illegal action 9 for seat 1 (legal: [])"},
		{&env.PanicError{Value: "boom"}, env.CodeInternal, "", "internal error: panic while stepping: boom"},
		{fmt.Errorf("wrapped: %w", &env.ConfigError{Field: "num_envs", Value: 0, Reason: "no"}), env.CodeBadRequest, "num_envs", "wrapped: num_envs = 0: no"},
		{errors.New("plain"), env.CodeBadRequest, "", "plain"},
		{coded, env.CodeLimit, "", "full"},
	} {
		e := env.FromEngine(c.err)
		if e.Code != c.code || e.Field() != c.field || e.Message != c.message {
			t.Errorf("FromEngine(%v) = %s %q %q, want %s %q %q", c.err, e.Code, e.Field(), e.Message, c.code, c.field, c.message)
		}
		if c.err != coded && !errors.Is(e, c.err) {
			t.Errorf("FromEngine(%v) does not wrap it", c.err)
		}
	}
	if env.FromEngine(nil) != nil {
		t.Error("FromEngine(nil) is not nil")
	}
	e := env.StepError(&env.IllegalActionError{Env: 0, Player: 1, Action: 2, Legal: []int{0}})
	if !strings.HasSuffix(e.Message, "; no env was stepped") || e.Details["env"] != 0 || e.Details["action"] != 2 || !slices.Equal(e.Details["legal"].([]int), []int{0}) {
		t.Errorf("StepError = %+v", e)
	}
	if e := env.FromEngine(&env.IllegalActionError{Env: 0}); e.Details["legal"] == nil {
		t.Error("no legal actions are [] on the wire, not null")
	}
}
