package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"slices"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Record-batch validation, as Kafka's broker makes it before it appends what
// a client produced (UnifiedLog.analyzeAndValidateRecords, LogValidator). A
// produce carries one v2 batch per partition; the batch is checked whole,
// its records included (decompressed first if it is compressed), before any
// of it is stored, so that data one client corrupts never reaches another's
// fetch. Kafka's error for each case:
//
//   - CORRUPT_MESSAGE: the bytes do not hold a batch: short, a length beyond
//     the bytes, a CRC-32C that does not match, an unknown compression codec,
//     or compressed bytes that do not decompress.
//   - MESSAGE_TOO_LARGE: the batch is larger than the broker's limit.
//   - INVALID_RECORD: a batch that is not what a client may write: not magic
//     2, more than one batch, a base offset other than 0, a record count that
//     disagrees with the offset range or with the records found, a control
//     batch, an idempotent batch without a sequence, or a record whose
//     structure is broken or whose offset delta is not its place in the
//     batch. (Kafka rewrites a wrong offset delta; this broker stores batches
//     as they come, so it refuses one.)
//   - INVALID_TIMESTAMP: a batch that claims the broker's LogAppendTime.
//   - INVALID_TXN_STATE: a transactional batch; this broker serves no
//     transactions.
//
// A batch whose max timestamp is not its records' largest has it set, and
// its CRC with it, as Kafka does for CreateTime batches.

// DefaultMaxMessageBytes is Kafka's default message.max.bytes: the largest
// record batch a produce may carry.
const DefaultMaxMessageBytes = 1048588

// maxDecompressed bounds what one batch may decompress to, so that a small
// batch cannot make the broker allocate without end.
const maxDecompressed = 64 << 20

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// invalidBatch is a batch refused, with the Kafka error its produce gets.
type invalidBatch struct {
	err *kerr.Error
	why string
}

func (e *invalidBatch) Error() string { return e.err.Message + ": " + e.why }

func refuse(err *kerr.Error, format string, args ...any) error {
	return &invalidBatch{err, fmt.Sprintf(format, args...)}
}

// errorCode returns the Kafka error code for an error of validateProduce or
// of the append.
func errorCode(err error) int16 {
	var ib *invalidBatch
	switch {
	case errors.As(err, &ib):
		return ib.err.Code
	case errors.Is(err, errOutOfOrder):
		return kerr.OutOfOrderSequenceNumber.Code
	default:
		return kerr.CorruptMessage.Code
	}
}

// validateProduce checks the records a produce carries for one partition and
// returns the batch to append: records itself, or a copy whose max timestamp
// was set. maxBytes is the broker's message size limit.
func validateProduce(records []byte, maxBytes int) ([]byte, error) {
	if err := checkFraming(records, maxBytes); err != nil {
		return nil, err
	}
	attrs := binary.BigEndian.Uint16(records[offAttributes:])
	count := int32(binary.BigEndian.Uint32(records[offRecordCount:]))
	if err := checkHeader(records, attrs, count); err != nil {
		return nil, err
	}
	body := records[batchHeaderLen:]
	if codec := attrs & attrCodec; codec != 0 {
		buf := decompressed.Get().(*[]byte)
		defer decompressed.Put(buf)
		var err error
		if body, err = decompress(*buf, body, codec); err != nil {
			return nil, err
		}
		if cap(body) <= maxKeptDecompressed {
			*buf = body[:0] // what it grew to, for the next batch
		}
	}
	maxDelta, err := checkRecords(body, count)
	if err != nil {
		return nil, err
	}
	first := int64(binary.BigEndian.Uint64(records[offFirstTimestamp:]))
	if max := first + maxDelta; int64(binary.BigEndian.Uint64(records[offMaxTimestamp:])) != max {
		records = append([]byte(nil), records...)
		binary.BigEndian.PutUint64(records[offMaxTimestamp:], uint64(max))
		binary.BigEndian.PutUint32(records[offCRC:], crc32.Checksum(records[offAttributes:], crc32c))
	}
	return records, nil
}

// checkFraming checks that records hold exactly one v2 batch of at most
// maxBytes, whose CRC matches.
func checkFraming(records []byte, maxBytes int) error {
	if len(records) < batchHeaderLen {
		return refuse(kerr.CorruptMessage, "%d bytes, less than a batch header (%d)", len(records), batchHeaderLen)
	}
	n := 12 + int64(int32(binary.BigEndian.Uint32(records[offLength:])))
	switch {
	case n < batchHeaderLen || n > int64(len(records)):
		return refuse(kerr.CorruptMessage, "batch length %d with %d bytes sent", n, len(records))
	case records[offMagic] != 2:
		return refuse(kerr.InvalidRecord, "magic %d; produce v3 and later carry magic 2 only", records[offMagic])
	case n < int64(len(records)):
		return refuse(kerr.InvalidRecord, "more than one batch for a partition")
	case n > int64(maxBytes):
		return refuse(kerr.MessageTooLarge, "a batch of %d bytes, over the limit of %d", n, maxBytes)
	}
	if got, want := crc32.Checksum(records[offAttributes:], crc32c), binary.BigEndian.Uint32(records[offCRC:]); got != want {
		return refuse(kerr.CorruptMessage, "CRC-32C %08x, the batch says %08x", got, want)
	}
	return nil
}

