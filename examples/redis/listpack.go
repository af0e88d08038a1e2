package main

import (
	"encoding/binary"
	"strconv"
)

// A listpack (Redis 7.0's listpack.c) holds a quicklist node's elements:
//
//	total bytes, 4 bytes LE | count, 2 bytes LE (65535: unknown) | entries | 0xff
//
// Each entry is an encoding, its data, and a back-length: the size of the
// encoding and data, written so that it reads backwards from the entry's
// end, 7 bits a byte. An element that is a canonical decimal int64 is
// stored as an integer of 7, 13, 16, 24, 32 or 64 bits, anything else as a
// string with a 6, 12 or 32-bit length.

const (
	lpHeaderSize   = 6
	lpEnd          = 0xff
	lpCountUnknown = 65535
	// lpNodeBytes is the size a node grows to before DUMP starts the next:
	// list-max-listpack-size's default, -2 (8 KB). An element larger than
	// that has a node to itself.
	lpNodeBytes = 8192
)

// appendQuicklist appends a list as type 18's value: the count of nodes,
// then each node's container and its listpack as an RDB string.
func appendQuicklist(p []byte, l *deque) []byte {
	var nodes [][]byte
	var node []byte // the node being filled, and its count
	count := 0
	for i := range l.len() {
		entry := appendLPEntry(nil, l.at(i))
		if count > 0 && len(node)+len(entry)+1 > lpNodeBytes {
			nodes = append(nodes, sealListpack(node, count))
			node, count = nil, 0
		}
		if node == nil {
			node = make([]byte, lpHeaderSize, lpNodeBytes)
		}
		node = append(node, entry...)
		count++
	}
	if count > 0 {
		nodes = append(nodes, sealListpack(node, count))
	}
	p = appendRDBLen(append(p, rdbTypeQuicklist2), uint64(len(nodes)))
	for _, n := range nodes {
		p = appendRDBString(appendRDBLen(p, containerPacked), n)
	}
	return p
}

// sealListpack writes a node's header and end.
func sealListpack(lp []byte, count int) []byte {
	lp = append(lp, lpEnd)
	binary.LittleEndian.PutUint32(lp, uint32(len(lp)))
	binary.LittleEndian.PutUint16(lp[4:], uint16(min(count, lpCountUnknown)))
	return lp
}

// appendLPEntry appends one element's entry.
func appendLPEntry(lp, s []byte) []byte {
	start := len(lp)
	if v, ok := canonicalInt(s); ok {
		lp = appendLPInt(lp, v)
	} else {
		lp = appendLPString(lp, s)
	}
	return appendBacklen(lp, len(lp)-start)
}

func appendLPInt(lp []byte, v int64) []byte {
	switch {
	case v >= 0 && v <= 127:
		return append(lp, byte(v))
	case v >= -4096 && v <= 4095:
		u := uint16(v) & 0x1fff
		return append(lp, 0xc0|byte(u>>8), byte(u))
	case v == int64(int16(v)):
		return binary.LittleEndian.AppendUint16(append(lp, 0xf1), uint16(v))
	case v >= -1<<23 && v < 1<<23:
		return append(lp, 0xf2, byte(v), byte(v>>8), byte(v>>16))
	case v == int64(int32(v)):
		return binary.LittleEndian.AppendUint32(append(lp, 0xf3), uint32(v))
	}
	return binary.LittleEndian.AppendUint64(append(lp, 0xf4), uint64(v))
}

func appendLPString(lp, s []byte) []byte {
	switch n := len(s); {
	case n < 64:
		lp = append(lp, 0x80|byte(n))
	case n < 4096:
		lp = append(lp, 0xe0|byte(n>>8), byte(n))
	default:
		lp = binary.LittleEndian.AppendUint32(append(lp, 0xf0), uint32(n))
	}
	return append(lp, s...)
}

