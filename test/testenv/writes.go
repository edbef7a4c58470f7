package testenv

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
)

// WriteCounter counts the mutating requests a manager sends, by verb.
type WriteCounter struct {
	mu     sync.Mutex
	byVerb map[string]int
	total  atomic.Int64
}

// Wrap installs the counter on cfg's transport.
func (w *WriteCounter) Wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	w.byVerb = map[string]int{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			switch req.Method {
			case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
				// Leader election and event writes are counted too: they
				// are part of what the operator costs the API server.
				key := req.Method + " " + resourceOf(req.URL.Path)
				w.mu.Lock()
				w.byVerb[key]++
				w.mu.Unlock()
				w.total.Add(1)
			}
			return rt.RoundTrip(req)
		})
	})
	return cfg
}

// Total is the number of writes so far.
func (w *WriteCounter) Total() int64 { return w.total.Load() }

// ByVerb is a copy of the counts by "VERB resource".
func (w *WriteCounter) ByVerb() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]int, len(w.byVerb))
	for k, v := range w.byVerb {
		out[k] = v
	}
	return out
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// resourceOf turns /api/v1/namespaces/x/pods/y/status into "pods/status".
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i := 0; i < len(parts); i++ {
		if parts[i] == "namespaces" && i+2 < len(parts) {
			rest := parts[i+2:]
			if len(rest) >= 3 {
				return rest[0] + "/" + rest[2]
			}
			return rest[0]
		}
	}
	if len(parts) >= 3 {
		return parts[len(parts)-2]
	}
	return path
}

// WaitQuiet returns once no write was counted for quiet, or after max has
// passed; it reports whether the manager went quiet. Only a time window can
// tell "idle" from "about to write", hence the wait.
func (w *WriteCounter) WaitQuiet(quiet, max time.Duration) bool {
	deadline := time.Now().Add(max)
	last := w.Total()
	for time.Now().Before(deadline) {
		time.Sleep(quiet)
		now := w.Total()
		if now == last {
			return true
		}
		last = now
	}
	return false
}
