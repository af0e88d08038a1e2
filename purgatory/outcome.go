package purgatory

import "iter"

// Outcome is how an operation ended.
type Outcome int32

const (
	Pending     Outcome = iota // not ended yet
	Completed                  // TryComplete returned true
	Forced                     // ForceComplete won
	Expired                    // its Timeout passed first
	ContextDone                // its Context was done first
	Cancelled                  // CancelForKey removed it; OnComplete did not run
	Closed                     // the purgatory was closed first; OnExpiration did not run
	Shed                       // not parked: WithMaxDelayed's bound was reached; OnExpiration did not run
)

// outcomes is the one table of outcomes: each one's name (String, and so the
// metrics label) and its field in Stats (Ended, and the snapshot). Pending
// has no field: it is not an end.
var outcomes = [...]struct {
	name  string
	field func(*Stats) *int64
}{
	Pending:     {"pending", nil},
	Completed:   {"completed", func(s *Stats) *int64 { return &s.Completed }},
	Forced:      {"forced", func(s *Stats) *int64 { return &s.Forced }},
	Expired:     {"expired", func(s *Stats) *int64 { return &s.Expired }},
	ContextDone: {"context_done", func(s *Stats) *int64 { return &s.ContextDone }},
	Cancelled:   {"cancelled", func(s *Stats) *int64 { return &s.Cancelled }},
	Closed:      {"closed", func(s *Stats) *int64 { return &s.Closed }},
	Shed:        {"shed", func(s *Stats) *int64 { return &s.Shed }},
}

// String returns the outcome's name as the metrics label it (completed,
// forced, expired, context_done, cancelled, closed, shed), or pending.
func (o Outcome) String() string {
	if o < 0 || int(o) >= len(outcomes) {
		return "unknown"
	}
	return outcomes[o].name
}

// Outcomes returns the outcomes an operation can end with, in order:
// Completed, Forced, Expired, ContextDone, Cancelled, Closed, Shed. The metrics
// package labels its series with them.
func Outcomes() iter.Seq[Outcome] {
	return func(yield func(Outcome) bool) {
		for o := Pending + 1; int(o) < len(outcomes); o++ {
			if !yield(o) {
				return
			}
		}
	}
}
