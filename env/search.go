package env

import (
	"github.com/davidgoliath/dgenv/env/spiel"

	"math"
	"runtime"
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
type SearchBot struct {
	Worlds  int // determinizations per move (budget); 0 means 32
	Rollout Bot // plays the rest of the deal; nil means HeuristicBot
	Workers int // goroutines per move; 0 means GOMAXPROCS, 1 means none
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
	sums := make([]float64, len(legal))
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
	best, bestA := math.Inf(-1), legal[0]
	for i, a := range legal {
		if sums[i] > best {
			best, bestA = sums[i], a
		}
	}
	return bestA
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