// checkHeader checks the header fields of a batch whose framing is sound:
// what a client may write.
func checkHeader(records []byte, attrs uint16, count int32) error {
	span := int64(int32(binary.BigEndian.Uint32(records[offLastDelta:]))) + 1
	switch {
	case attrs&attrCodec > 4:
		return refuse(kerr.CorruptMessage, "compression codec %d", attrs&attrCodec)
	case batchBase(records) != 0:
		return refuse(kerr.InvalidRecord, "base offset %d; a client's batch starts at 0", batchBase(records))
	case count <= 0:
		return refuse(kerr.InvalidRecord, "record count %d", count)
	case span != int64(count):
		return refuse(kerr.InvalidRecord, "offsets 0 to %d for %d records", span-1, count)
	case attrs&attrControl != 0:
		return refuse(kerr.InvalidRecord, "a control batch; clients may not write them")
	case attrs&attrTransactional != 0:
		return refuse(kerr.InvalidTxnState, "a transactional batch; this broker serves no transactions")
	case attrs&attrLogAppendTime != 0:
		return refuse(kerr.InvalidTimestamp, "the batch claims LogAppendTime, which only the broker sets")
	case int64(binary.BigEndian.Uint64(records[offProducerID:])) >= 0 && int32(binary.BigEndian.Uint32(records[offFirstSequence:])) < 0:
		return refuse(kerr.InvalidRecord, "producer id without a sequence")
	}
	return nil
}

// checkRecords reads count v2 records from body, which they must fill
// exactly, and returns the largest timestamp delta among them.
func checkRecords(body []byte, count int32) (maxDelta int64, err error) {
	r := recordReader{b: body}
	maxDelta = math.MinInt64
	for i := range count {
		size := r.varint()
		if r.bad || size <= 0 || size > int64(len(r.b)) {
			return 0, refuse(kerr.InvalidRecord, "record %d of %d: size %d with %d bytes left", i, count, size, len(r.b))
		}
		rec := recordReader{b: r.b[:size]}
		r.b = r.b[size:]
		rec.bytes(1) // attributes, unused in v2
		delta := rec.varint()
		offset := rec.varint()
		rec.field(-1) // key
		rec.field(-1) // value
		headers := rec.varint()
		for h := int64(0); h < headers && !rec.bad; h++ {
			rec.field(0)  // a header's key: never null
			rec.field(-1) // its value
		}
		switch {
		case rec.bad || headers < 0 || len(rec.b) != 0:
			return 0, refuse(kerr.InvalidRecord, "record %d of %d: its structure does not fill its %d bytes", i, count, size)
		case offset != int64(i):
			return 0, refuse(kerr.InvalidRecord, "record %d has offset delta %d", i, offset)
		}
		maxDelta = max(maxDelta, delta)
	}
	if len(r.b) != 0 {
		return 0, refuse(kerr.InvalidRecord, "%d bytes after the %d records the batch declares", len(r.b), count)
	}
	return maxDelta, nil
}

// recordReader reads the fields of v2 records; bad is set, and stays set,
// once a read runs past the end or a varint is malformed.
type recordReader struct {
	b   []byte
	bad bool
}

func (r *recordReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *recordReader) bytes(n int64) {
	if r.bad || n < 0 || n > int64(len(r.b)) {
		r.bad = true
		return
	}
	r.b = r.b[n:]
}

// field skips a length-prefixed field whose length may be as low as least
// (-1: nullable).
func (r *recordReader) field(least int64) {
	n := r.varint()
	if n < least {
		r.bad = true
	}
	if n > 0 {
		r.bytes(n)
	}
}

// decompress returns a compressed batch's records, at most maxDecompressed
// bytes of them, read into dst's space, or body itself if it is not
// compressed. The decompressors are reused (gzip's and lz4's from pools, one
// zstd decoder for small frames): making one per batch cost more than the
// rest of a small batch's validation.
func decompress(dst, body []byte, codec uint16) ([]byte, error) {
	var out []byte
	var err error
	switch codec {
	case 0:
		return body, nil
	case 1:
		out, err = gunzip(dst, body)
	case 2:
		out, err = unsnappy(dst, body)
	case 3:
		zr := lz4Readers.Get().(*lz4.Reader)
		zr.Reset(bytes.NewReader(body))
		out, err = readAtMost(dst, zr)
		zr.Reset(nil)
		lz4Readers.Put(zr)
	case 4:
		out, err = unzstd(dst, body)
	}
	if err != nil {
		return nil, refuse(kerr.CorruptMessage, "codec %d: %v", codec, err)
	}
	return out, nil
}

