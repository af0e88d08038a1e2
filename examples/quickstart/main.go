// Command quickstart schedules a batch of request timeouts on a timing wheel,
// cancels the ones whose "response" arrives first, and reports what fired, what
// was stopped and how late the fired ones were (never early).
package main

import (
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/purgatory-go/purgatory/timingwheel"
)

func main() {
	n := flag.Int("n", 100_000, "number of timers")
	maxDelay := flag.Duration("max-delay", time.Second, "delays are uniform in [1ms, max-delay)")
	answered := flag.Float64("answered", 0.5, "share of requests answered (timer stopped) before their timeout")
	flag.Parse()
	if err := run(*n, *maxDelay, *answered); err != nil {
		log.Print(err)
		os.Exit(1)
	}
}

func run(n int, maxDelay time.Duration, answered float64) error {
	if n < 1 || maxDelay <= time.Millisecond || answered < 0 || answered > 1 {
		return fmt.Errorf("quickstart: need n >= 1, max-delay > 1ms and 0 <= answered <= 1")
	}
	tw, err := timingwheel.New()
	if err != nil {
		return err
	}
	defer tw.Stop()

	var fired, early atomic.Int64
	var worst atomic.Int64
	var wg sync.WaitGroup
	timers := make([]*timingwheel.Timer, n)
	begin := time.Now()
	for i := range timers {
		d := time.Millisecond + rand.N(maxDelay-time.Millisecond)
		at := time.Now()
		wg.Add(1)
		timers[i] = tw.AfterFunc(d, func() {
			defer wg.Done()
			late := time.Since(at) - d
			if late < 0 {
				early.Add(1)
			}
			for w := worst.Load(); int64(late) > w && !worst.CompareAndSwap(w, int64(late)); w = worst.Load() {
			}
			fired.Add(1)
		})
	}
	scheduled := time.Since(begin)

	stopped := 0
	for _, t := range timers[:int(float64(n)*answered)] {
		if t.Stop() {
			stopped++
			wg.Done()
		}
	}
	fmt.Printf("scheduled %d timers in %v (%.0f ns each), %d pending\n",
		n, scheduled.Round(time.Millisecond), float64(scheduled.Nanoseconds())/float64(n), tw.Len())
	wg.Wait()
	fmt.Printf("stopped %d before their deadline, fired %d, early %d, latest %v after its deadline\n",
		stopped, fired.Load(), early.Load(), time.Duration(worst.Load()).Round(time.Microsecond))
	if int64(stopped)+fired.Load() != int64(n) || early.Load() != 0 {
		return fmt.Errorf("quickstart: accounting failed: %d stopped + %d fired != %d, or %d early",
			stopped, fired.Load(), n, early.Load())
	}
	return nil
}
