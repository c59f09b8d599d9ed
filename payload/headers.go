package payload

import "github.com/pipebench/pipebench"

// LeftOut reports whether a message carrying the headers hs leaves out
// the i-th: the count header when the message is one item of a split batch
// (item) or the count is 1, and a header that hs names again later (a
// header named twice travels once, with its last value).
func LeftOut(hs []pipebench.Header, i int, item bool) bool {
	h := hs[i]
	if h.Name == HeaderCount && (item || h.Value == "1") {
		return true
	}
	for _, later := range hs[i+1:] {
		if later.Name == h.Name {
			return true
		}
	}
	return false
}
