package timingwheel

import (
	"math"
	"math/big"
	"testing"
	"time"
)

// Every instant lies in [0, never], whatever duration it was made from, so
// the difference of two never overflows: until of any pair is the true
// distance, or zero. (A deadline near MinInt64 once overflowed until and
// put the driver to sleep for 292 years: issue 69.)
func TestInstantArithmeticSaturates(t *testing.T) {
	instants := []instant{0, 1, instant(time.Millisecond), instant(time.Hour), never / 2, never - 1, never}
	durations := []time.Duration{math.MinInt64, math.MinInt64 + 1, -time.Hour, -1, 0, 1, time.Hour, math.MaxInt64 - 1, math.MaxInt64}
	for _, i := range instants {
		for _, d := range durations {
			got := i.add(d)
			sum := new(big.Int).Add(big.NewInt(int64(i)), big.NewInt(int64(d))) // exact
			want := instant(min(max(sum.Int64(), 0), int64(never)))
			if !sum.IsInt64() {
				want = never // above MaxInt64: below MinInt64 cannot come of i >= 0
			}
			if got != want {
				t.Errorf("instant %d .add(%d) = %d, want %d", i, d, got, want)
			}
			for _, now := range instants {
				u := got.until(now)
				switch {
				case got <= now && u != 0:
					t.Errorf("(%d).until(%d) = %v, want 0: it has come", got, now, u)
				case got > now && (u <= 0 || instant(u) != got-now):
					t.Errorf("(%d).until(%d) = %v, want %d", got, now, u, got-now)
				}
			}
		}
	}
}
