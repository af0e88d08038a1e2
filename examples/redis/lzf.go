package main

// lzfDecompress expands LZF-compressed in (liblzf's format, which
// redis-server writes for strings over 20 bytes) into exactly size bytes,
// or returns false: a back-reference before the output's start, a run past
// either end, or an output of another size. The format is a sequence of
// runs, each led by a control byte c:
//
//	c < 32:  a literal run of c+1 bytes, which follow
//	c >= 32: a back-reference of c>>5 (+ the next byte, if that is 7) + 2
//	         bytes, copied from ((c&31)<<8 | the following byte) + 1 bytes back
func lzfDecompress(in []byte, size uint64) ([]byte, bool) {
	// A back-reference of 3 input bytes writes at most 264: a size beyond
	// that ratio cannot be met, and is refused at once. Within it, the
	// output grows as it is written, not to the size claimed.
	if size > 88*uint64(len(in)) {
		return nil, false
	}
	out := make([]byte, 0, min(size, 4*uint64(len(in))))
	for i := 0; i < len(in); {
		c := int(in[i])
		i++
		if c < 32 {
			n := c + 1
			if i+n > len(in) || uint64(len(out)+n) > size {
				return nil, false
			}
			out = append(out, in[i:i+n]...)
			i += n
			continue
		}
		n := c >> 5
		if n == 7 {
			if i >= len(in) {
				return nil, false
			}
			n += int(in[i])
			i++
		}
		if i >= len(in) {
			return nil, false
		}
		back := ((c&31)<<8 | int(in[i])) + 1
		i++
		n += 2
		if back > len(out) || uint64(len(out)+n) > size {
			return nil, false
		}
		for from := len(out) - back; n > 0; n-- { // overlapping copies repeat
			out = append(out, out[from])
			from++
		}
	}
	return out, uint64(len(out)) == size
}
