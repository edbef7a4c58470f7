package metrics

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Names of the series Terminating exports.
const (
	TerminatingObjectsName = "gantry_terminating_objects"
	TerminatingOldestName  = "gantry_terminating_oldest_deletion_timestamp_seconds"
)

// listTimeout bounds one scrape's read of one kind from the cache.
const listTimeout = 5 * time.Second

// Terminating counts, at each scrape, each controller's objects that are
// being deleted (a deletion timestamp, held by finalizers) and exports the
// deletion timestamp of the oldest, so an alert can tell a deletion that
// is stuck (a finalizer Gantry cannot finish, or one nobody removes) from
// one that is only slow. It reads the manager's cache, which already holds
// every object a controller reconciles, so a scrape costs no API call.
type Terminating struct {
	objects, oldest *prometheus.Desc

	mu    sync.Mutex
	kinds []terminatingKind
}

type terminatingKind struct {
	controller string
	reader     client.Reader
	newList    func() client.ObjectList
}

// NewTerminating returns an empty collector; Watch adds the kinds.
func NewTerminating() *Terminating {
	return &Terminating{
		objects: prometheus.NewDesc(TerminatingObjectsName,
			"Objects a controller reconciles that are being deleted: they have a deletion timestamp and finalizers still hold them",
			[]string{"controller"}, nil),
		oldest: prometheus.NewDesc(TerminatingOldestName,
			"Deletion timestamp (Unix seconds) of the oldest object being deleted, per controller; absent when none is",
			[]string{"controller"}, nil),
	}
}

// Watch counts the objects newList lists through reader under the
// controller's name; a second Watch of the same name replaces the first (a
// controller set up again, as tests do).
func (t *Terminating) Watch(controller string, reader client.Reader, newList func() client.ObjectList) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := terminatingKind{controller: controller, reader: reader, newList: newList}
	if i := slices.IndexFunc(t.kinds, func(k terminatingKind) bool { return k.controller == controller }); i >= 0 {
		t.kinds[i] = k
		return
	}
	t.kinds = append(t.kinds, k)
}

// Describe implements prometheus.Collector.
func (t *Terminating) Describe(ch chan<- *prometheus.Desc) {
	ch <- t.objects
	ch <- t.oldest
}

// Collect implements prometheus.Collector. A kind the cache cannot list
// (not synced within listTimeout) exports nothing this scrape, rather than
// a count of zero that would hide a stuck deletion.
func (t *Terminating) Collect(ch chan<- prometheus.Metric) {
	t.mu.Lock()
	kinds := slices.Clone(t.kinds)
	t.mu.Unlock()
	for _, k := range kinds {
		count, oldest, ok := countTerminating(k)
		if !ok {
			continue
		}
		ch <- prometheus.MustNewConstMetric(t.objects, prometheus.GaugeValue, float64(count), k.controller)
		if count > 0 {
			ch <- prometheus.MustNewConstMetric(t.oldest, prometheus.GaugeValue, float64(oldest.Unix()), k.controller)
		}
	}
}

func countTerminating(k terminatingKind) (count int, oldest time.Time, ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
	defer cancel()
	list := k.newList()
	// Read only: the cache's own objects, not copies.
	if err := k.reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return 0, time.Time{}, false
	}
	_ = meta.EachListItem(list, func(o runtime.Object) error {
		obj, isObj := o.(client.Object)
		if !isObj || obj.GetDeletionTimestamp() == nil || len(obj.GetFinalizers()) == 0 {
			return nil
		}
		count++
		if ts := obj.GetDeletionTimestamp().Time; oldest.IsZero() || ts.Before(oldest) {
			oldest = ts
		}
		return nil
	})
	return count, oldest, true
}
