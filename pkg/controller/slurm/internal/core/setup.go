package core

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/slurmmetrics"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
)

// Watches adds a kind's watches to b; their mappings read through cache,
// the manager's client.
type Watches func(b *builder.Builder, cache client.Reader) *builder.Builder

// Setup registers r as name, reconciling forObj with workers workers (at
// least one) and the watches watch adds. The field indexes the watches map
// through are registered once for the workload, by the slurm
// Integration's SetupIndexes, before any kind is set up.
func Setup(mgr ctrl.Manager, name string, forObj client.Object, r reconcile.Reconciler, workers int, watch Watches) error {
	return watch(workload.NewController(mgr, name, forObj, workers), mgr.GetClient()).Complete(r)
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
// named name, reconciling o.Workers() objects at a time.
func FromManager(mgr ctrl.Manager, name string, o workload.Options) Reconciler {
	return newReconciler(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetEventRecorder(name), o.Workers())
}
