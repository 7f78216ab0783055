package envtest

import (
	"runtime"
	"testing"

	"github.com/davidgoliath/dgenv/env"
)

// StateBytes checks a game's env.StateSizer against the heap: states of g
// played to their end (the first legal action each move) hold, on
// average, at most g's StateBytes each, so env.CostOf does not undercount
// a batch of them.
func StateBytes(t *testing.T, g env.Game) {
	t.Helper()
	sz, ok := g.(env.StateSizer)
	if !ok {
		t.Fatalf("%s does not implement env.StateSizer", g.Type().Name)
	}
	const n = 1000
	states := make([]env.State, n)
	buf := make([]int, 0, g.NumDistinctActions())
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range states {
		s := g.NewInitialState(uint64(i))
		for steps := 0; !s.IsTerminal() && steps <= g.MaxGameLength(); steps++ {
			buf = s.AppendLegalActions(buf[:0])
			s.ApplyUnchecked(buf[0])
		}
		states[i] = s
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(states)
	per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
	if per > sz.StateBytes() {
		t.Errorf("%s: a State played to its end holds %d bytes of heap, StateBytes says %d", g.Type().Name, per, sz.StateBytes())
	}
	t.Logf("%s: %d bytes a State, StateBytes %d", g.Type().Name, per, sz.StateBytes())
}
