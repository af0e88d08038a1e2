package main

import (
	"time"
)

// The in-sync replicas, as Kafka keeps them (Partition.maybeShrinkIsr and
// maybeExpandIsr). A follower is in sync while it keeps up: its
// lastCaughtUp is the last time it held everything the leader held, either
// at its fetch or at its previous one (so that a follower a steady stream of
// appends keeps one batch behind still counts). One that has not caught up
// for Config.ReplicaLagMax (Kafka's replica.lag.time.max.ms, 30 s) leaves the
// ISR, checked every half of that, and the high watermark no longer waits for
// it; it comes back once it holds everything below the high watermark. The
// leader is always in sync. An acks=all produce needs Config.MinInsyncReplicas
// in sync (Kafka's min.insync.replicas): fewer when it comes, and it is
// refused NOT_ENOUGH_REPLICAS with nothing appended; fewer once its records
// are replicated to the ISR, and it is answered NOT_ENOUGH_REPLICAS_AFTER_APPEND.

// follower is one follower's standing in a partition's ISR. Guarded by the
// partition's mu.
type follower struct {
	inSync        bool
	caughtUp      time.Time // Kafka's lastCaughtUpTimeMs
	lastFetchLeo  int64     // the leader's leo at the follower's previous fetch
	lastFetchTime time.Time
}

// followerAt records that follower f (1 to R-1) holds everything before
// offset, as its fetch from offset at now says: how far it is, whether it is
// caught up, and whether it is back in the ISR. It reports whether the high
// watermark moved, and whether f rejoined the ISR.
func (l *partitionLog) followerAt(f int, offset int64, now time.Time) (advanced, rejoined bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	leo := l.leo()
	l.followers[f-1] = max(l.followers[f-1], min(offset, leo))
	r := &l.isr[f-1]
	switch {
	case offset >= leo:
		r.caughtUp = now
	case offset >= r.lastFetchLeo && !r.lastFetchTime.IsZero():
		r.caughtUp = r.lastFetchTime
	}
	r.lastFetchLeo, r.lastFetchTime = leo, now
	if !r.inSync && l.followers[f-1] >= l.hw {
		r.inSync, r.caughtUp, rejoined = true, now, true
	}
	return l.updateHW(), rejoined
}

// shrinkISR takes out of the ISR each follower that has not caught up for
// lagMax, and reports which it took out and whether the high watermark moved.
func (l *partitionLog) shrinkISR(now time.Time, lagMax time.Duration) (out []int, advanced bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range l.isr {
		if r := &l.isr[i]; r.inSync && now.Sub(r.caughtUp) > lagMax {
			r.inSync = false
			out = append(out, i+1)
		}
	}
	if len(out) == 0 {
		return nil, false
	}
	return out, l.updateHW()
}

// updateHW sets the high watermark to what every in-sync replica holds, and
// reports whether it moved. It never moves back. The caller holds mu.
func (l *partitionLog) updateHW() bool {
	hw := l.leo()
	for i, r := range l.isr {
		if r.inSync {
			hw = min(hw, l.followers[i])
		}
	}
	if hw > l.hw {
		l.hw = hw
		return true
	}
	return false
}

// inSyncReplicas returns the size of the ISR, the leader included.
func (l *partitionLog) inSyncReplicas() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 1
	for _, r := range l.isr {
		if r.inSync {
			n++
		}
	}
	return n
}

// replicas returns the partition's replicas and its ISR as Metadata lists
// them: node 0 is the leader, 1 to R-1 its followers.
func (l *partitionLog) replicas() (all, isr []int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	all, isr = []int32{0}, []int32{0}
	for i, r := range l.isr {
		all = append(all, int32(i+1))
		if r.inSync {
			isr = append(isr, int32(i+1))
		}
	}
	return all, isr
}

// shrinkISRs is the ISR expiration task, run every half of
// Config.ReplicaLagMax on the broker's wheel.
func (b *Broker) shrinkISRs() {
	now := time.Now()
	for _, l := range b.allPartitions() {
		out, advanced := l.shrinkISR(now, b.cfg.ReplicaLagMax)
		if len(out) > 0 {
			b.cfg.Logf("kafka: %v: followers %v left the ISR: not caught up for %v", l, out, b.cfg.ReplicaLagMax)
		}
		if advanced {
			b.highWatermarkMoved(l)
		}
	}
}
