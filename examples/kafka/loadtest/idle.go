package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// runIdle parks fetches fetches, one per partition of the topic idle, over
// conns connections, each asking again when answered (at its MaxWait: nothing
// is produced), and measures the broker's CPU over d once they are parked.
// A Kafka broker serves one request per connection at a time (kfake does
// too), so a connection per fetch is what parks them all at once, as that
// many consumers would.
func runIdle(s *server, fetches, conns int, maxWait, d time.Duration) (map[string]float64, error) {
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, conns)
	answered := make([]int, conns)
	for c := range conns {
		nc, err := net.Dial("tcp", s.addr)
		if err != nil {
			return nil, err
		}
		defer nc.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- park(nc, c, conns, fetches, maxWait, stop, &answered[c])
		}()
	}
	time.Sleep(time.Second) // all parked
	cpu0, err := s.cpu()
	if err != nil {
		return nil, err
	}
	time.Sleep(d)
	cpu1, err := s.cpu()
	if err != nil {
		return nil, err
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return nil, err
		}
	}
	total := 0
	for _, n := range answered {
		total += n
	}
	return map[string]float64{
		"idle_cpu_percent_of_a_core": 100 * float64(cpu1-cpu0) / float64(d),
		"idle_fetches_answered":      float64(total),
	}, nil
}

// park keeps the connection's share of the fetches parked: partition p goes
// on connection p%conns. It returns when stop is closed and every fetch sent
// has been answered.
func park(nc net.Conn, c, conns, fetches int, maxWait time.Duration, stop <-chan struct{}, answered *int) error {
	var mine []int32
	for p := c; p < fetches; p += conns {
		mine = append(mine, int32(p))
	}
	w := bufio.NewWriter(nc)
	send := func(p int32, corr int32) error {
		_, err := w.Write(fetchFrame("idle", p, 0, maxWait, corr))
		return err
	}
	for _, p := range mine {
		if err := send(p, p); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	r := bufio.NewReader(nc)
	outstanding := len(mine)
	for outstanding > 0 {
		var size [4]byte
		if _, err := io.ReadFull(r, size[:]); err != nil {
			return fmt.Errorf("idle fetch: %w", err)
		}
		body := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(r, body); err != nil {
			return err
		}
		corr := int32(binary.BigEndian.Uint32(body))
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = 11
		if err := resp.ReadFrom(body[4:]); err != nil {
			return err
		}
		if e := resp.Topics[0].Partitions[0].ErrorCode; e != 0 {
			return fmt.Errorf("idle fetch of partition %d: error %d", corr, e)
		}
		*answered++
		outstanding--
		select {
		case <-stop:
			continue
		default:
		}
		if err := send(corr, corr); err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return err
		}
		outstanding++
	}
	return nil
}

// fetchFrame is a consumer's fetch of one partition from offset, framed:
// MinBytes 1, no fetch session, no client id.
func fetchFrame(topic string, partition int32, offset int64, maxWait time.Duration, corr int32) []byte {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID = 11, -1
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = int32(maxWait/time.Millisecond), 1, 1<<20
	req.SessionEpoch = -1 // no fetch session: a full request each time
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = partition, offset, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	buf := []byte{0, 0, 0, 0}
	buf = binary.BigEndian.AppendUint16(buf, 1)
	buf = binary.BigEndian.AppendUint16(buf, 11)
	buf = binary.BigEndian.AppendUint32(buf, uint32(corr))
	buf = binary.BigEndian.AppendUint16(buf, 0xffff) // no client id
	buf = req.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	return buf
}

// readFetch reads one fetch response (v11) from r.
func readFetch(r *bufio.Reader) (*kmsg.FetchResponse, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 11
	if err := resp.ReadFrom(body[4:]); err != nil {
		return nil, err
	}
	return resp, nil
}
