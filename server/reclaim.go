package server

import (
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"sync/atomic"
	"time"
)

// Memory given back (issue 18: under create/delete churn the process's
// RSS reached 1.45 times limits.memory_budget, and after every session was
// deleted it stayed at five times its idle size for minutes). Two parts:
// the runtime's soft memory limit is tied to the budget (MemoryLimit, set
// by cmd/dgserver), so garbage from deleted sessions is collected before
// the heap outgrows what the budget admits; and when sessions holding much
// memory end, the server asks the runtime to return it to the OS at once
// (debug.FreeOSMemory, rate-limited), instead of keeping it mapped until a
// later collection and the background scavenger get to it.

// memoryLimitSlack is what MemoryLimit adds to the budget and the
// process's memory at start-up: the runtime, HTTP buffers and answers in
// flight that the budget does not count (docs/api.md, Memory).
const memoryLimitSlack = 64 << 20

// MemoryLimit is the soft memory limit (debug.SetMemoryLimit) for a server
// with this memory budget: the budget, plus the Go memory the process holds
// now (call it once start-up is done: policies loaded), plus a slack for
// what the budget does not count. It is a soft limit: the collector runs
// more often near it; nothing fails at it.
func MemoryLimit(budget int64) int64 {
	return budget + goMemoryInUse() + memoryLimitSlack
}

// goMemoryInUse is the Go runtime's mapped memory not returned to the OS
// (what the soft limit counts).
func goMemoryInUse() int64 {
	s := []rtmetrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	rtmetrics.Read(s)
	if s[0].Value.Kind() != rtmetrics.KindUint64 || s[1].Value.Kind() != rtmetrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}

// reclaimer returns freed memory to the OS once sessions holding at least
// threshold bytes (counted at their worst case) have ended since it last
// did, at most once per interval: the last delete of a burst is always
// followed by a return within interval.
type reclaimer struct {
	threshold int64
	interval  time.Duration
	free      func() // debug.FreeOSMemory; a test's counter
	freed     atomic.Int64
	kick      chan struct{}
}

// reclaimInterval bounds how often memory is returned: each time is a full
// collection (tens of milliseconds of CPU for a heap of gigabytes).
const reclaimInterval = 2 * time.Second

func newReclaimer(budget int64) *reclaimer {
	return &reclaimer{
		// A sixteenth of the budget (128 MiB of the default 2 GiB): small
		// sessions come and go without a collection each.
		threshold: max(budget/16, 16<<20),
		interval:  reclaimInterval,
		free:      debug.FreeOSMemory,
		kick:      make(chan struct{}, 1),
	}
}

// ended counts a session's memory (its worst case) as freed.
func (r *reclaimer) ended(bytes int64) {
	if r.freed.Add(bytes) < r.threshold {
		return
	}
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// run returns memory when kicked, until stop closes.
func (r *reclaimer) run(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-r.kick:
		}
		r.freed.Store(0)
		r.free()
		select {
		case <-stop:
			return
		case <-time.After(r.interval):
		}
	}
}
