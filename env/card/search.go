package card

import (
	"github.com/davidgoliath/dgenv/env"

	"math"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
)

// SearchBot is a determinized (PIMC) search player: for each legal card it
// samples Worlds deals of the unseen cards consistent with what it knows
// (ResampleFromInfostate), plays the card, lets Rollout play everyone to the
// end of the deal, and keeps the card with the best mean outcome for itself:
// its own deal points minus the mean of the others' (so taking points away
// from the table counts too). The worlds are shared by all candidate cards
// (common random numbers), and split over Workers goroutines.
//
// With a Prior (a trained network's scores of the acting seat's cards, from
// that seat's own view), the card chosen maximises the mean outcome plus
// PriorWeight times the prior's score: the network, trained on many more
// searched positions than one move's worlds, corrects the sampling noise of
// a small number of worlds.
type SearchBot struct {
	Worlds  int      // determinizations per move (budget); 0 means 32
	Rollout StateBot // plays the rest of the deal; nil means HeuristicBot
	Workers int      // goroutines per move; 0 means GOMAXPROCS, 1 means none
	// Prior, if set, adds PriorWeight * score(card) to each card's mean outcome.
	Prior       Prior
	PriorWeight float64
	// Focus > 0 adds a second stage: the Focus cards with the best score
	// after the first Worlds (mean outcome plus prior) are played out in
	// FocusWorlds more worlds each, and the best of them by its mean over
	// all its worlds (plus prior) is chosen.
	Focus       int
	FocusWorlds int
	// Infer, if set, weights each world by how likely the other seats'
	// plays of this deal so far are in it: each such play where the seat
	// had a choice is scored by Infer from that seat's observation at the
	// time, rebuilt in the world (its hand then is its hand in the world
	// plus what it has played since), as a softmax over its legal cards at
	// InferTemp (0 means 1) mixed with the uniform choice by InferEps. A
	// card's value is then the weighted mean over the worlds (the weights
	// normalised, so only their ratios count). Only what the acting seat
	// knows enters: the plays are public, the hands are the world's.
	Infer     Prior
	InferTemp float64
	InferEps  float64
	// ModelSeats recognises the other seats that play as HeuristicBot from
	// the deals of this game that are over (every card of a deal ends up
	// played face up, so each play can be replayed with the hand the seat
	// held): a seat with at least 8 choices, every one the heuristic's. The
	// rollouts play such a seat by the heuristic, and the worlds are
	// weighted by the likelihood of its plays of this deal (the heuristic's
	// card at 1 - HeuristicSlack, the rest uniformly); Infer, if set,
	// weighs the other seats' plays.
	ModelSeats bool
	// InferPool > Worlds draws InferPool candidate worlds, weighs them as
	// above and resamples Worlds of them in proportion to their weights
	// (then every kept world counts the same); otherwise the Worlds worlds
	// are averaged with their weights.
	InferPool int
	// SelfRollout, if set, plays the acting seat's own cards in the
	// rollouts (Rollout still plays the others'): a model of how the seat
	// will really play, e.g. a trained policy.
	SelfRollout StateBot
}

// actor is what a playout calls: a StateBot, or the compositions below
// of StateBots (never an env.State wrapper: playouts stay on *State).
type actor interface {
	ActState(s *State, rng *RNG) Action
}

// selfRollout plays seat me by self and the others by other.
type selfRollout struct {
	me          int
	self, other actor
}

func (r selfRollout) ActState(s *State, rng *RNG) Action {
	if s.current() == r.me {
		return r.self.ActState(s, rng)
	}
	return r.other.ActState(s, rng)
}

// HeuristicSlack is the probability ModelSeats leaves a seat modelled as
// the heuristic to play another card (any legal one, uniformly).
const HeuristicSlack = 0.05

// Prior scores the cards of the seat to act in s from that seat's view only
// (its observation), for example a trained policy's logits. out has one
// entry per action; only the legal ones are read.
type Prior interface {
	Scores(s *State, out *[NumActions]float32)
}

func (b SearchBot) worlds() int {
	if b.Worlds <= 0 {
		return 32
	}
	return b.Worlds
}

// Act implements env.Bot.
func (b SearchBot) Act(s env.State, rng *RNG) int { return b.ActState(stateOf(s), rng) }

// ActState implements StateBot: the legal card with the highest Scores
// (the first of equals).
func (b SearchBot) ActState(s *State, rng *RNG) Action {
	var legalBuf [HandSize]Action
	legal := s.AppendLegalActions(legalBuf[:0])
	if len(legal) == 1 {
		return legal[0]
	}
	var sc [HandSize]float64
	b.Scores(s, rng, legal, sc[:len(legal)])
	best, bestA := math.Inf(-1), legal[0]
	for i, a := range legal {
		if sc[i] > best {
			best, bestA = sc[i], a
		}
	}
	return bestA
}

