package core

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/index"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/slurmmetrics"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	"github.com/gantry-dev/gantry/pkg/framework/referrers"
	"github.com/gantry-dev/gantry/pkg/framework/refresolver"
	"github.com/gantry-dev/gantry/pkg/framework/refwatch"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
)

// Watches adds a kind's watches to b; their mappings read through cache,
// the manager's client.
type Watches func(b *builder.Builder, cache client.Reader) *builder.Builder

// Setup registers r as name, reconciling forObj with workers workers (at
// least one) and the watches watch adds. The field indexes the watches map
// through are registered once for the workload, by the slurm
// Integration's SetupIndexes, before any kind is set up.
func Setup(mgr ctrl.Manager, name string, forObj client.Object, r reconcile.Reconciler, workers int, watch Watches, refs ...Refs) error {
	b, err := WatchRefs(mgr, watch(workload.NewController(mgr, name, forObj, workers), mgr.GetClient()), refs...)
	if err != nil {
		return err
	}
	return b.Complete(r)
}

// WatchRefs adds refs to b: the holders are tracked by mgr's Watcher of
// each kind, and its changes mapped to b's requests.
func WatchRefs(mgr ctrl.Manager, b *builder.Builder, refs ...Refs) (*builder.Builder, error) {
	for _, ref := range refs {
		w, err := refwatch.For(mgr, ref.Kind)
		if err != nil {
			return nil, err
		}
		for _, h := range ref.Holders {
			if err := w.Track(context.Background(), mgr.GetCache(), h); err != nil {
				return nil, err
			}
		}
		b = b.WatchesRawSource(w.Source(handler.EnqueueRequestsFromMapFunc(ref.Map(mgr.GetClient()))))
	}
	return b, nil
}

// Refs is a watch of the user's objects of one kind (Secrets, ConfigMaps)
// that Holders reference, which Map maps to requests, reading through
// cache. Only the referenced objects are watched, each by its name
// (package refwatch): the cluster's other Secrets and ConfigMaps never
// reach the manager.
type Refs struct {
	Kind    client.Object
	Holders []refwatch.Holder
	Map     func(cache client.Reader) handler.MapFunc
}

// Options configure a Slurm kind's reconciler: the workload's options and,
// for the kinds that run Slinky's images, images that override the
// defaults field by field.
type Options struct {
	workload.Options
	Images slinky.Images
	// Metrics are the workload's metrics; nil records none.
	Metrics *slurmmetrics.Metrics
}

// FromManager is New over mgr's client, API reader and the event recorder
// named name, reconciling o.Workers() objects at a time. Its Refs keep
// the referenced Secrets and ConfigMaps mgr's Watchers follow until they
// change (RefReader).
func FromManager(mgr ctrl.Manager, name string, o workload.Options) Reconciler {
	return newReconcilerReading(mgr.GetClient(), mgr.GetAPIReader(), refresolver.New(RefReader(mgr)), mgr.GetEventRecorder(name), o.Workers())
}

// RefReader reads the user's Secrets and ConfigMaps past the cache (it
// holds none of them), keeping each one mgr's Watchers follow until its
// resourceVersion moves: a Controller's keys are read once per change, not
// once per reconcile. Without a Watcher (a kind the RESTMapper does not
// know) it reads through every time.
func RefReader(mgr ctrl.Manager) client.Reader {
	var watchers []*refwatch.Watcher
	for _, kind := range []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}} {
		if w, err := refwatch.For(mgr, kind); err == nil {
			watchers = append(watchers, w)
		}
	}
	return refwatch.NewReader(mgr.GetAPIReader(), mgr.GetScheme(), watchers...)
}

// IndexedRefs watches the objects of kind that the holders of the shared
// index field reference, mapped back to those holders (of newList's kind)
// through the index.
func IndexedRefs(kind client.Object, field string, newList func() client.ObjectList) Refs {
	return Refs{Kind: kind, Holders: []refwatch.Holder{index.Holder(field)},
		Map: func(cache client.Reader) handler.MapFunc { return referrers.ByIndex(cache, newList, field) }}
}