// decompressed holds buffers for the records of compressed batches, which
// are decompressed only to be checked: each batch's are read into the last
// one's space. One grown past maxKeptDecompressed is not kept.
var decompressed = sync.Pool{New: func() any { return new([]byte) }}

const maxKeptDecompressed = 1 << 20

var (
	gzipReaders sync.Pool // of *gzip.Reader
	lz4Readers  = sync.Pool{New: func() any { return lz4.NewReader(nil) }}
	// zstdShared is one decoder for the zstd batches of up to zstdSharedMax
	// bytes, window and output: DecodeAll may be called concurrently, each
	// call taking one of its GOMAXPROCS block decoders, and starts no
	// goroutine, so it is never closed. A decoder keeps buffers the size of
	// the largest frame it read (60 MiB in use after a 60 MiB frame,
	// measured, against none once a decoder of its own is closed), hence
	// the bound.
	zstdShared = sync.OnceValues(func() (*zstd.Decoder, error) {
		return zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(zstdSharedMax))
	})
)

const zstdSharedMax = 1 << 20

// unzstd reads a zstd batch with the shared decoder, or, past its bound, with
// a decoder of its own, let go after.
func unzstd(dst, body []byte) ([]byte, error) {
	zd, err := zstdShared()
	if err != nil {
		return nil, err
	}
	out, err := zd.DecodeAll(body, dst[:0])
	if !errors.Is(err, zstd.ErrDecoderSizeExceeded) && !errors.Is(err, zstd.ErrWindowSizeExceeded) {
		return out, err
	}
	zd, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxDecompressed))
	if err != nil {
		return nil, err
	}
	defer zd.Close()
	return zd.DecodeAll(body, dst[:0])
}

func gunzip(dst, body []byte) ([]byte, error) {
	var zr *gzip.Reader
	var err error
	if v := gzipReaders.Get(); v != nil {
		zr = v.(*gzip.Reader)
		err = zr.Reset(bytes.NewReader(body))
	} else {
		zr, err = gzip.NewReader(bytes.NewReader(body))
	}
	if err != nil {
		return nil, err // a reader whose header failed is not reused
	}
	defer gzipReaders.Put(zr)
	return readAtMost(dst, zr)
}

// readAtMost reads r into dst's space, up to one byte more than
// maxDecompressed, which is refused.
func readAtMost(dst []byte, r io.Reader) ([]byte, error) {
	buf := bytes.NewBuffer(dst[:0])
	_, err := buf.ReadFrom(io.LimitReader(r, maxDecompressed+1))
	out := buf.Bytes()
	if err == nil && len(out) > maxDecompressed {
		err = fmt.Errorf("decompresses to more than %d bytes", maxDecompressed)
	}
	return out, err
}

// xerialHeader starts snappy in the Java client's framing: blocks, each
// after its length, behind a 16-byte header. Other clients send one raw
// snappy block.
var xerialHeader = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

func unsnappy(dst, body []byte) ([]byte, error) {
	if !bytes.HasPrefix(body, xerialHeader) {
		return unsnappyBlock(dst[:0], body)
	}
	if len(body) < 16 {
		return nil, errors.New("short xerial header")
	}
	out := dst[:0]
	for rest := body[16:]; len(rest) > 0; {
		if len(rest) < 4 {
			return nil, errors.New("short xerial block length")
		}
		n := int(binary.BigEndian.Uint32(rest))
		if n < 0 || n > len(rest)-4 {
			return nil, errors.New("xerial block past the end")
		}
		var err error
		if out, err = unsnappyBlock(out, rest[4:4+n]); err != nil {
			return nil, err
		}
		rest = rest[4+n:]
	}
	return out, nil
}

// unsnappyBlock appends one raw snappy block to out.
func unsnappyBlock(out, block []byte) ([]byte, error) {
	n, err := s2.DecodedLen(block)
	if err != nil {
		return nil, err
	}
	if n > maxDecompressed-len(out) {
		return nil, fmt.Errorf("decompresses to more than %d bytes", maxDecompressed)
	}
	out = slices.Grow(out, n)
	// Decoded in place: s2 decodes into dst when dst holds the decoded length.
	dec, err := s2.Decode(out[len(out):len(out)+n], block)
	if err != nil {
		return nil, err
	}
	return out[:len(out)+len(dec)], nil
}
