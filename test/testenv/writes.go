package testenv

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// WriteCounter counts the writes a manager or a reconciler sends: the one
// write counter of Gantry's tests. Install it on a rest.Config (Wrap: every
// mutating HTTP request, failed or not, events and leases included: what
// the operator costs the API server) or around a client (Client: every
// write that succeeded, so faults a test injects below it do not count).
// The zero value is ready to use.
type WriteCounter struct {
	// IgnoreLeases leaves leader-election writes out of Wrap's count: a
	// leader renews its Lease every few seconds, so a counter that includes
	// them never goes quiet.
	IgnoreLeases bool

	mu          sync.Mutex
	byVerb      map[string]int
	byNamespace map[string]int
	log         []string
	total       atomic.Int64
}

func (w *WriteCounter) count(key, namespace, line string) {
	w.mu.Lock()
	if w.byVerb == nil {
		w.byVerb, w.byNamespace = map[string]int{}, map[string]int{}
	}
	w.byVerb[key]++
	w.byNamespace[namespace]++
	w.log = append(w.log, line)
	w.mu.Unlock()
	w.total.Add(1)
}

// InNamespace is the number of writes to objects in namespace ns.
func (w *WriteCounter) InNamespace(ns string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.byNamespace[ns]
}

// Log lists the writes so far, one line each, for a failure message.
func (w *WriteCounter) Log() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.log)
}

// Client wraps inner so that every write through it that succeeds
// (create, update, patch, apply, delete, and status updates and patches) is
// counted. A patch that changes nothing is still a request and counts.
func (w *WriteCounter) Client(inner client.WithWatch) client.WithWatch {
	note := func(verb string, obj client.Object, sub string, err error) {
		if err != nil {
			return
		}
		kind := fmt.Sprintf("%T", obj)
		if sub != "" {
			kind += "/" + sub
		}
		w.count(verb+" "+kind, obj.GetNamespace(), fmt.Sprintf("%s: %s %s %s", obj.GetNamespace(), verb, kind, obj.GetName()))
	}
	return interceptor.NewClient(inner, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			err := c.Create(ctx, obj, opts...)
			note("create", obj, "", err)
			return err
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			err := c.Update(ctx, obj, opts...)
			note("update", obj, "", err)
			return err
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			err := c.Patch(ctx, obj, patch, opts...)
			note("patch", obj, "", err)
			return err
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			err := c.Delete(ctx, obj, opts...)
			note("delete", obj, "", err)
			return err
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj apiruntime.ApplyConfiguration, opts ...client.ApplyOption) error {
			err := c.Apply(ctx, obj, opts...)
			if err == nil {
				target, _ := obj.(applyTarget)
				ns, name, kind := "", "", fmt.Sprintf("%T", obj)
				if target != nil {
					ns, name, kind = target.GetNamespace(), target.GetName(), target.GetKind()
				}
				w.count("apply "+kind, ns, fmt.Sprintf("%s: apply %s %s", ns, kind, name))
			}
			return err
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			err := c.SubResource(sub).Update(ctx, obj, opts...)
			note("update", obj, sub, err)
			return err
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			err := c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			note("patch", obj, sub, err)
			return err
		},
	})
}

// applyTarget is what the apply configurations of typed objects offer.
type applyTarget interface {
	GetNamespace() string
	GetName() string
	GetKind() string
}

// Wrap installs the counter on cfg's transport.
func (w *WriteCounter) Wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			switch req.Method {
			case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
				// Leader election and event writes are counted too: they
				// are part of what the operator costs the API server.
				resource, ns := resourceOf(req.URL.Path)
				if w.IgnoreLeases && resource == "leases" {
					break
				}
				if isProxy(resource) {
					// A call through services/proxy or pods/proxy (a
					// Ray job submitted to a dashboard) reaches a Pod,
					// not the API server's storage.
					break
				}
				key := req.Method + " " + resource
				w.count(key, ns, ns+": "+key)
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

// resourceOf turns /api/v1/namespaces/x/pods/y/status into "pods/status"
// and "x".
func resourceOf(path string) (resource, namespace string) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i := 0; i < len(parts); i++ {
		if parts[i] == "namespaces" && i+2 < len(parts) {
			rest := parts[i+2:]
			if len(rest) >= 3 {
				return rest[0] + "/" + rest[2], parts[i+1]
			}
			return rest[0], parts[i+1]
		}
	}
	if len(parts) >= 3 {
		return parts[len(parts)-2], ""
	}
	return path, ""
}

// isProxy reports whether resource is the proxy subresource of a Service,
// Pod or Node.
func isProxy(resource string) bool { return strings.HasSuffix(resource, "/proxy") }

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