// Scores writes to out[i] the score the bot chooses legal[i] by, so that
// ActState plays the first legal card of the highest score: its Values
// plus PriorWeight times the Prior's score, and with Focus the Focus best
// of those looked at again in FocusWorlds more worlds (their mean over
// both passes plus the same prior). A card outside that second look
// scores its first pass, but never as much as the lowest card inside it.
func (b SearchBot) Scores(s *State, rng *RNG, legal []Action, out []float64) {
	q := out[:len(legal)]
	b.Values(s, rng, legal, q)
	var vals, bonus [HandSize]float64
	copy(vals[:], q)
	if b.Prior != nil {
		var pr [NumActions]float32
		b.Prior.Scores(s, &pr)
		for i, a := range legal {
			bonus[i] = b.PriorWeight * float64(pr[a])
			q[i] = vals[i] + bonus[i]
		}
	}
	if b.Focus <= 0 || b.FocusWorlds <= 0 || len(legal) <= b.Focus {
		return
	}
	// keep the Focus best by score; order the kept ones as in legal
	var idx [HandSize]int
	for i := range legal {
		idx[i] = i
	}
	ids := idx[:len(legal)]
	sort.SliceStable(ids, func(x, y int) bool { return q[ids[x]] > q[ids[y]] })
	kept := ids[:b.Focus]
	sort.Ints(kept)
	var sub [HandSize]Action
	var q2 [HandSize]float64
	for j, i := range kept {
		sub[j] = legal[i]
	}
	more := b
	more.Worlds = b.FocusWorlds
	more.Values(s, rng, sub[:len(kept)], q2[:len(kept)])
	w1, w2 := float64(b.worlds()), float64(b.FocusWorlds)
	low := math.Inf(1)
	var in [HandSize]bool
	for j, i := range kept {
		q[i] = (w1*vals[i]+w2*q2[j])/(w1+w2) + bonus[i]
		low = min(low, q[i])
		in[i] = true
	}
	below := math.Nextafter(low, math.Inf(-1))
	for i := range legal {
		if !in[i] {
			q[i] = min(q[i], below)
		}
	}
}

// Values estimates, for each of the legal actions of the seat to act, the
// mean over the bot's worlds of that seat's deal points minus the mean of
// the others' at the end of the deal, when it plays legal[i] and Rollout
// plays everyone afterwards. q[i] receives the value of legal[i]. Only what
// the acting seat knows enters: the worlds resample every hidden hand.
// It draws Worlds numbers from rng (more with Infer or ModelSeats: the
// candidate worlds of InferPool and the resampling).
func (b SearchBot) Values(s *State, rng *RNG, legal []Action, q []float64) {
	var rollout actor = b.Rollout
	if b.Rollout == nil {
		rollout = HeuristicBot{}
	}
	me := s.current()
	if b.SelfRollout != nil {
		rollout = selfRollout{me: me, self: b.SelfRollout, other: rollout}
	}
	nw := b.worlds()
	seeds := make([]uint64, nw)
	for i := range seeds {
		seeds[i] = rng.Uint64()
	}
	sums := q[:len(legal)]
	clear(sums)
	workers := b.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, nw)
	base := *s // read-only for the workers; the record is not needed
	base.rec = nil
	var kinds [MaxPlayers]seatKind
	if b.ModelSeats {
		kinds = b.seatKinds(s, me)
	}
	if b.Infer != nil || kinds != ([MaxPlayers]seatKind{}) {
		b.inferValues(&base, me, &kinds, rng, seeds, rollout, legal, sums, workers)
		return
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var failed atomic.Pointer[env.PanicError]
	work := func(w int, local []float64) {
		var world State
		var sim State
		for k := w; k < nw; k += workers {
			r := NewRNG(seeds[k], 0)
			world = *base.ResampleFromInfostate(me, &r)
			for i, a := range legal {
				sim = world
				rr := NewRNG(seeds[k], uint64(i)+1)
				local[i] += playOutDeal(&sim, a, rollout, &rr, me)
			}
		}
	}
	if workers == 1 {
		work(0, sums)
	} else {
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// A panic (the rollout bot's) is passed on to the caller's
				// goroutine, where the batch engine catches it; left here it would
				// end the process.
				defer func() {
					if p := recover(); p != nil {
						failed.CompareAndSwap(nil, env.Recovered(p))
					}
				}()
				local := make([]float64, len(legal))
				work(w, local)
				mu.Lock()
				for i := range local {
					sums[i] += local[i]
				}
				mu.Unlock()
			}()
		}
		wg.Wait()
		if p := failed.Load(); p != nil {
			panic(p)
		}
	}
	for i := range sums {
		sums[i] /= float64(nw)
	}
}

