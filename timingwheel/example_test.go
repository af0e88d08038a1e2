package timingwheel_test

import (
	"fmt"
	"time"

	"github.com/purgatory-go/purgatory/timingwheel"
)

func Example() {
	tw, err := timingwheel.New()
	if err != nil {
		panic(err)
	}
	defer tw.Stop()

	fired := make(chan string)
	timeout := tw.AfterFunc(time.Minute, func() { fired <- "timeout" })
	tw.AfterFunc(10*time.Millisecond, func() { fired <- "retry" })
	fmt.Println(<-fired) // the retry, 10 ms in

	if timeout.Stop() { // the response arrived in time
		fmt.Println("timeout stopped; pending:", tw.Len())
	}
	// Output:
	// retry
	// timeout stopped; pending: 0
}

func ExampleTimingWheel_ScheduleFunc() {
	tw, err := timingwheel.New()
	if err != nil {
		panic(err)
	}
	defer tw.Stop()

	runs := make(chan int, 3)
	n := 0
	t := tw.ScheduleFunc(timingwheel.Every(5*time.Millisecond), func() { n++; runs <- n }) // runs never overlap
	for range 3 {
		fmt.Println("run", <-runs)
	}
	t.Stop()
	// Output:
	// run 1
	// run 2
	// run 3
}

func ExampleTimingWheel_AdvanceClock() {
	// Drive the wheel from your own loop instead of a driver goroutine, as
	// Kafka's reaper does; callbacks run inline here.
	tw, err := timingwheel.New(timingwheel.WithManualClock(), timingwheel.WithExecutor(timingwheel.InlineExecutor()))
	if err != nil {
		panic(err)
	}
	defer tw.Stop()
	tw.AfterFunc(250*time.Millisecond, func() { fmt.Println("due") })
	fmt.Println("nothing yet:", tw.AdvanceClock(0))
	fmt.Println("advanced:", tw.AdvanceClock(time.Second))
	// Output:
	// nothing yet: false
	// due
	// advanced: true
}

func ExampleTimingWheel_Stop() {
	tw, err := timingwheel.New()
	if err != nil {
		panic(err)
	}
	tw.AfterFunc(time.Hour, func() { fmt.Println("flushed on shutdown") })
	for _, f := range tw.Stop() { // pending callbacks are handed back, not dropped
		f()
	}
	// Output:
	// flushed on shutdown
}
