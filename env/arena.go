package env

import (
	"fmt"
	"math"
	"runtime"
	"sort"
	"sync"
)

// MatchConfig is a series of games between named agents.
type MatchConfig struct {
	// Agents are bot names, one per seat position; game k is played in
	// seating k mod Seatings(P) (SeatOf says where each agent sits).
	Agents []string
	Games  int
	Seed   uint64
	// Duplicate plays every deal seed once in every seating, so each agent
	// meets the same cards from every seat, after and before every other
	// agent, and the luck of the deal and of the seating cancels. Games is
	// rounded up to a multiple of Seatings(P).
	Duplicate bool
	Workers   int
	// Progress, if set, is called with the number of games finished.
	Progress func(done, total int)
}

// Seatings is the number of seatings a match cycles through: the P
// rotations of the agents' order and, from 3 players on, the P rotations of
// the reversed order too. With rotations alone an agent always plays
// right after the same other agent (in a trick-taking game, a real
// advantage or handicap: measured at about 5 points a game for the bot
// seated just before search); the reversed order puts it right after the
// other neighbour as often.
func Seatings(p int) int {
	if p <= 2 {
		return p // the reversed order of 2 is a rotation
	}
	return 2 * p
}

// SeatOf is the seat of agent i in seating r (0 <= r < Seatings(p)): the
// agents' order rotated by r, or for r >= p the reversed order rotated by
// r - p.
func SeatOf(i, r, p int) int {
	if r < p {
		return (i + r) % p
	}
	return ((r-p-i)%p + p) % p
}

// MatchResult holds every game's totals per agent index.
type MatchResult struct {
	Agents []string
	// Scores[k][i] is agent i's total in game k; Seeds[k] the deal seed.
	Scores [][]int
	Seeds  []uint64
}

// RunMatch plays cfg.Games games of p seats on all cores: game k in
// seating k mod Seatings(p) (agent i at seat SeatOf(i, seating, p)), from
// its deal seed (shared by the seatings of a duplicate set). play returns
// the totals per seat.
func RunMatch(cfg MatchConfig, p int, play func(rot int, dealSeed, botSeed uint64) ([]int, error)) (*MatchResult, error) {
	if cfg.Games < 1 {
		return nil, fmt.Errorf("games = %d: must be >= 1", cfg.Games)
	}
	n, ns := cfg.Games, Seatings(p)
	if cfg.Duplicate {
		n = (n + ns - 1) / ns * ns
	}
	res := &MatchResult{Agents: cfg.Agents, Scores: make([][]int, n), Seeds: make([]uint64, n)}
	w := cfg.Workers
	if w <= 0 {
		w = runtime.GOMAXPROCS(0)
	}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		next   int
		done   int
		first  error
		master = NewRNG(cfg.Seed, 0x5eed)
	)
	seeds := make([]uint64, n)
	for k := range seeds {
		seeds[k] = master.Uint64()
	}
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				k := next
				next++
				failed := first != nil
				mu.Unlock()
				if k >= n || failed {
					return
				}
				rot, dealSeed := k%ns, seeds[k]
				if cfg.Duplicate {
					dealSeed = seeds[k-rot]
				}
				totals, err := playRecovered(play, rot, dealSeed, seeds[k]^0xb07)
				mu.Lock()
				if err != nil && first == nil {
					first = err
				}
				if err == nil {
					sc := make([]int, p)
					for i := range p {
						sc[i] = totals[SeatOf(i, rot, p)]
					}
					res.Scores[k], res.Seeds[k] = sc, dealSeed
				}
				done++
				if cfg.Progress != nil {
					cfg.Progress(done, n)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	return res, nil
}

// playRecovered plays one game of a match. A bot that panics with an error
// (a policy whose network gave non-finite logits: policy.ErrNonFinite)
// fails the match with that error instead of ending the process; any other
// panic (a runtime error: a bug) goes on.
func playRecovered(play func(rot int, dealSeed, botSeed uint64) ([]int, error), rot int, dealSeed, botSeed uint64) (totals []int, err error) {
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(error)
			if _, bug := r.(runtime.Error); !ok || bug {
				panic(r)
			}
			totals, err = nil, fmt.Errorf("a bot failed: %w", e)
		}
	}()
	return play(rot, dealSeed, botSeed)
}

