package env

import (
	"github.com/davidgoliath/dgenv/env/spiel"

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
	Worlds  int // determinizations per move (budget); 0 means 32
	Rollout Bot // plays the rest of the deal; nil means HeuristicBot
	Workers int // goroutines per move; 0 means GOMAXPROCS, 1 means none
	// Prior, if set, adds PriorWeight * score(card) to each card's mean outcome.
	Prior       Prior
	PriorWeight float64
	// Focus > 0 adds a second stage: the Focus cards with the best score
	// after the first Worlds (mean outcome plus prior) are played out in
	// FocusWorlds more worlds each, and the best of them by its mean over
	// all its worlds (plus prior) is chosen.
	Focus       int
	FocusWorlds int
}

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

// Act implements Bot.
func (b SearchBot) Act(s *State, rng *RNG) Action {
	var legalBuf [HandSize]Action
	legal := s.AppendLegalActions(legalBuf[:0])
	if len(legal) == 1 {
		return legal[0]
	}
	var q [HandSize]float64
	b.Values(s, rng, legal, q[:len(legal)])
	var bonus [HandSize]float64
	if b.Prior != nil {
		var pr [NumActions]float32
		b.Prior.Scores(s, &pr)
		for i, a := range legal {
			bonus[i] = b.PriorWeight * float64(pr[a])
		}
	}
	if b.Focus > 0 && b.FocusWorlds > 0 && len(legal) > b.Focus {
		// keep the Focus best by score; order the kept ones as in legal
		var idx [HandSize]int
		for i := range legal {
			idx[i] = i
		}
		ids := idx[:len(legal)]
		sort.SliceStable(ids, func(x, y int) bool { return q[ids[x]]+bonus[ids[x]] > q[ids[y]]+bonus[ids[y]] })
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
		best, bestA := math.Inf(-1), legal[kept[0]]
		for j, i := range kept {
			if v := (w1*q[i]+w2*q2[j])/(w1+w2) + bonus[i]; v > best {
				best, bestA = v, legal[i]
			}
		}
		return bestA
	}
	best, bestA := math.Inf(-1), legal[0]
	for i, a := range legal {
		if v := q[i] + bonus[i]; v > best {
			best, bestA = v, a
		}
	}
	return bestA
}

// Values estimates, for each of the legal actions of the seat to act, the
// mean over the bot's worlds of that seat's deal points minus the mean of
// the others' at the end of the deal, when it plays legal[i] and Rollout
// plays everyone afterwards. q[i] receives the value of legal[i]. Only what
// the acting seat knows enters: the worlds resample every hidden hand.
// It draws Worlds numbers from rng.
func (b SearchBot) Values(s *State, rng *RNG, legal []Action, q []float64) {
	rollout := b.Rollout
	if rollout == nil {
		rollout = HeuristicBot{}
	}
	me := s.current()
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
	var mu sync.Mutex
	var wg sync.WaitGroup
	var failed atomic.Pointer[PanicError]
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
				// goroutine, where the VecEnv catches it; left here it would
				// end the process.
				defer func() {
					if p := recover(); p != nil {
						failed.CompareAndSwap(nil, Recovered(p))
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
func playOutDeal(s *State, a Action, rollout Bot, rng *RNG, me int) float64 {
	s.apply(a)
	for !s.dealEnded {
		s.apply(rollout.Act(s, rng))
	}
	p := int(s.b.Players)
	var sum int32
	for seat := range p {
		sum += s.lastDeal[seat]
	}
	return spiel.ZeroSum(float64(s.lastDeal[me]), float64(sum), p)
}
