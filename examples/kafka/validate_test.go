package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// encodeRecords encodes n v2 records, each with a key, a value and a header,
// as a producer lays them out before it compresses them.
func encodeRecords(n int) []byte {
	var out []byte
	for i := range n {
		var rec []byte
		rec = append(rec, 0)                          // attributes
		rec = binary.AppendVarint(rec, int64(i*3%7))  // timestamp delta: not in order
		rec = binary.AppendVarint(rec, int64(i))      // offset delta
		rec = appendField(rec, fmt.Sprint("key-", i)) // key
		rec = appendField(rec, fmt.Sprint("value of record ", i, " ", bytes.Repeat([]byte("x"), i%50)))
		rec = binary.AppendVarint(rec, 1) // one header
		rec = appendField(rec, "h")
		rec = binary.AppendVarint(rec, -1) // with a null value
		out = binary.AppendVarint(out, int64(len(rec)))
		out = append(out, rec...)
	}
	return out
}

func appendField(b []byte, s string) []byte {
	return append(binary.AppendVarint(b, int64(len(s))), s...)
}

// makeBatch builds a valid batch of n records compressed with codec, from a
// producer that is not idempotent, as a client sends it.
func makeBatch(t testing.TB, n int, codec kgo.CompressionCodec) []byte {
	t.Helper()
	body := encodeRecords(n)
	var attrs uint16
	if c, err := kgo.DefaultCompressor(codec); err != nil {
		t.Fatal(err)
	} else if c != nil {
		var buf bytes.Buffer
		var typ kgo.CompressionCodecType
		body, typ = c.Compress(&buf, body)
		body, attrs = bytes.Clone(body), uint16(typ)
	}
	now := time.Now().UnixMilli()
	b := make([]byte, batchHeaderLen, batchHeaderLen+len(body))
	binary.BigEndian.PutUint32(b[offLength:], uint32(batchHeaderLen-12+len(body)))
	b[offMagic] = 2
	binary.BigEndian.PutUint16(b[offAttributes:], attrs)
	binary.BigEndian.PutUint32(b[offLastDelta:], uint32(n-1))
	binary.BigEndian.PutUint64(b[offFirstTimestamp:], uint64(now))
	maxDelta := 0
	for i := range n {
		maxDelta = max(maxDelta, i*3%7) // encodeRecords' deltas
	}
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(now+int64(maxDelta)))
	binary.BigEndian.PutUint64(b[offProducerID:], ^uint64(0))
	binary.BigEndian.PutUint16(b[51:], 0xffff) // producer epoch
	binary.BigEndian.PutUint32(b[offFirstSequence:], ^uint32(0))
	binary.BigEndian.PutUint32(b[offRecordCount:], uint32(n))
	b = append(b, body...)
	return reCRC(b)
}

// setLength sets the batch length to the bytes there are, and the CRC.
func setLength(b []byte) []byte {
	binary.BigEndian.PutUint32(b[offLength:], uint32(len(b)-12))
	return reCRC(b)
}

// withMaxTimestamp0 is a copy of b whose max timestamp says 0, CRC mended: a
// batch validation gives back with its records' largest, which it must read
// them for.
func withMaxTimestamp0(b []byte) []byte {
	wrong := bytes.Clone(b)
	binary.BigEndian.PutUint64(wrong[offMaxTimestamp:], 0)
	return reCRC(wrong)
}

// reCRC sets the batch's CRC to match its bytes, as a client that built a
// wrong batch on purpose would.
func reCRC(b []byte) []byte {
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], crc32c))
	return b
}

var codecs = map[string]kgo.CompressionCodec{
	"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
	"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
}

