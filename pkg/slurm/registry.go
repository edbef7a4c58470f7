package slurm

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// ClientFactory builds a Client from a Config; NewClient in production, a
// fake in tests of code that fills the registry.
type ClientFactory func(Config) (Client, error)

// Registry holds one Client per Controller (keyed by the Controller's
// namespaced name). The RestApi reconciler Sets a client when it learns the
// slurmrestd Service and jwt key; the NodeSet reconciler Gets it. A client is
// rebuilt only when its Fingerprint changes, so its cached token and
// connections survive reconciles that change nothing.
type Registry struct {
	newClient ClientFactory

	mu      sync.RWMutex
	entries map[types.NamespacedName]registryEntry
}

type registryEntry struct {
	fingerprint string
	client      Client
}

// NewRegistry returns an empty registry; a nil factory means NewClient.
func NewRegistry(factory ClientFactory) *Registry {
	if factory == nil {
		factory = NewClient
	}
	return &Registry{newClient: factory, entries: map[types.NamespacedName]registryEntry{}}
}

// Set makes key's client talk to cfg. It reports whether a client was
// created (new key, or endpoint, user or key changed); an unchanged config
// keeps the existing client. On error the previous client stays.
func (r *Registry) Set(key types.NamespacedName, cfg Config) (changed bool, err error) {
	fingerprint := cfg.Fingerprint()
	r.mu.Lock()
	defer r.mu.Unlock()
	old, exists := r.entries[key]
	if exists && old.fingerprint == fingerprint {
		return false, nil
	}
	client, err := r.newClient(cfg)
	if err != nil {
		return false, err
	}
	r.entries[key] = registryEntry{fingerprint: fingerprint, client: client}
	if exists {
		closeIdle(old.client)
	}
	return true, nil
}

// Get returns key's client, if any.
func (r *Registry) Get(key types.NamespacedName) (Client, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.entries[key]
	return e.client, ok
}

// Delete forgets key's client; it reports whether there was one.
func (r *Registry) Delete(key types.NamespacedName) bool {
	r.mu.Lock()
	e, ok := r.entries[key]
	delete(r.entries, key)
	r.mu.Unlock()
	if ok {
		closeIdle(e.client)
	}
	return ok
}

// Len is the number of registered clients.
func (r *Registry) Len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.entries)
}

// closeIdle drops a retired client's idle connections. In-flight requests
// of a caller still holding it finish normally.
func closeIdle(c Client) {
	if closer, ok := c.(interface{ CloseIdleConnections() }); ok {
		closer.CloseIdleConnections()
	}
}
