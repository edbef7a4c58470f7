package workload

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// SpecChanged passes the events of a workload object that change what it
// asks for: its generation (the spec), labels or annotations. The
// controller's own status writes do not pass, so they cost no reconcile.
var SpecChanged = predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{})

// NewController begins every workload reconciler's registration the same
// way: named name, reconciling forObj (its events filtered by predicates,
// if any), workers reconciles at a time (at least one). The caller adds its
// watches and completes it.
func NewController(mgr ctrl.Manager, name string, forObj client.Object, workers int, predicates ...predicate.Predicate) *builder.Builder {
	var forOpts []builder.ForOption
	if len(predicates) > 0 {
		forOpts = append(forOpts, builder.WithPredicates(predicates...))
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		For(forObj, forOpts...).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(workers, 1)})
}