// TestValidateAcceptsWhatClientsSend: a batch of each codec is stored as it
// came; one whose max timestamp is not its records' largest gets it, with
// its CRC, and passes kmsg's reading of it.
func TestValidateAcceptsWhatClientsSend(t *testing.T) {
	for name, codec := range codecs {
		t.Run(name, func(t *testing.T) {
			b := makeBatch(t, 20, codec)
			out, err := validateProduce(b, DefaultMaxMessageBytes)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out, b) {
				t.Fatal("a valid batch was changed")
			}
			out, err = validateProduce(withMaxTimestamp0(b), DefaultMaxMessageBytes)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out, b) {
				t.Fatal("a batch with a wrong max timestamp was not given its records' largest")
			}
			if err := wellFormed(out); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestValidateReusesDecompressors: the decompressors validation reuses (gzip's
// and lz4's pooled readers, the one zstd decoder) read each batch afresh,
// whatever the batch before them left, from several goroutines at once: a
// batch cut short is refused, and the next, whole one is read right (its
// records give it its max timestamp, as in TestValidateAcceptsWhatClientsSend).
func TestValidateReusesDecompressors(t *testing.T) {
	for name, codec := range codecs {
		if name == "none" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			good := makeBatch(t, 20, codec)
			wrong := withMaxTimestamp0(good)
			cut := setLength(bytes.Clone(good[:batchHeaderLen+(len(good)-batchHeaderLen)/2]))
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					for range 8 { // few: lz4 takes some 10 ms a batch under -race
						if _, err := validateProduce(bytes.Clone(cut), DefaultMaxMessageBytes); errorCode(err) != kerr.CorruptMessage.Code {
							t.Errorf("a batch cut short: %v; want CORRUPT_MESSAGE", err)
							return
						}
						out, err := validateProduce(bytes.Clone(wrong), DefaultMaxMessageBytes)
						if err != nil || !bytes.Equal(out, good) {
							t.Errorf("the whole batch after it: %v, stored as given: %t; want its records read", err, bytes.Equal(out, wrong))
							return
						}
					}
				})
			}
			wg.Wait()
		})
	}
}

// TestValidateZstdPastTheSharedDecoder: a zstd batch whose records are more
// than the shared decoder may keep (zstdSharedMax) is refused by that decoder,
// which so keeps no buffer of its size, and read by one of its own: stored.
func TestValidateZstdPastTheSharedDecoder(t *testing.T) {
	big := makeBatch(t, 40_000, kgo.ZstdCompression())
	records, err := decompress(nil, big[batchHeaderLen:], 4)
	if err != nil || len(records) <= zstdSharedMax {
		t.Fatalf("the batch's records: %d bytes, %v; want over %d", len(records), err, zstdSharedMax)
	}
	shared, err := zstdShared()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := shared.DecodeAll(big[batchHeaderLen:], nil); !errors.Is(err, zstd.ErrDecoderSizeExceeded) && !errors.Is(err, zstd.ErrWindowSizeExceeded) {
		t.Fatalf("the shared decoder read a frame of %d bytes: %v; want it refused", len(records), err)
	}
	out, err := validateProduce(big, DefaultMaxMessageBytes)
	if err != nil || !bytes.Equal(out, big) {
		t.Fatalf("validateProduce: %v, stored as given: %t", err, bytes.Equal(out, big))
	}
}

