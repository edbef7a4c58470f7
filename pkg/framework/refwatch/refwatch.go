package refwatch

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Watcher watches the referenced objects of one kind. Make it with For.
type Watcher struct {
	gvk schema.GroupVersionKind
	gvr schema.GroupVersionResource
	mc  metadata.Interface

	mu sync.Mutex
	// ctx is the manager's, once it started the Watcher; informers start
	// only then.
	ctx context.Context
	// tracked are the holder types whose informer handler is added.
	tracked map[reflect.Type]bool
	// holders are the names each holder references, by holder type and key.
	holders map[holderKey][]string
	refs    map[types.NamespacedName]*ref
	sinks   []sink
}

type holderKey struct {
	t   reflect.Type
	key types.NamespacedName
}

// ref is one watched name: its holders and its informer, nil until the
// Watcher started.
type ref struct {
	holders  int
	informer toolscache.SharedIndexInformer
	stop     context.CancelFunc
	// kept is the object as a Reader last read it, nil when none is kept.
	kept client.Object
}

type sink struct {
	ctx     context.Context
	handler handler.EventHandler
	queue   workqueue.TypedRateLimitingInterface[reconcile.Request]
}

var (
	watchersMu sync.Mutex
	watchers   = map[manager.Manager]map[schema.GroupVersionKind]*Watcher{}
)

// For returns mgr's Watcher for obj's kind, making it, and adding it to
// mgr, the first time it is asked for: the reconcilers of one manager
// share one informer per referenced object.
func For(mgr manager.Manager, obj client.Object) (*Watcher, error) {
	gvk, err := apiutil.GVKForObject(obj, mgr.GetScheme())
	if err != nil {
		return nil, err
	}
	watchersMu.Lock()
	defer watchersMu.Unlock()
	if w := watchers[mgr][gvk]; w != nil {
		return w, nil
	}
	mapping, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("refwatch: the resource of %s: %w", gvk, err)
	}
	mc, err := metadata.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, err
	}
	w := &Watcher{
		gvk: gvk, gvr: mapping.Resource, mc: mc,
		tracked: map[reflect.Type]bool{},
		holders: map[holderKey][]string{},
		refs:    map[types.NamespacedName]*ref{},
	}
	if err := mgr.Add(w); err != nil {
		return nil, err
	}
	if watchers[mgr] == nil {
		watchers[mgr] = map[schema.GroupVersionKind]*Watcher{}
	}
	watchers[mgr][gvk] = w
	return w, nil
}

// Holder is a kind of object whose spec references objects of a
// Watcher's kind: Names lists their names, in the holder's namespace.
type Holder struct {
	Object client.Object
	Names  func(client.Object) []string
}

// Track follows the objects of h's kind in informers (the manager's
// cache). Tracking a kind twice is a no-op, so every reconciler may track
// the holders its own mapping reads.
func (w *Watcher) Track(ctx context.Context, informers cache.Informers, h Holder) error {
	holder, names := h.Object, h.Names
	t := reflect.TypeOf(holder)
	w.mu.Lock()
	done := w.tracked[t]
	w.tracked[t] = true
	w.mu.Unlock()
	if done {
		return nil
	}
	// Before the cache starts this makes the informer, not waiting for it.
	inf, err := informers.GetInformer(ctx, holder, cache.BlockUntilSynced(false))
	if err != nil {
		w.mu.Lock()
		delete(w.tracked, t)
		w.mu.Unlock()
		return fmt.Errorf("refwatch: the informer of %T: %w", holder, err)
	}
	update := func(obj any, gone bool) {
		if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj, gone = tomb.Obj, true
		}
		o, ok := obj.(client.Object)
		if !ok {
			return
		}
		var refs []string
		if !gone {
			refs = distinctNames(names(o))
		}
		w.set(holderKey{t: t, key: client.ObjectKeyFromObject(o)}, refs)
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { update(obj, false) },
		UpdateFunc: func(_, obj any) { update(obj, false) },
		DeleteFunc: func(obj any) { update(obj, true) },
	})
	return err
}

// distinctNames is names sorted, without repeats or empty names; names
// is left as it is.
func distinctNames(names []string) []string {
	out := slices.DeleteFunc(slices.Clone(names), func(s string) bool { return s == "" })
	slices.Sort(out)
	return slices.Compact(out)
}

// NeedLeaderElection is false: like the cache, a Watcher runs on every
// replica, so that a new leader finds its referenced objects watched.
func (w *Watcher) NeedLeaderElection() bool { return false }