// PlayMatchOf plays a match of any game of a registry: agents name bots of
// that game (g is the game). Each game starts from
// NewInitialState(deal seed), so with Duplicate every seating of a set
// meets the same chance as far as the game's chance depends on the seed
// alone. Totals are the returns rounded to integers.
func PlayMatchOf(reg *Registry, g Game, cfg MatchConfig) (*MatchResult, error) {
	p := g.NumPlayers()
	if len(cfg.Agents) != p {
		return nil, fmt.Errorf("%d agents for %d seats", len(cfg.Agents), p)
	}
	bots := make([]Bot, p)
	for i, name := range cfg.Agents {
		var err error
		if bots[i], err = reg.NewBot(g, name); err != nil {
			return nil, err
		}
	}
	return RunMatch(cfg, p, func(rot int, dealSeed, botSeed uint64) ([]int, error) {
		s := g.NewInitialState(dealSeed)
		rngs := make([]RNG, p)
		agentAt := make([]int, p) // the agent at each seat in this seating
		for i := range rngs {
			rngs[i] = NewRNG(botSeed, uint64(i))
			agentAt[SeatOf(i, rot, p)] = i
		}
		for steps := 0; !s.IsTerminal(); steps++ {
			if steps > g.MaxGameLength() {
				return nil, fmt.Errorf("%s: a game went past MaxGameLength %d", g.Type().Name, g.MaxGameLength())
			}
			seat := s.CurrentPlayer()
			a := bots[agentAt[seat]].Act(s, &rngs[seat])
			if err := s.ApplyAction(a); err != nil {
				return nil, fmt.Errorf("%s at seat %d: %w", cfg.Agents[agentAt[seat]], seat, err)
			}
		}
		ret := Returns(s)
		totals := make([]int, p)
		for i, r := range ret {
			totals[i] = int(math.Round(r))
		}
		return totals, nil
	})
}

// Estimate is a mean with the half-width of its 95% confidence interval.
type Estimate struct {
	Mean float64
	CI95 float64
}

func (e Estimate) String() string { return fmt.Sprintf("%.2f ± %.2f", e.Mean, e.CI95) }

