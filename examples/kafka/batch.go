package main

import "encoding/binary"

// The v2 record batch header (Kafka's DefaultRecordBatch), the one table of
// it: each field's offset, big-endian, as this broker reads and writes it.
// The base offset is rewritten by the log when it appends a batch; it and the
// length, the partition leader epoch and the magic byte precede the CRC-32C,
// which covers everything from the attributes on.
const (
	offBaseOffset     = 0  // int64; a client's batch starts at 0
	offLength         = 8  // int32: the bytes after this field
	offMagic          = 16 // int8: 2
	offCRC            = 17 // uint32, CRC-32C of the bytes from offAttributes
	offAttributes     = 21 // int16: the attribute bits below
	offLastDelta      = 23 // int32: last offset - base offset
	offFirstTimestamp = 27 // int64
	offMaxTimestamp   = 35 // int64
	offProducerID     = 43 // int64: -1 if not idempotent
	offFirstSequence  = 53 // int32: -1 if not idempotent
	offRecordCount    = 57 // int32
	batchHeaderLen    = 61 // the records follow
)

// The attribute bits of a v2 batch.
const (
	attrCodec         = 0x07 // 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd
	attrLogAppendTime = 0x08
	attrTransactional = 0x10
	attrControl       = 0x20
)

// batchBase returns a batch's base offset.
func batchBase(data []byte) int64 { return int64(binary.BigEndian.Uint64(data[offBaseOffset:])) }

// batchLast returns the last offset a batch spans.
func batchLast(data []byte) int64 {
	return batchBase(data) + int64(int32(binary.BigEndian.Uint32(data[offLastDelta:])))
}