// lpBacklenSize is how many bytes the back-length of an entry of n bytes
// takes (lpEncodeBacklen's thresholds).
func lpBacklenSize(n int) int {
	switch {
	case n <= 127:
		return 1
	case n < 16383:
		return 2
	case n < 2097151:
		return 3
	case n < 268435455:
		return 4
	}
	return 5
}

// appendBacklen appends n's back-length: most significant 7 bits first,
// every byte but the first flagged 0x80, so that reading backwards each
// flag says another byte follows.
func appendBacklen(lp []byte, n int) []byte {
	size := lpBacklenSize(n)
	for k := size - 1; k >= 0; k-- {
		b := byte(n>>(7*k)) & 127
		if k < size-1 {
			b |= 128
		}
		lp = append(lp, b)
	}
	return lp
}

// lpEntry reads the entry at lp[i], i within the entries: its element, the
// size of its encoding and data, and whether its encoding is one of the
// above and its data lies before the listpack's end byte.
func lpEntry(lp []byte, i int) (elem []byte, size int, ok bool) {
	last := len(lp) - 1 // the end byte
	b := lp[i]
	head, n := 1, 0 // the encoding's bytes; the string's length
	var v int64
	switch {
	case b < 0x80:
		return strconv.AppendInt(nil, int64(b), 10), 1, true
	case b&0xc0 == 0x80:
		n = int(b & 0x3f)
	case b&0xe0 == 0xc0:
		if i+2 > last {
			return nil, 0, false
		}
		u := int64(b&0x1f)<<8 | int64(lp[i+1])
		return strconv.AppendInt(nil, u-(u>>12)<<13, 10), 2, true
	case b&0xf0 == 0xe0:
		if head = 2; i+head > last {
			return nil, 0, false
		}
		n = int(b&0x0f)<<8 | int(lp[i+1])
	case b == 0xf0:
		if head = 5; i+head > last {
			return nil, 0, false
		}
		n = int(binary.LittleEndian.Uint32(lp[i+1:]))
	case b >= 0xf1 && b <= 0xf4:
		width := [...]int{2, 3, 4, 8}[b-0xf1]
		if i+1+width > last {
			return nil, 0, false
		}
		var raw [8]byte
		copy(raw[:], lp[i+1:i+1+width])
		v = int64(binary.LittleEndian.Uint64(raw[:])<<(64-8*width)) >> (64 - 8*width)
		return strconv.AppendInt(nil, v, 10), 1 + width, true
	default:
		return nil, 0, false
	}
	if i+head+n > last {
		return nil, 0, false
	}
	return lp[i+head : i+head+n], head + n, true
}

// readListpack checks a listpack as Redis's deep sanitization does
// (lpValidateIntegrity): its header's size, every entry's encoding and
// back-length, that its first end byte is its last byte, and its header's
// count unless unknown. It returns the elements, or false.
func readListpack(lp []byte) ([][]byte, bool) {
	if len(lp) < lpHeaderSize+1 || int(binary.LittleEndian.Uint32(lp)) != len(lp) || lp[len(lp)-1] != lpEnd {
		return nil, false
	}
	var elems [][]byte
	i := lpHeaderSize
	for lp[i] != lpEnd {
		elem, size, ok := lpEntry(lp, i)
		end := i + size + lpBacklenSize(size)
		if !ok || end > len(lp)-1 || lpBacklen(lp, end-1) != size {
			return nil, false
		}
		elems = append(elems, elem)
		i = end
	}
	if i != len(lp)-1 { // an end byte before the end
		return nil, false
	}
	if count := binary.LittleEndian.Uint16(lp[4:]); count != lpCountUnknown && int(count) != len(elems) {
		return nil, false
	}
	return elems, true
}

// lpBacklen reads the back-length that ends at lp[i], or -1 if it runs
// past 5 bytes.
func lpBacklen(lp []byte, i int) int {
	v := 0
	for shift := 0; shift <= 28; shift += 7 {
		v |= int(lp[i]&127) << shift
		if lp[i]&128 == 0 {
			return v
		}
		i--
	}
	return -1
}
