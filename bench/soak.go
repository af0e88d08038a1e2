package main

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/purgatory-go/purgatory/purgatory"
)

// soak keeps W5's load on a purgatory for p.duration (default 10 minutes), at
// p.rate requests per second (default 100,000), generating requests as it goes
// instead of in advance, and prints heap, RSS, goroutines and the purgatory's
// counts every minute (more often in short runs). It fails if any request is
// lost or ends twice, or if memory keeps growing.
func soak(p params) error {
	length, rate := p.duration, p.rate
	if length <= 0 {
		length = 10 * time.Minute
	}
	if rate <= 0 {
		rate = 100_000
	}
	every := min(time.Minute, max(length/6, time.Second))

	pg, err := purgatory.New[int]("soak")
	if err != nil {
		return err
	}
	t := newTraffic(lib{pg}, w5Keys, nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t.run(int(float64(rate)*length.Seconds()), length, 9)
	}()

	fmt.Printf("soak: %d requests/s for %v; a line every %v\n", rate, length, every)
	fmt.Printf("%8s %10s %9s %9s %10s %9s %9s %12s %12s %10s\n", "elapsed", "added", "delayed", "watched", "goroutines", "heap MB", "RSS MB", "completed", "expired", "events lag")
	var heaps []float64
	line := func() {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		heap := float64(m.HeapAlloc) / (1 << 20)
		heaps = append(heaps, heap)
		fmt.Printf("%8v %10d %9d %9d %10d %9.1f %9.1f %12d %12d %10v\n", t.elapsed().Round(time.Second), t.added.Load(),
			pg.Delayed(), pg.Watched(), runtime.NumGoroutine(), heap, rssMB(), t.completed.Load(), t.expired.Load(),
			t.eventsLag().Round(time.Millisecond))
	}
	tick := time.NewTicker(every)
	for running := true; running; {
		select {
		case <-tick.C:
			line()
		case <-done:
			running = false
		}
	}
	tick.Stop()
	select { // the last timeouts, if the driver runs behind
	case <-t.allEnded:
	case <-time.After(5 * time.Second):
	}
	line()
	pg.Close()

	total, completed := t.added.Load(), t.completed.Load()
	fmt.Printf("soak: %d added, %d completed (%.1f %%), %d expired, %d ended twice, %d lost\n",
		total, completed, 100*float64(completed)/float64(total), t.expired.Load(), t.twice.Load(), total-t.ended.Load())
	if t.twice.Load() != 0 || t.ended.Load() != total {
		return fmt.Errorf("soak: accounting failed")
	}
	// Flat memory: the heap in the second half stays within 1.5x of the first
	// half's peak (the load is steady, so growth would be a leak).
	if n := len(heaps); n >= 4 {
		firstPeak, secondPeak := 0.0, 0.0
		for i, h := range heaps[:n-1] { // the last line is after the drain
			if i < (n-1)/2 {
				firstPeak = max(firstPeak, h)
			} else {
				secondPeak = max(secondPeak, h)
			}
		}
		if secondPeak > 1.5*firstPeak {
			return fmt.Errorf("soak: heap grew from %.1f MB to %.1f MB under a steady load", firstPeak, secondPeak)
		}
	}
	return nil
}

// rssMB reads the current resident set size from /proc/self/statm.
func rssMB() float64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	fields := bytes.Fields(data)
	if len(fields) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(string(fields[1]), 10, 64)
	if err != nil {
		return 0
	}
	return float64(pages*int64(os.Getpagesize())) / (1 << 20)
}
