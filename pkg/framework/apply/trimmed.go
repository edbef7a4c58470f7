package apply

import (
	"context"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Trimmed names the kinds whose cached copies carry their metadata and
// status but not their spec (a cache transform dropped it to save memory;
// the manager's JobSets), and remembers, for each such object, the
// generation at which it was last seen to hold an apply body.
//
// ApplyIfChanged cannot check a trimmed copy for drift field by field. It
// compares the copy's metadata as usual, and takes the spec as unchanged
// when the object's generation (which the API server moves on every spec
// change, by anyone) is the one last verified for the same body. Otherwise,
// after a restart or someone else's spec edit, it reads the whole object
// through its own uncached reader once and verifies it there. A converged
// reconcile therefore still sends no request.
//
// A nil *Trimmed trims nothing. It is safe for concurrent use.
type Trimmed struct {
	reader client.Reader
	kinds  map[reflect.Type]bool
	mu     sync.Mutex
	seen   map[trimmedKey]verified
}

type trimmedKey struct {
	kind reflect.Type
	key  types.NamespacedName
}

// verified is an object's identity and generation when it was last seen
// to hold the apply body with the given hash.
type verified struct {
	uid        types.UID
	generation int64
	hash       string
}

// NewTrimmed covers the Go types of kinds (typed objects only), and reads
// them whole through uncached (the manager's APIReader) when their
// generation has to be verified again.
func NewTrimmed(uncached client.Reader, kinds ...client.Object) *Trimmed {
	t := &Trimmed{reader: uncached, kinds: map[reflect.Type]bool{}, seen: map[trimmedKey]verified{}}
	for _, k := range kinds {
		t.kinds[reflect.TypeOf(k)] = true
	}
	return t
}

// Covers reports whether obj's kind is cached without its spec.
func (t *Trimmed) Covers(obj client.Object) bool {
	return t != nil && t.kinds[reflect.TypeOf(obj)]
}

// Forget drops what is remembered of the objects named key, of every
// covered kind; a reconciler calls it when the object that owns them is
// gone, so memory follows the live objects.
func (t *Trimmed) Forget(key types.NamespacedName) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range t.kinds {
		delete(t.seen, trimmedKey{kind: k, key: key})
	}
}

// holds reports whether live, at its generation, was verified to hold the
// body hashed hash.
func (t *Trimmed) holds(live client.Object, hash string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.seen[t.keyOf(live)]
	return ok && v.uid == live.GetUID() && v.generation == live.GetGeneration() && v.hash == hash
}

// record notes that obj, as the server has it, holds the body hashed hash.
// kindOf is the covered type obj stands for (obj itself may be the
// unstructured form of an apply response).
func (t *Trimmed) record(kindOf, obj client.Object, hash string) {
	if !t.Covers(kindOf) || obj.GetUID() == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seen[t.keyOf(kindOf)] = verified{uid: obj.GetUID(), generation: obj.GetGeneration(), hash: hash}
}

func (t *Trimmed) keyOf(obj client.Object) trimmedKey {
	return trimmedKey{kind: reflect.TypeOf(obj), key: client.ObjectKeyFromObject(obj)}
}

// holdsBody reports whether live already reflects want, the apply body
// with its hash annotation (apiVersion and kind removed, zero scalars
// dropped). For a kind the cache trims, live's metadata is compared, and
// its spec is verified by generation or, failing that, by reading the
// whole object past the cache.
func (a Applier) holdsBody(ctx context.Context, live client.Object, want map[string]any, hash string) (bool, error) {
	liveContent, err := toContent(live)
	if err != nil {
		return false, err
	}
	if !a.Trimmed.Covers(live) {
		return Contains(liveContent, want), nil
	}
	if !Contains(liveContent["metadata"], want["metadata"]) {
		// The apply that follows also rewrites any spec drift.
		return false, nil
	}
	if a.Trimmed.holds(live, hash) {
		return true, nil
	}
	full, err := get(ctx, a.Trimmed.reader, live)
	if err != nil || full == nil {
		return false, err
	}
	fullContent, err := toContent(full)
	if err != nil {
		return false, err
	}
	if !Contains(fullContent, want) {
		return false, nil
	}
	a.Trimmed.record(live, full, hash)
	return true, nil
}
