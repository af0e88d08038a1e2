package timingwheel

import (
	"fmt"
	"maps"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/purgatory-go/purgatory/internal/recovery"
	"github.com/purgatory-go/purgatory/internal/stuck"
)

// StuckAfter is how long every worker of the executor may stay inside
// callbacks, with none of them returning, before the wheel logs it (at level
// Warn, to [WithLogger]'s logger, at most once a minute per wheel), naming
// the callbacks that run and how long the queued ones have waited. Callbacks
// must not block: while every worker is inside one, no other timer of the
// wheel fires. Five seconds is far beyond any callback that only hands work
// on (they take microseconds), and well inside the 30 s or so that a service
// is usually given to shut down, so the line is there before anyone has to
// wonder. [Stats] shows the same at any moment: Busy, Queued, OldestQueued.
//
// The wheel samples its executor once a second while callbacks run or wait,
// and not at all otherwise (internal/stuck): a timer's arming and stopping
// read no clock for it.
const StuckAfter = stuck.After

// look is the wheel's sample of its executor (stuck.Sampler): it logs once
// every worker has been busy for StuckAfter with no callback returning, and
// reports whether any callback runs or waits.
func (tw *TimingWheel) look(now time.Time) (running bool) {
	l := tw.exec.load(false)
	if l.quiet() {
		tw.spell = spell{}
		return false
	}
	if tw.spell.stuck(l, tw.instantOf(now)) && tw.sampler.MayLog(now) {
		tw.logStuck(tw.spell.since)
	}
	return true
}

// quiet reports whether no callback runs or waits: the sampler's idle.
func (tw *TimingWheel) quiet() bool { return tw.exec.load(false).quiet() }

// spell is what the wheel's look remembers between samples: the current
// spell of every worker busy. Only look touches it, one sample at a time.
type spell struct {
	since    instant // the first sample of this spell with every worker busy; 0 if none
	finished int64   // the executor's finished count at since
}

// stuck takes one sample and reports whether every worker has been busy,
// with no callback returning, for StuckAfter.
func (s *spell) stuck(l load, now instant) bool {
	switch {
	case l.busy < l.capacity:
		s.since = 0
		return false
	case s.since == 0 || l.finished != s.finished:
		s.since, s.finished = now, l.finished
		return false
	}
	return time.Duration(now-s.since) >= StuckAfter
}

// logStuck writes the stuck line, naming the callbacks that run.
func (tw *TimingWheel) logStuck(since instant) {
	l := tw.exec.load(true)
	now := tw.now()
	var oldest time.Duration
	if l.queued > 0 {
		oldest = time.Duration(now - l.head)
	}
	held := time.Duration(now - since).Truncate(time.Second)
	who := fmt.Sprintf("all %d callback workers have been inside callbacks for %v with none returning", l.capacity, held)
	if tw.inline {
		who = fmt.Sprintf("a callback has run on the driver (InlineExecutor) for %v", held)
	}
	recovery.Logger(tw.logger).Warn("timingwheel: "+who+"; no other timer of this wheel fires until one returns. "+
		"Callbacks must not block: hand slow work to a goroutine of your own",
		"running", names(l.running), "queued", l.queued, "oldest_queued_late", oldest)
}

// names describes handlers for the log: each function's or type's name,
// with how many run, most frequent first (at most five).
func names(hs []Handler) string {
	count := map[string]int{}
	for _, h := range hs {
		count[handlerName(h)]++
	}
	keys := slices.SortedFunc(maps.Keys(count), func(a, b string) int {
		if count[a] != count[b] {
			return count[b] - count[a]
		}
		return strings.Compare(a, b)
	})
	var b strings.Builder
	for i, k := range keys {
		if i == 5 {
			fmt.Fprintf(&b, ", and %d more", len(keys)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d× %s", count[k], k)
	}
	return b.String()
}

// handlerName is a HandlerFunc's function name, or another Handler's type.
func handlerName(h Handler) string {
	if f, ok := h.(HandlerFunc); ok {
		if fn := runtime.FuncForPC(reflect.ValueOf(f).Pointer()); fn != nil {
			return fn.Name()
		}
	}
	return fmt.Sprintf("%T", h)
}
