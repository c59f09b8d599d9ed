package wire

// The request side of HPACK (RFC 7541), as much as the client needs: its
// header blocks are made of fields known before the first call (the
// method, the path, the authority, the configured metadata) and of a few
// whose values change with every call (the sequence number and send
// time). The known fields are encoded once. A connection's first request
// adds them to the server's dynamic table (literal with incremental
// indexing); every later request names each by its index, one byte, and
// names the changing fields' names by index too, with their values as
// literals that are never added (the table never changes after the first
// request, so the indices stay valid without tracking evictions). Strings
// are written as they are, without Huffman coding.

// static are the entries of HPACK's static table the client names.
const (
	staticAuthority   = 1
	staticMethodPOST  = 3
	staticPath        = 4
	staticSchemeHTTP  = 6
	staticSchemeHTTPS = 7
	staticContentType = 31
	staticUserAgent   = 58
	// dynamicFirst is the index of the dynamic table's newest entry.
	dynamicFirst = 62
	// entryOverhead is what HPACK counts for an entry besides its name
	// and value (RFC 7541 section 4.1).
	entryOverhead = 32
)

// appendInt appends i with an n-bit prefix whose other bits are first's
// (RFC 7541 section 5.1).
func appendInt(dst []byte, first byte, n uint, i uint64) []byte {
	max := uint64(1)<<n - 1
	if i < max {
		return append(dst, first|byte(i))
	}
	dst = append(dst, first|byte(max))
	i -= max
	for i >= 128 {
		dst = append(dst, byte(i&0x7f)|0x80)
		i >>= 7
	}
	return append(dst, byte(i))
}

// appendString appends s as a string literal, not Huffman-coded.
func appendString(dst []byte, s string) []byte {
	dst = appendInt(dst, 0, 7, uint64(len(s)))
	return append(dst, s...)
}

// field is one header field of a request: static, when the static table
// names it (its index), or a name of its own.
type field struct {
	name, value string
	static      uint64 // the static table's index of the name, 0: none
	secret      bool   // never indexed, anywhere
	// whole: the static table holds the name and this very value (an
	// indexed field, never added to the dynamic table).
	whole bool
}

// size is what the field takes in a dynamic table.
func (f field) size() int { return len(f.name) + len(f.value) + entryOverhead }

// blocks are the encoded fixed parts of a client's requests, made once.
type blocks struct {
	// first is the fixed part of a connection's first request: the
	// fields added to the server's table (incremental indexing), the
	// secrets never indexed.
	first []byte
	// steady is the fixed part of every later request: each added field
	// named by its index, the secrets again as never indexed literals.
	steady []byte
	// plain is the fixed part of every request on a connection whose
	// server's table is too small: literals that are never added.
	plain []byte
	// fixed is what the fixed fields take in the server's table, and
	// added how many entries they are.
	fixed, added int
	// vary are the names of the fields whose values change with every
	// call.
	vary []string
}

// makeBlocks encodes fields (the fixed ones, in order, pseudo-headers
// first) and prepares the changing ones, vary, which follow them.
func makeBlocks(fields []field, vary []string) *blocks {
	bl := &blocks{vary: vary}
	added := 0
	for _, f := range fields {
		if !f.whole && !f.secret {
			added++
		}
	}
	// The first request adds the fixed fields, then the changing ones
	// it has values of: once it is done the newest entry (index
	// dynamicFirst) is the last changing field it added.
	total := added + len(vary)
	k := 0
	for _, f := range fields {
		switch {
		case f.whole:
			b := appendInt(nil, 0x80, 7, f.static)
			bl.first = append(bl.first, b...)
			bl.steady = append(bl.steady, b...)
			bl.plain = append(bl.plain, b...)
		case f.secret:
			// Literal never indexed (0x10), here and at every hop.
			var b []byte
			if f.static != 0 {
				b = appendInt(nil, 0x10, 4, f.static)
			} else {
				b = appendString([]byte{0x10}, f.name)
			}
			b = appendString(b, f.value)
			bl.first = append(bl.first, b...)
			bl.steady = append(bl.steady, b...)
			bl.plain = append(bl.plain, b...)
		default:
			// Literal with incremental indexing (0x40) on the first
			// request, its index after; literal without indexing (0x00)
			// on a plain one.
			if f.static != 0 {
				bl.first = appendString(appendInt(bl.first, 0x40, 6, f.static), f.value)
				bl.plain = appendString(appendInt(bl.plain, 0x00, 4, f.static), f.value)
			} else {
				bl.first = appendString(appendString(append(bl.first, 0x40), f.name), f.value)
				bl.plain = appendString(appendString(append(bl.plain, 0x00), f.name), f.value)
			}
			bl.steady = appendInt(bl.steady, 0x80, 7, uint64(dynamicFirst+total-1-k))
			bl.fixed += f.size()
			bl.added++
			k++
		}
	}
	return bl
}

// firstVary is, for a connection's first request with values, the
// changing fields it adds to the server's table (those with a value) and
// their indices once it is done (0: not in the table), and the bytes the
// table then holds by HPACK's count.
func (bl *blocks) firstVary(values []string) (idx []uint64, table int) {
	table = bl.fixed
	idx = make([]uint64, len(bl.vary))
	n := 0
	for k, name := range bl.vary {
		if k < len(values) && values[k] != "" {
			table += len(name) + len(values[k]) + entryOverhead
			n++
		}
	}
	// The fixed fields' indices assumed every changing field added: with
	// fewer, they are lower by the difference, which the caller's steady
	// block accounts for (steadyFor).
	j := 0
	for k := range bl.vary {
		if k < len(values) && values[k] != "" {
			idx[k] = uint64(dynamicFirst + n - 1 - j)
			j++
		}
	}
	return idx, table
}

// steadyFor is the steady block for a connection whose first request
// added n of the changing fields: the fixed fields' indices shift down by
// those it did not add.
func (bl *blocks) steadyFor(fields []field, n int) []byte {
	if n == len(bl.vary) {
		return bl.steady
	}
	var out []byte
	k := 0
	for _, f := range fields {
		switch {
		case f.whole:
			out = appendInt(out, 0x80, 7, f.static)
		case f.secret:
			if f.static != 0 {
				out = appendInt(out, 0x10, 4, f.static)
			} else {
				out = appendString(append(out, 0x10), f.name)
			}
			out = appendString(out, f.value)
		default:
			out = appendInt(out, 0x80, 7, uint64(dynamicFirst+bl.added+n-1-k))
			k++
		}
	}
	return out
}

// appendVary appends the changing fields' values to a header block: on a
// first request each one with a value added to the table, on a steady one
// named by its index in idx (a field the first request did not add with
// its name), on a plain one with its name. An empty value is not sent.
func (bl *blocks) appendVary(dst []byte, mode blockMode, idx []uint64, values []string) []byte {
	for k, name := range bl.vary {
		if k >= len(values) || values[k] == "" {
			continue
		}
		v := values[k]
		switch {
		case mode == blockFirst:
			dst = appendString(appendString(append(dst, 0x40), name), v)
		case mode == blockSteady && idx[k] != 0:
			dst = appendString(appendInt(dst, 0x00, 4, idx[k]), v)
		default:
			dst = appendString(appendString(append(dst, 0x00), name), v)
		}
	}
	return dst
}

// blockMode is how a connection encodes a request's header block.
type blockMode uint8

const (
	blockFirst  blockMode = iota // the first request: fills the server's table
	blockSteady                  // every later one: names the table's entries
	blockPlain                   // the server's table is too small: literals only
)