// playOutDeal plays a, then rollout for everyone until the deal ends, and
// returns me's deal points minus the mean of the others'.
func playOutDeal(s *State, a Action, rollout actor, rng *RNG, me int) float64 {
	s.apply(a)
	for !s.dealEnded {
		s.apply(rollout.ActState(s, rng))
	}
	p := int(s.b.Players)
	var sum int32
	for seat := range p {
		sum += s.lastDeal[seat]
	}
	return env.ZeroSum(float64(s.lastDeal[me]), float64(sum), p)
}

// inferValues is Values with each world weighted by the likelihood of the
// other seats' plays of this deal in it (SearchBot.Infer, ModelSeats).
func (b SearchBot) inferValues(base *State, me int, kinds *[MaxPlayers]seatKind, rng *RNG, seeds []uint64, rollout actor, legal []Action, q []float64, workers int) {
	if b.ModelSeats {
		rollout = seatRollout{kinds: kinds, other: rollout}
	}
	nw := len(seeds)
	nl := len(legal)
	cand := seeds
	if b.InferPool > nw {
		cand = make([]uint64, b.InferPool)
		copy(cand, seeds)
		for i := nw; i < len(cand); i++ {
			cand[i] = rng.Uint64()
		}
	}
	logw := make([]float64, len(cand))
	parallel(workers, len(cand), func(k int, sc *[NumActions]float32) {
		r := NewRNG(cand[k], 0)
		logw[k] = b.logLikelihood(base.ResampleFromInfostate(me, &r), me, sc, kinds)
	})
	top := math.Inf(-1)
	for _, l := range logw {
		top = max(top, l)
	}
	weight := make([]float64, len(cand))
	total := 0.0
	for k, l := range logw {
		weight[k] = math.Exp(l - top)
		total += weight[k]
	}
	pick := make([]int, nw) // the candidate each world is
	if len(cand) > nw {
		// systematic resampling: nw evenly spaced points on the weights
		u := rng.Float64() * total / float64(nw)
		acc, k := weight[0], 0
		for j := range nw {
			for u > acc && k < len(cand)-1 {
				k++
				acc += weight[k]
			}
			pick[j] = k
			u += total / float64(nw)
		}
		for k := range weight {
			weight[k] = 1
		}
		total = float64(nw)
	} else {
		for j := range pick {
			pick[j] = j
		}
	}
	vals := make([]float64, nw*nl)
	parallel(workers, nw, func(j int, _ *[NumActions]float32) {
		k := pick[j]
		r := NewRNG(cand[k], 0)
		world := base.ResampleFromInfostate(me, &r)
		var sim State
		for i, a := range legal {
			sim = *world
			rr := NewRNG(cand[k]+uint64(j)*0x9e3779b97f4a7c15, uint64(i)+1)
			vals[j*nl+i] = playOutDeal(&sim, a, rollout, &rr, me)
		}
	})
	clear(q)
	for j, k := range pick {
		for i := range nl {
			q[i] += weight[k] * vals[j*nl+i]
		}
	}
	for i := range q {
		q[i] /= total
	}
}

// parallel runs f(k) for k in [0, n) on workers goroutines (each with its
// own scratch scores), passing a panic on to the caller.
func parallel(workers, n int, f func(k int, sc *[NumActions]float32)) {
	workers = min(workers, n)
	if workers <= 1 {
		var sc [NumActions]float32
		for k := range n {
			f(k, &sc)
		}
		return
	}
	var wg sync.WaitGroup
	var failed atomic.Pointer[env.PanicError]
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					failed.CompareAndSwap(nil, env.Recovered(p))
				}
			}()
			var sc [NumActions]float32
			for k := w; k < n; k += workers {
				f(k, &sc)
			}
		}()
	}
	wg.Wait()
	if p := failed.Load(); p != nil {
		panic(p)
	}
}

// seatKind is how ModelSeats models a seat.
type seatKind uint8

const (
	kindUnknown seatKind = iota
	kindHeuristic
)

