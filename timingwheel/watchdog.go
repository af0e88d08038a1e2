package timingwheel

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/purgatory-go/purgatory/internal/recovery"
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
// The wheel looks through a watchdog goroutine that samples the executor
// once a second while callbacks are running or queued, and exits once none
// are: a timer's arming and stopping read no clock for it.
const StuckAfter = 5 * time.Second

const (
	watchEvery = time.Second // the watchdog's sampling period
	logEvery   = time.Minute // at most one stuck line per wheel this often
)

// watch starts the watchdog if it is not running. It is called after each
// hand-off to the executor: one atomic load when the watchdog runs.
func (tw *TimingWheel) watch() {
	if !tw.watching.Load() && tw.watching.CompareAndSwap(false, true) {
		go tw.watchdog()
	}
}

// watchdog samples the executor every watchEvery until it is idle. Once the
// wheel is stopped it waits on the in-flight count instead of its timer, so
// that it exits as soon as the last callback returns.
func (tw *TimingWheel) watchdog() {
	tick := time.NewTimer(watchEvery)
	defer tick.Stop()
	quit := tw.quit
	var s stuck
	for {
		if quit != nil {
			select {
			case <-tick.C:
				tick.Reset(watchEvery)
			case <-quit:
				quit = nil
			}
		}
		if quit == nil {
			ctx, cancel := context.WithTimeout(context.Background(), watchEvery)
			err := tw.inflight.Wait(ctx)
			cancel()
			if err == nil {
				tw.watching.Store(false)
				return
			}
		}
		l := tw.exec.load(false)
		if l.busy == 0 && l.queued == 0 {
			if tw.unwatch() {
				return
			}
			continue
		}
		if s.look(l, tw.now()) {
			tw.logStuck(s.since)
		}
	}
}

// unwatch lets the watchdog exit: it reports whether the executor is still
// idle once watching is cleared (a hand-off after that starts a new
// watchdog), or whether another watchdog has started.
func (tw *TimingWheel) unwatch() bool {
	tw.watching.Store(false)
	if l := tw.exec.load(false); l.busy == 0 && l.queued == 0 {
		return true
	}
	return !tw.watching.CompareAndSwap(false, true)
}

// stuck is what the watchdog remembers between samples.
type stuck struct {
	since    instant // the first sample of this spell with every worker busy; 0 if none
	finished int64   // the executor's finished count at since
	logged   instant // when it last logged; 0 if never
}

// look takes one sample and reports whether to log: every worker has been
// busy, with no callback returning, for StuckAfter, and nothing was logged in
// the last logEvery.
func (s *stuck) look(l load, now instant) bool {
	switch {
	case l.busy < l.capacity:
		s.since = 0
		return false
	case s.since == 0 || l.finished != s.finished:
		s.since, s.finished = now, l.finished
		return false
	case time.Duration(now-s.since) < StuckAfter:
		return false
	case s.logged != 0 && time.Duration(now-s.logged) < logEvery:
		return false
	}
	s.logged = now
	return true
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
