package workload

import (
	"sync"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	fwmetrics "github.com/gantry-dev/gantry/pkg/framework/metrics"
)

// SpecChanged passes the events of a workload object that change what it
// asks for: its generation (the spec), labels or annotations. The
// controller's own status writes do not pass, so they cost no reconcile.
var SpecChanged = predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{})

// terminating is the process's one gantry_terminating_* collector, on
// controller-runtime's registry; NewController adds each controller's kind.
var terminating = sync.OnceValue(func() *fwmetrics.Terminating {
	return fwmetrics.MustRegister(nil, fwmetrics.NewTerminating())
})

// NewController begins every workload reconciler's registration the same
// way: named name, reconciling forObj (its events filtered by predicates,
// if any), workers reconciles at a time (at least one). The caller adds its
// watches and completes it. The controller's objects being deleted are
// counted in the gantry_terminating_* metrics.
func NewController(mgr ctrl.Manager, name string, forObj client.Object, workers int, predicates ...predicate.Predicate) *builder.Builder {
	if gvk, err := apiutil.GVKForObject(forObj, mgr.GetScheme()); err == nil {
		listGVK := gvk.GroupVersion().WithKind(gvk.Kind + "List")
		if _, err := mgr.GetScheme().New(listGVK); err == nil {
			scheme := mgr.GetScheme()
			terminating().Watch(name, mgr.GetCache(), func() client.ObjectList {
				list, _ := scheme.New(listGVK)
				return list.(client.ObjectList)
			})
		}
	}
	var forOpts []builder.ForOption
	if len(predicates) > 0 {
		forOpts = append(forOpts, builder.WithPredicates(predicates...))
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		For(forObj, forOpts...).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(workers, 1)})
}
