package refwatch

import (
	"context"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Reader reads objects through an uncached reader (the API server), and
// keeps each object a Watcher follows until its resourceVersion, as the
// Watcher last saw it, moves: a referenced Secret read on every reconcile
// costs one GET per change instead of one per reconcile. What is kept goes
// when the last holder stops referencing the object. Objects no Watcher
// follows, and lists, are read through every time.
type Reader struct {
	uncached client.Reader
	scheme   *runtime.Scheme
	watchers []*Watcher
}

// NewReader reads through uncached, keeping what the watchers follow;
// scheme maps an object to its kind.
func NewReader(uncached client.Reader, scheme *runtime.Scheme, watchers ...*Watcher) *Reader {
	return &Reader{uncached: uncached, scheme: scheme, watchers: watchers}
}

// Get reads key into obj: from what was kept, when the Watcher of obj's
// kind follows key and has seen no change since it was read, else from the
// uncached reader. An object the Watcher takes for missing is still asked
// for: the caller may have just created it (a generated key Secret), and
// the watch not seen it yet.
func (r *Reader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	w := r.watcherFor(obj)
	if w == nil || len(opts) > 0 {
		return r.uncached.Get(ctx, key, obj, opts...)
	}
	if rv, found, known := w.ResourceVersion(key); known && found {
		if kept := w.kept(key); kept != nil && kept.GetResourceVersion() == rv &&
			reflect.TypeOf(kept) == reflect.TypeOf(obj) {
			reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(kept.DeepCopyObject()).Elem())
			return nil
		}
	}
	if err := r.uncached.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			w.keep(key, nil)
		}
		return err
	}
	w.keep(key, obj.DeepCopyObject().(client.Object))
	return nil
}

// List reads through.
func (r *Reader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return r.uncached.List(ctx, list, opts...)
}

func (r *Reader) watcherFor(obj client.Object) *Watcher {
	gvk, err := apiutil.GVKForObject(obj, r.scheme)
	if err != nil {
		return nil
	}
	for _, w := range r.watchers {
		if w != nil && w.gvk == gvk {
			return w
		}
	}
	return nil
}

// kept is the copy of key last read, nil when none is kept.
func (w *Watcher) kept(key types.NamespacedName) client.Object {
	w.mu.Lock()
	defer w.mu.Unlock()
	if r := w.refs[key]; r != nil {
		return r.kept
	}
	return nil
}

// keep remembers obj as key's content while key is referenced; nil
// forgets it.
func (w *Watcher) keep(key types.NamespacedName, obj client.Object) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if r := w.refs[key]; r != nil {
		r.kept = obj
	}
}
