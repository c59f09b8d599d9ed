// Package report keeps the reporters by format name. Reporters only format:
// every number comes from the Result. The CLI's --format flag takes its valid
// names from here.
package report

import (
	"fmt"
	"sort"
	"sync"

	"github.com/pipebench/pipebench"
)

var (
	mu        sync.RWMutex
	reporters = map[string]pipebench.Reporter{}
)

// Register adds a reporter under a format name; a duplicate is an error.
func Register(name string, r pipebench.Reporter) error {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := reporters[name]; dup {
		return fmt.Errorf("report format %q is registered twice", name)
	}
	reporters[name] = r
	return nil
}

// Lookup returns the reporter for a format name.
func Lookup(name string) (pipebench.Reporter, bool) {
	mu.RLock()
	defer mu.RUnlock()
	r, ok := reporters[name]
	return r, ok
}

// Names lists the registered format names, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]string, 0, len(reporters))
	for n := range reporters {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