// Start runs the informers of the names already referenced, and of every
// name referenced from now on, until ctx ends.
func (w *Watcher) Start(ctx context.Context) error {
	w.mu.Lock()
	w.ctx = ctx
	for key, r := range w.refs {
		w.startLocked(key, r)
	}
	w.mu.Unlock()
	<-ctx.Done()
	// The manager is done: forget this Watcher, and the manager with its
	// last one.
	watchersMu.Lock()
	for mgr, byKind := range watchers {
		if byKind[w.gvk] == w {
			delete(byKind, w.gvk)
			if len(byKind) == 0 {
				delete(watchers, mgr)
			}
		}
	}
	watchersMu.Unlock()
	return nil
}

// set records that holder references names (none when it is gone), and
// starts and stops informers to match.
func (w *Watcher) set(h holderKey, names []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	old := w.holders[h]
	if slices.Equal(old, names) {
		return
	}
	if len(names) == 0 {
		delete(w.holders, h)
	} else {
		w.holders[h] = names
	}
	for _, n := range names {
		if slices.Contains(old, n) {
			continue
		}
		key := types.NamespacedName{Namespace: h.key.Namespace, Name: n}
		r := w.refs[key]
		if r == nil {
			r = &ref{}
			w.refs[key] = r
			if w.ctx != nil {
				w.startLocked(key, r)
			}
		}
		r.holders++
	}
	for _, n := range old {
		if slices.Contains(names, n) {
			continue
		}
		key := types.NamespacedName{Namespace: h.key.Namespace, Name: n}
		if r := w.refs[key]; r != nil {
			if r.holders--; r.holders <= 0 {
				if r.stop != nil {
					r.stop()
				}
				delete(w.refs, key)
			}
		}
	}
}

// startLocked runs the informer of the one object key names.
func (w *Watcher) startLocked(key types.NamespacedName, r *ref) {
	ctx, stop := context.WithCancel(w.ctx)
	selector := fields.OneTermEqualSelector("metadata.name", key.Name).String()
	inf := metadatainformer.NewFilteredMetadataInformer(w.mc, w.gvr, key.Namespace, 0, toolscache.Indexers{},
		func(o *metav1.ListOptions) { o.FieldSelector = selector }).Informer()
	notify := func(obj any) { w.notify(obj) }
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    notify,
		UpdateFunc: func(_, obj any) { notify(obj) },
		DeleteFunc: notify,
	}); err != nil {
		log.FromContext(ctx).Error(err, "refwatch: adding the event handler", "kind", w.gvk.Kind, "object", key)
	}
	r.informer, r.stop = inf, stop
	go inf.RunWithContext(ctx)
}

// notify sends obj's metadata to every Source.
func (w *Watcher) notify(obj any) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	meta := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Namespace: m.GetNamespace(), Name: m.GetName(), ResourceVersion: m.GetResourceVersion(),
	}}
	meta.SetGroupVersionKind(w.gvk)
	w.mu.Lock()
	sinks := slices.Clone(w.sinks)
	w.mu.Unlock()
	for _, s := range sinks {
		s.handler.Generic(s.ctx, event.GenericEvent{Object: meta}, s.queue)
	}
}

// Source is a controller source of the changes of every referenced
// object, which h maps to requests (as Watches would).
func (w *Watcher) Source(h handler.EventHandler) source.Source {
	return source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		w.mu.Lock()
		w.sinks = append(w.sinks, sink{ctx: ctx, handler: h, queue: q})
		w.mu.Unlock()
		return nil
	})
}

// ResourceVersion is the resourceVersion of the referenced object key
// names, as its informer last saw it. known is false unless key is
// watched and its informer has synced; found is false when the object
// does not exist.
func (w *Watcher) ResourceVersion(key types.NamespacedName) (rv string, found, known bool) {
	var inf toolscache.SharedIndexInformer
	w.mu.Lock()
	if r := w.refs[key]; r != nil {
		inf = r.informer // set under the lock, when the Watcher starts
	}
	w.mu.Unlock()
	if inf == nil || !inf.HasSynced() {
		return "", false, false
	}
	obj, exists, err := inf.GetStore().GetByKey(key.String())
	if err != nil {
		return "", false, false
	}
	if !exists {
		return "", false, true
	}
	m, isMeta := obj.(metav1.Object)
	if !isMeta {
		return "", false, false
	}
	return m.GetResourceVersion(), true, true
}