// Estimate95 is the sample mean with a normal-approximation 95% interval.
func Estimate95(xs []float64) Estimate {
	n := float64(len(xs))
	if n == 0 {
		return Estimate{Mean: math.NaN(), CI95: math.NaN()}
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	mean := sum / n
	if n < 2 {
		return Estimate{Mean: mean, CI95: math.Inf(1)}
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return Estimate{Mean: mean, CI95: 1.96 * math.Sqrt(ss/(n-1)/n)}
}

// AgentStats summarises one agent name over a match (seats held by the same
// name are pooled per game: their mean is one sample).
type AgentStats struct {
	Name  string
	Seats int
	Score Estimate // total per game
	Diff  Estimate // total minus the mean of the other seats
	Win   Estimate // share of the win (ties share)
}

// Summarize computes per-name statistics.
func (r *MatchResult) Summarize() []AgentStats {
	names := map[string][]int{}
	var order []string
	for i, a := range r.Agents {
		if _, ok := names[a]; !ok {
			order = append(order, a)
		}
		names[a] = append(names[a], i)
	}
	p := len(r.Agents)
	out := make([]AgentStats, 0, len(order))
	for _, name := range order {
		idx := names[name]
		var score, diff, win []float64
		for _, sc := range r.Scores {
			sum, best := 0, math.MinInt
			for _, x := range sc {
				sum += x
				best = max(best, x)
			}
			nBest := 0
			for _, x := range sc {
				if x == best {
					nBest++
				}
			}
			var s, d, w float64
			for _, i := range idx {
				s += float64(sc[i])
				d += ZeroSum(float64(sc[i]), float64(sum), p)
				if sc[i] == best {
					w += 1 / float64(nBest)
				}
			}
			k := float64(len(idx))
			score, diff, win = append(score, s/k), append(diff, d/k), append(win, w/k)
		}
		out = append(out, AgentStats{Name: name, Seats: len(idx), Score: Estimate95(score), Diff: Estimate95(diff), Win: Estimate95(win)})
	}
	return out
}

// SeatStats is one agent position's record from one seat (in the duel,
// a role: seat 0 Goliath, seat 1 David).
type SeatStats struct {
	Agent int    // index into MatchResult.Agents
	Name  string // its name
	Seat  int
	Games int
	Score Estimate // total per game
	Wins  int      // games it scored strictly above every other seat
	Draws int      // games it tied for the best with another seat
}

// BySeat splits the match by the seat each agent position held, following
// PlayMatch's seatings (agent i sits at seat SeatOf(i, k mod Seatings(P), P)
// in game k). It
// is meaningless for scores not played in that order (such as a CSV of
// games played elsewhere).
func (r *MatchResult) BySeat() []SeatStats {
	p := len(r.Agents)
	type key struct{ agent, seat int }
	scores := map[key][]float64{}
	wins, draws := map[key]int{}, map[key]int{}
	for k, sc := range r.Scores {
		best, nBest := math.MinInt, 0
		for _, x := range sc {
			best = max(best, x)
		}
		for _, x := range sc {
			if x == best {
				nBest++
			}
		}
		for i, x := range sc {
			c := key{i, SeatOf(i, k%Seatings(p), p)}
			scores[c] = append(scores[c], float64(x))
			if x == best && nBest == 1 {
				wins[c]++
			} else if x == best {
				draws[c]++
			}
		}
	}
	var out []SeatStats
	for i := range p {
		for seat := range p {
			c := key{i, seat}
			if len(scores[c]) == 0 {
				continue
			}
			out = append(out, SeatStats{Agent: i, Name: r.Agents[i], Seat: seat, Games: len(scores[c]),
				Score: Estimate95(scores[c]), Wins: wins[c], Draws: draws[c]})
		}
	}
	return out
}

// Ratings fits Bradley-Terry strengths to every pairwise comparison of
// totals within each game (a tie counts half) and reports them on the Elo
// scale, the mean rating fixed at 1500. Seats held by the same name are one
// agent.
func (r *MatchResult) Ratings() map[string]float64 {
	idx := map[string]int{}
	var names []string
	for _, a := range r.Agents {
		if _, ok := idx[a]; !ok {
			idx[a] = len(names)
			names = append(names, a)
		}
	}
	m := len(names)
	wins := make([][]float64, m)
	for i := range wins {
		wins[i] = make([]float64, m)
	}
	for _, sc := range r.Scores {
		for i := range sc {
			for j := range sc {
				a, b := idx[r.Agents[i]], idx[r.Agents[j]]
				if i == j || a == b {
					continue
				}
				switch {
				case sc[i] > sc[j]:
					wins[a][b]++
				case sc[i] == sc[j]:
					wins[a][b] += 0.5
				}
			}
		}
	}
	// Minorization-maximization for Bradley-Terry, with a small prior of one
	// draw against every other agent so that unbeaten agents stay finite.
	str := make([]float64, m)
	for i := range str {
		str[i] = 1
	}
	for range 500 {
		for i := range m {
			num, den := 0.0, 0.0
			for j := range m {
				if i == j {
					continue
				}
				w := wins[i][j] + 0.5
				n := wins[i][j] + wins[j][i] + 1
				num += w
				den += n / (str[i] + str[j])
			}
			if den > 0 {
				str[i] = num / den
			}
		}
	}
	out := map[string]float64{}
	mean := 0.0
	for i := range m {
		mean += 400 * math.Log10(str[i])
	}
	mean /= float64(m)
	for i, name := range names {
		out[name] = 1500 + 400*math.Log10(str[i]) - mean
	}
	return out
}

// SortedNames returns a rating map's names, best first.
func SortedNames(r map[string]float64) []string {
	names := make([]string, 0, len(r))
	for n := range r {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return r[names[i]] > r[names[j]] })
	return names
}