// TestValidateRefusesCorruptBatches: each field of a batch corrupted by hand
// is refused with the error Kafka's broker gives.
func TestValidateRefusesCorruptBatches(t *testing.T) {
	put32 := func(off int, v uint32) func([]byte) []byte {
		return func(b []byte) []byte { binary.BigEndian.PutUint32(b[off:], v); return reCRC(b) }
	}
	put16 := func(off int, v uint16) func([]byte) []byte {
		return func(b []byte) []byte { binary.BigEndian.PutUint16(b[off:], v); return reCRC(b) }
	}
	// recordAt returns the offset in b of record i's length varint.
	recordAt := func(b []byte, i int) int {
		at := batchHeaderLen
		for range i {
			n, w := binary.Varint(b[at:])
			at += w + int(n)
		}
		return at
	}
	cases := []struct {
		name    string
		codec   kgo.CompressionCodec
		corrupt func([]byte) []byte
		want    *kerr.Error
	}{
		{"shorter than a header", kgo.NoCompression(), func(b []byte) []byte { return b[:40] }, kerr.CorruptMessage},
		{"length past the bytes", kgo.NoCompression(), func(b []byte) []byte { return b[:len(b)-1] }, kerr.CorruptMessage},
		{"length under a header", kgo.NoCompression(), put32(offLength, 10), kerr.CorruptMessage},
		{"CRC", kgo.NoCompression(), func(b []byte) []byte { b[len(b)-3] ^= 1; return b }, kerr.CorruptMessage},
		{"CRC of a compressed batch", kgo.ZstdCompression(), func(b []byte) []byte { b[len(b)-3] ^= 1; return b }, kerr.CorruptMessage},
		{"magic 1", kgo.NoCompression(), func(b []byte) []byte { b[offMagic] = 1; return reCRC(b) }, kerr.InvalidRecord},
		{"two batches", kgo.NoCompression(), func(b []byte) []byte { return append(b, b...) }, kerr.InvalidRecord},
		{"base offset", kgo.NoCompression(), func(b []byte) []byte { binary.BigEndian.PutUint64(b, 5); return b }, kerr.InvalidRecord},
		{"record count 2^31-1", kgo.NoCompression(), put32(offRecordCount, 1<<31-1), kerr.InvalidRecord},
		{"record count 0", kgo.NoCompression(), put32(offRecordCount, 0), kerr.InvalidRecord},
		{"last offset delta", kgo.NoCompression(), put32(offLastDelta, 3), kerr.InvalidRecord},
		{"count and delta agree, records fewer", kgo.NoCompression(), func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[offLastDelta:], 20)
			return put32(offRecordCount, 21)(b)
		}, kerr.InvalidRecord},
		{"records cut short", kgo.NoCompression(), func(b []byte) []byte { return setLength(b[:len(b)-5]) }, kerr.InvalidRecord},
		{"bytes after the records", kgo.NoCompression(), func(b []byte) []byte { return setLength(append(b, 0, 0)) }, kerr.InvalidRecord},
		{"a record's size", kgo.NoCompression(), func(b []byte) []byte {
			at := recordAt(b, 3)
			b[at] += 2 // one byte more than the record has (a zigzag varint): it swallows the next one's size
			return reCRC(b)
		}, kerr.InvalidRecord},
		{"a record's offset delta", kgo.NoCompression(), func(b []byte) []byte {
			at := recordAt(b, 4)
			_, w := binary.Varint(b[at:])
			b[at+w+1+1] = byte(binary.AppendVarint(nil, 7)[0]) // after attributes and a one-byte timestamp delta
			return reCRC(b)
		}, kerr.InvalidRecord},
		{"a header's null key", kgo.NoCompression(), func(b []byte) []byte {
			// The last record ends with its one header: key "h" (the
			// varint 1, which is the byte 2, then 'h') and a null value
			// (-1, the byte 1). Make the key null, and its 'h' padding
			// the record's end: nothing else changes size.
			copy(b[len(b)-3:], []byte{1, 1, 1})
			return reCRC(b)
		}, kerr.InvalidRecord},
		{"compression codec 7", kgo.NoCompression(), put16(offAttributes, 7), kerr.CorruptMessage},
		{"gzip bytes that are not gzip", kgo.NoCompression(), put16(offAttributes, 1), kerr.CorruptMessage},
		{"snappy bytes that are not snappy", kgo.NoCompression(), put16(offAttributes, 2), kerr.CorruptMessage},
		{"lz4 bytes that are not lz4", kgo.NoCompression(), put16(offAttributes, 3), kerr.CorruptMessage},
		{"zstd bytes that are not zstd", kgo.NoCompression(), put16(offAttributes, 4), kerr.CorruptMessage},
		{"compressed records fewer than the count", kgo.GzipCompression(), func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[offLastDelta:], 24)
			return put32(offRecordCount, 25)(b)
		}, kerr.InvalidRecord},
		{"control batch", kgo.NoCompression(), put16(offAttributes, attrControl), kerr.InvalidRecord},
		{"transactional", kgo.NoCompression(), put16(offAttributes, attrTransactional), kerr.InvalidTxnState},
		{"LogAppendTime", kgo.NoCompression(), put16(offAttributes, attrLogAppendTime), kerr.InvalidTimestamp},
		{"producer id without a sequence", kgo.NoCompression(), func(b []byte) []byte {
			binary.BigEndian.PutUint64(b[offProducerID:], 5)
			return reCRC(b)
		}, kerr.InvalidRecord},
		{"larger than message.max.bytes", kgo.NoCompression(), func(b []byte) []byte {
			return makeBatch(t, 30_000, kgo.NoCompression())
		}, kerr.MessageTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.corrupt(makeBatch(t, 20, tc.codec))
			_, err := validateProduce(b, DefaultMaxMessageBytes)
			if err == nil {
				t.Fatal("accepted")
			}
			t.Log(err)
			if code := errorCode(err); code != tc.want.Code {
				t.Fatalf("error %d (%v), want %s (%d)", code, err, tc.want.Message, tc.want.Code)
			}
		})
	}
}

