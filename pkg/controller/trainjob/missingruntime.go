package trainjob

import (
	"context"
	"time"

	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

// RuntimeNotFoundGrace is how long a TrainJob waits for the runtime it
// names to appear before it fails for good (Failed, reason
// TrainingRuntimeNotFound). A GitOps tool may apply a TrainJob before its
// runtime; meanwhile the job shows Created=False with that reason, and it
// starts as soon as the runtime is created (a watch on both runtime kinds),
// not at the next retry. Trainer retries forever with events only; the
// Gantry seed failed at once.
const RuntimeNotFoundGrace = 5 * time.Minute

// indexRuntimeRef indexes TrainJobs by the runtime they name, as
// "<kind>/<name>" with the kind defaulted as the API defaults it.
const indexRuntimeRef = "trainjob.runtimeRef"

func runtimeRefKey(kind, name string) string { return kind + "/" + name }

func trainJobRuntimeRef(obj client.Object) []string {
	tj, ok := obj.(*trainer.TrainJob)
	if !ok {
		return nil
	}
	return []string{runtimeRefKey(ptr.Deref(tj.Spec.RuntimeRef.Kind, trainer.ClusterTrainingRuntimeKind), tj.Spec.RuntimeRef.Name)}
}

// createdOnly passes only creations: a runtime that appears.
var createdOnly = predicate.Funcs{
	UpdateFunc:  func(event.UpdateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// setupRuntimeIndex registers the runtimeRef index the runtime watches use.
func setupRuntimeIndex(ctx context.Context, indexer client.FieldIndexer) error {
	return indexer.IndexField(ctx, &trainer.TrainJob{}, indexRuntimeRef, trainJobRuntimeRef)
}

// trainJobsWaitingFor maps a runtime to the unfinished TrainJobs that name
// it and have no JobSet yet: those a missing runtime held back. A runtime
// that changes under a running job only matters to its next build.
func (r *Reconciler) trainJobsWaitingFor(kind string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		opts := []client.ListOption{client.MatchingFields{indexRuntimeRef: runtimeRefKey(kind, obj.GetName())}}
		if kind == trainer.TrainingRuntimeKind {
			opts = append(opts, client.InNamespace(obj.GetNamespace()))
		}
		list := &trainer.TrainJobList{}
		if err := r.client.List(ctx, list, opts...); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "listing the TrainJobs of a runtime", "kind", kind, "runtime", obj.GetName())
			return nil
		}
		var out []reconcile.Request
		for i := range list.Items {
			tj := &list.Items[i]
			if trainer.IsFinished(tj.Status.Conditions) || len(tj.Status.JobsStatus) > 0 {
				continue
			}
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(tj)})
		}
		return out
	}
}

// runtimeGraceLeft is how long a TrainJob whose runtime is missing still
// waits for it; zero or less means it fails now.
func (r *Reconciler) runtimeGraceLeft(trainJob *trainer.TrainJob) time.Duration {
	return r.runtimeGrace - r.clock.Since(trainJob.CreationTimestamp.Time)
}
