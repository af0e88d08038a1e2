package main

import (
	"encoding/binary"
	"hash/crc64"
	"strconv"
)

// Redis 7.0's serialization of one value, as DUMP writes it and RESTORE
// reads it (rdb.c, cluster.c's createDumpPayload and verifyDumpPayload):
//
//	type byte | the value | RDB version, 2 bytes little-endian | CRC64, 8 bytes little-endian
//
// The CRC64 is Jones's (reflected, initial value and final xor 0) over every
// byte before it. This file holds the framing and RDB's two primitives, a
// length and a string; listpack.go and lzf.go hold the rest.

// The value types served: a string, and a list as Redis 7.0 writes it (a
// quicklist of listpacks) or as Redis before 3.2 did (a linked list of
// strings). The ziplist encodings of Redis 3.2 to 6.2 (types 10 and 14) are
// not read: RESTORE answers them "Bad data format" (README).
const (
	rdbTypeString     = 0
	rdbTypeList       = 1
	rdbTypeQuicklist2 = 18
	rdbVersion        = 10 // Redis 7.0's
)

// A quicklist node's container: a listpack of elements, or one element.
const (
	containerPlain  = 1
	containerPacked = 2
)

// crcJones is crc-64-jones's table. hash/crc64 takes the reversed
// polynomial and complements the register on the way in and out, which
// crc64Jones undoes.
var crcJones = crc64.MakeTable(0x95ac9329ac4bc9b5)

func crc64Jones(p []byte) uint64 { return ^crc64.Update(^uint64(0), crcJones, p) }

// sealPayload appends the payload's footer to a serialized value.
func sealPayload(p []byte) []byte {
	p = binary.LittleEndian.AppendUint16(p, rdbVersion)
	return binary.LittleEndian.AppendUint64(p, crc64Jones(p))
}

// payloadBody returns the serialized value inside a payload, or false if
// the payload is too short, names a later RDB version, or fails its
// checksum: what RESTORE answers "DUMP payload version or checksum are
// wrong" (verifyDumpPayload).
func payloadBody(p []byte) ([]byte, bool) {
	if len(p) < 10 {
		return nil, false
	}
	footer := p[len(p)-10:]
	if binary.LittleEndian.Uint16(footer) > rdbVersion {
		return nil, false
	}
	if binary.LittleEndian.Uint64(footer[2:]) != crc64Jones(p[:len(p)-8]) {
		return nil, false
	}
	return p[:len(p)-10], true
}

// appendRDBLen appends RDB's length: 6 bits, 14 bits, or a marker byte and
// 32 or 64 bits big-endian.
func appendRDBLen(p []byte, n uint64) []byte {
	switch {
	case n < 1<<6:
		return append(p, byte(n))
	case n < 1<<14:
		return append(p, byte(n>>8)|0x40, byte(n))
	case n <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(p, 0x80), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(p, 0x81), n)
}

// appendRDBString appends a string as rdbSaveRawString does without
// compression: a short decimal integer as 1, 2 or 4 bytes, anything else
// as its length and its bytes.
func appendRDBString(p, s []byte) []byte {
	if len(s) <= 11 {
		if v, ok := canonicalInt(s); ok {
			switch {
			case v == int64(int8(v)):
				return append(p, 0xc0, byte(v))
			case v == int64(int16(v)):
				return binary.LittleEndian.AppendUint16(append(p, 0xc1), uint16(v))
			case v == int64(int32(v)):
				return binary.LittleEndian.AppendUint32(append(p, 0xc2), uint32(v))
			}
		}
	}
	return append(appendRDBLen(p, uint64(len(s))), s...)
}

// canonicalInt parses s if it is the decimal form Redis writes of an int64
// (string2ll): parseInt's, less "-0".
func canonicalInt(s []byte) (int64, bool) {
	if string(s) == "-0" {
		return 0, false
	}
	return parseInt(s)
}

// rdbReader reads a serialized value. Every read checks what is left, so a
// length that claims more than the payload holds fails before anything is
// allocated for it.
type rdbReader struct {
	p   []byte
	bad bool // a read failed: the payload is not a value
}

func (r *rdbReader) bytes(n uint64) []byte {
	if r.bad || n > uint64(len(r.p)) {
		r.bad = true
		return nil
	}
	b := r.p[:n:n]
	r.p = r.p[n:]
	return b
}

func (r *rdbReader) byte() byte {
	if b := r.bytes(1); b != nil {
		return b[0]
	}
	return 0
}

// length reads RDB's length, or the 6-bit kind of a special string
// encoding (encoded true).
func (r *rdbReader) length() (n uint64, encoded bool) {
	b := r.byte()
	switch b >> 6 {
	case 0:
		return uint64(b), false
	case 1:
		return uint64(b&0x3f)<<8 | uint64(r.byte()), false
	case 3:
		return uint64(b & 0x3f), true
	}
	switch b {
	case 0x80:
		if p := r.bytes(4); p != nil {
			return uint64(binary.BigEndian.Uint32(p)), false
		}
	case 0x81:
		if p := r.bytes(8); p != nil {
			return binary.BigEndian.Uint64(p), false
		}
	default:
		r.bad = true
	}
	return 0, false
}

// count reads a length that is not a string's. Redis reads a special
// encoding's marker there as a 6-bit length (rdbLoadLen), and so does this.
func (r *rdbReader) count() uint64 {
	n, _ := r.length()
	return n
}

// string reads a string in any of RDB's encodings: its bytes, an integer
// (as its decimal form), or an LZF-compressed blob.
func (r *rdbReader) string() []byte {
	n, encoded := r.length()
	if !encoded {
		return r.bytes(n)
	}
	switch n {
	case 0:
		return strconv.AppendInt(nil, int64(int8(r.byte())), 10)
	case 1:
		if p := r.bytes(2); p != nil {
			return strconv.AppendInt(nil, int64(int16(binary.LittleEndian.Uint16(p))), 10)
		}
	case 2:
		if p := r.bytes(4); p != nil {
			return strconv.AppendInt(nil, int64(int32(binary.LittleEndian.Uint32(p))), 10)
		}
	case 3:
		clen, size := r.count(), r.count()
		out, ok := lzfDecompress(r.bytes(clen), size)
		if ok && !r.bad {
			return out
		}
	}
	r.bad = true
	return nil
}