// TestCorruptBatchIsNotStored: a produce with a corrupt batch for one
// partition and a good one for another stores the good one only; the
// corrupt partition's log, and what its consumers fetch, stay as they were.
func TestCorruptBatchIsNotStored(t *testing.T) {
	b, addr, _ := startBroker(t, Config{Replicas: 1}, "c:2")
	c := dialRaw(t, addr)
	bad := makeBatch(t, 3, kgo.NoCompression())
	bad[len(bad)-2] ^= 0xff // the CRC no longer matches
	produce := kmsg.NewPtrProduceRequest()
	produce.Version, produce.Acks, produce.TimeoutMillis = 7, -1, 10_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "c"
	for i, records := range [][]byte{bad, makeBatch(t, 3, kgo.SnappyCompression())} {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = int32(i), records
		rt.Partitions = append(rt.Partitions, rp)
	}
	produce.Topics = append(produce.Topics, rt)
	resp, err := c.do(produce)
	if err != nil {
		t.Fatal(err)
	}
	ps := resp.(*kmsg.ProduceResponse).Topics[0].Partitions
	if ps[0].ErrorCode != kerr.CorruptMessage.Code || ps[0].BaseOffset != -1 {
		t.Errorf("corrupt batch: error %d, base offset %d; want CORRUPT_MESSAGE, -1", ps[0].ErrorCode, ps[0].BaseOffset)
	}
	if ps[1].ErrorCode != 0 || ps[1].BaseOffset != 0 {
		t.Errorf("good batch in the same request: error %d, base offset %d; want 0, 0", ps[1].ErrorCode, ps[1].BaseOffset)
	}
	if _, hw, leo := b.partition("c", 0).offsets(); hw != 0 || leo != 0 {
		t.Errorf("the corrupt partition's log: high watermark %d, end %d; want nothing stored", hw, leo)
	}
	if _, hw, leo := b.partition("c", 1).offsets(); hw != 3 || leo != 3 {
		t.Errorf("the good partition's log: high watermark %d, end %d; want its 3 records", hw, leo)
	}
	got, err := c.do(fetchReq("c", 0, 0, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	if p := got.(*kmsg.FetchResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) != 0 {
		t.Errorf("fetch of the corrupt partition: error %d, %d bytes; want nothing", p.ErrorCode, len(p.RecordBatches))
	}
}

// FuzzValidate: whatever the bytes, a batch validateProduce accepts is one
// that kmsg (a second reader, franz-go's) reads as well formed, and a batch
// it refuses gets one of Kafka's errors for a bad batch.
func FuzzValidate(f *testing.F) {
	for _, codec := range codecs {
		f.Add(makeBatch(f, 3, codec))
	}
	b := makeBatch(f, 5, kgo.NoCompression())
	f.Add(b[:len(b)-4])
	flipped := bytes.Clone(b)
	flipped[batchHeaderLen+15] ^= 1 // a byte of a value: the CRC no longer matches
	f.Add(flipped)
	f.Add(reCRC(append(bytes.Clone(b[:batchHeaderLen]), 0)))
	f.Fuzz(func(t *testing.T, records []byte) {
		in := bytes.Clone(records)
		out, err := validateProduce(records, DefaultMaxMessageBytes)
		if !bytes.Equal(in, records) {
			t.Fatal("validateProduce changed its input")
		}
		if err != nil {
			switch errorCode(err) {
			case kerr.CorruptMessage.Code, kerr.InvalidRecord.Code, kerr.MessageTooLarge.Code, kerr.InvalidTxnState.Code, kerr.InvalidTimestamp.Code:
			default:
				t.Fatalf("refused with error %d: %v", errorCode(err), err)
			}
			return
		}
		if err := wellFormed(out); err != nil {
			t.Fatalf("accepted, but: %v", err)
		}
	})
}

// wellFormed checks a stored batch with franz-go's reader, independently of
// validate.go: one v2 batch with a matching CRC-32C, base offset 0, as many
// records as its offsets span, each at its place, that fill the batch
// exactly, and a max timestamp that is the records' largest.
func wellFormed(b []byte) error {
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		return err
	}
	switch {
	case int(12+rb.Length) != len(b):
		return fmt.Errorf("length %d for %d bytes", rb.Length, len(b))
	case rb.Magic != 2:
		return fmt.Errorf("magic %d", rb.Magic)
	case uint32(rb.CRC) != crc32.Checksum(b[offAttributes:], crc32c):
		return fmt.Errorf("CRC")
	case rb.FirstOffset != 0:
		return fmt.Errorf("base offset %d", rb.FirstOffset)
	case rb.NumRecords <= 0 || rb.NumRecords != rb.LastOffsetDelta+1:
		return fmt.Errorf("%d records, last offset delta %d", rb.NumRecords, rb.LastOffsetDelta)
	}
	body, err := kgo.DefaultDecompressor().Decompress(rb.Records, kgo.CompressionCodecType(rb.Attributes&7))
	if err != nil {
		return err
	}
	maxTS := int64(-1 << 63)
	for i := range rb.NumRecords {
		n, w := binary.Varint(body)
		if w <= 0 || n < 0 || int64(len(body)-w) < n {
			return fmt.Errorf("record %d: length %d", i, n)
		}
		var r kmsg.Record
		if err := r.ReadFrom(body[:w+int(n)]); err != nil {
			return fmt.Errorf("record %d: %v", i, err)
		}
		if r.OffsetDelta != i {
			return fmt.Errorf("record %d: offset delta %d", i, r.OffsetDelta)
		}
		maxTS = max(maxTS, rb.FirstTimestamp+r.TimestampDelta64)
		body = body[w+int(n):]
	}
	if len(body) != 0 {
		return fmt.Errorf("%d bytes after the records", len(body))
	}
	if rb.MaxTimestamp != maxTS {
		return fmt.Errorf("max timestamp %d, records' largest %d", rb.MaxTimestamp, maxTS)
	}
	return nil
}

// BenchmarkValidate is what validation costs a produce, per record, for
// batches of 1 and of 100 records as kgo sends them, by codec.
func BenchmarkValidate(b *testing.B) {
	for _, n := range []int{1, 100} {
		for _, name := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
			b.Run(fmt.Sprintf("records=%d/codec=%s", n, name), func(b *testing.B) {
				batch := makeBatch(b, n, codecs[name])
				b.ReportAllocs()
				for b.Loop() {
					if _, err := validateProduce(batch, DefaultMaxMessageBytes); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
			})
		}
	}
}