// seatKinds recognises the seats other than me that play as the heuristic
// (SearchBot.ModelSeats) from the finished deals of the game in s's record:
// each deal is replayed from its dealt hands and every play with a choice
// compared with the heuristic's card.
func (b SearchBot) seatKinds(s *State, me int) (kinds [MaxPlayers]seatKind) {
	r := s.rec
	if r == nil {
		return kinds
	}
	np := int(s.b.Players)
	var choices, agree [MaxPlayers]int
	for di := range r.Deals {
		d := &r.Deals[di]
		if !d.Done {
			continue
		}
		past := *s
		past.rec = nil
		pb := &past.b
		pb.Hands = [MaxPlayers][NumColours]uint32{}
		for seat := range np {
			for _, c := range d.Hands[seat] {
				pb.Hands[seat][c/MaxValue] |= 1 << (c % MaxValue)
			}
		}
		pb.Prizes = [MaxPlayers][NumColours]uint32{}
		pb.Voids = [MaxPlayers]uint8{}
		pb.TrickLen, pb.TricksDone = 0, 0
		pb.Leader = uint8((d.Dealer + 1) % np)
		past.pl.Sync(pb)
		// the last trick is forced, and playing it would end the deal
		for _, pl := range d.Plays[:np*(TricksPerDeal-1)] {
			if seat := int(pl.Seat); seat != me {
				if n := past.NumLegal(); n > 1 {
					choices[seat]++
					if (HeuristicBot{}).ActState(&past, nil) == Action(pl.Card) {
						agree[seat]++
					}
				}
			}
			past.apply(Action(pl.Card))
		}
	}
	for seat := range np {
		if seat != me && choices[seat] >= 8 && agree[seat] == choices[seat] {
			kinds[seat] = kindHeuristic
		}
	}
	return kinds
}

// seatRollout plays the seats recognised as the heuristic by it, the
// others by other.
type seatRollout struct {
	kinds *[MaxPlayers]seatKind
	other actor
}

func (r seatRollout) ActState(s *State, rng *RNG) Action {
	if r.kinds[s.current()] == kindHeuristic {
		return HeuristicBot{}.ActState(s, rng)
	}
	return r.other.ActState(s, rng)
}

// logLikelihood is the log-probability, under b.Infer, of the plays the
// seats other than me made this deal, had they held world's hands: the deal
// is replayed from its start in the world, each seat's hand then being its
// hand now plus the cards it has played since.
func (b SearchBot) logLikelihood(world *State, me int, sc *[NumActions]float32, kinds *[MaxPlayers]seatKind) float64 {
	n := world.numPlays()
	if n == 0 {
		return 0
	}
	past := *world
	past.rec = nil
	pb := &past.b
	for _, pl := range world.plays[:n] {
		pb.Hands[pl.Seat][pl.Card/MaxValue] |= 1 << (pl.Card % MaxValue)
	}
	pb.Prizes = [MaxPlayers][NumColours]uint32{}
	pb.Voids = [MaxPlayers]uint8{}
	pb.TrickLen, pb.TricksDone = 0, 0
	pb.Leader = uint8((int(world.dealer) + 1) % int(pb.Players))
	past.pl.Sync(pb)
	var legalBuf [HandSize]Action
	ll := 0.0
	for _, pl := range world.plays[:n] {
		if seat := int(pl.Seat); seat != me {
			legal := past.AppendLegalActions(legalBuf[:0])
			switch {
			case len(legal) <= 1:
			case kinds[seat] == kindHeuristic:
				p := HeuristicSlack / float64(len(legal))
				if (HeuristicBot{}).ActState(&past, nil) == Action(pl.Card) {
					p += 1 - HeuristicSlack
				}
				ll += math.Log(p)
			case b.Infer != nil:
				ll += b.inferLogProb(&past, Action(pl.Card), legal, sc)
			}
		}
		past.apply(Action(pl.Card))
	}
	return ll
}

// inferLogProb is the log-probability of card among legal in s under Infer.
func (b SearchBot) inferLogProb(s *State, card Action, legal []Action, sc *[NumActions]float32) float64 {
	temp := b.InferTemp
	if temp <= 0 {
		temp = 1
	}
	b.Infer.Scores(s, sc)
	top := math.Inf(-1)
	for _, a := range legal {
		top = max(top, float64(sc[a]))
	}
	sum, played := 0.0, 0.0
	for _, a := range legal {
		e := math.Exp((float64(sc[a]) - top) / temp)
		sum += e
		if a == card {
			played = e
		}
	}
	return math.Log((1-b.InferEps)*played/sum + b.InferEps/float64(len(legal)))
}

// ActionValues implements env.ActionValuer: Scores on the caller's
// goroutine (Workers 1, whatever b.Workers says: a sum over the worlds in
// one order, so a labeller's data does not depend on its parallelism).
// Without a Prior or Focus (the registered search) they are its Values;
// for a guided search ("search:policy:<name>") the scores it chooses by,
// so a labeller's argmax is its choice.
func (b SearchBot) ActionValues(s env.State, rng *RNG, legal []int, dst []float64) {
	b.Workers = 1
	b.Scores(stateOf(s), rng, legal, dst)
}

// WithSamples implements env.Sampler: the search with n worlds a decision.
func (b SearchBot) WithSamples(n int) env.Bot {
	b.Worlds = n
	return b
}
