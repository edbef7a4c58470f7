package trainjob

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/framework/events"
	"github.com/gantry-dev/gantry/pkg/framework/finalizers"
	skeleton "github.com/gantry-dev/gantry/pkg/framework/reconcile"
	"github.com/gantry-dev/gantry/pkg/framework/syncsteps"
)

// ResourceInUseFinalizer is the finalizer Trainer before v2.3 put on a
// runtime while TrainJobs used it. Trainer v2.3 dropped the mechanism
// ("Remove Runtime Finalizers", kubeflow/trainer#3716) and its runtime
// controllers only remove the finalizer, so that runtimes made under an
// older Trainer can be deleted; Gantry does the same. A running TrainJob
// does not need its runtime: its JobSet is built.
const ResourceInUseFinalizer = "trainer.kubeflow.org/resource-in-use"

// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainingruntimes;clustertrainingruntimes,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainingruntimes/finalizers;clustertrainingruntimes/finalizers,verbs=get;update;patch

// runtimeFinalizerCleanup removes ResourceInUseFinalizer from the runtimes
// of one kind, on the reconcile skeleton: its one phase is Finalize.
type runtimeFinalizerCleanup[T client.Object] struct {
	skeleton.Skeleton[T, *runtimeScope[T]]
	client client.Client
	newObj func() T
}

// runtimeScope is what one cleanup knows: the runtime.
type runtimeScope[T client.Object] struct {
	syncsteps.Base[T]
}

func newRuntimeFinalizerCleanup[T client.Object](c client.Client, newObj func() T) *runtimeFinalizerCleanup[T] {
	r := &runtimeFinalizerCleanup[T]{client: c, newObj: newObj}
	r.Skeleton = skeleton.New(c, events.Recorder{}, skeleton.Workload[T, *runtimeScope[T]](r), skeleton.Options{})
	return r
}

func (r *runtimeFinalizerCleanup[T]) NewObject() T { return r.newObj() }

func (r *runtimeFinalizerCleanup[T]) NewScope(rt T) *runtimeScope[T] {
	return &runtimeScope[T]{Base: syncsteps.Base[T]{Object: rt}}
}

// Finalize removes the finalizer, from a runtime being deleted too, and
// ends the reconcile: there is nothing else to do.
func (r *runtimeFinalizerCleanup[T]) Finalize(ctx context.Context, s *runtimeScope[T]) (bool, error) {
	sent, err := finalizers.Remove(ctx, r.client, s.Object, ResourceInUseFinalizer)
	if sent && err == nil {
		ctrl.LoggerFrom(ctx).Info("removed the finalizer an older Trainer left on the runtime", "finalizer", ResourceInUseFinalizer)
	}
	return true, err
}

func (r *runtimeFinalizerCleanup[T]) Steps(*runtimeScope[T]) []syncsteps.Step[*runtimeScope[T]] {
	return nil
}

// Status writes nothing: a runtime's status is not Gantry's.
func (r *runtimeFinalizerCleanup[T]) Status(context.Context, *runtimeScope[T], error) error {
	return nil
}

// setupRuntimeFinalizerCleanup registers the cleanup for both runtime
// kinds. It needs no JobSet, so it runs while the TrainJob controller
// waits for JobSet's CRD.
func setupRuntimeFinalizerCleanup(mgr ctrl.Manager) error {
	if err := setupFinalizerCleanup(mgr, "trainingruntime-finalizer",
		func() *trainer.TrainingRuntime { return &trainer.TrainingRuntime{} }); err != nil {
		return err
	}
	return setupFinalizerCleanup(mgr, "clustertrainingruntime-finalizer",
		func() *trainer.ClusterTrainingRuntime { return &trainer.ClusterTrainingRuntime{} })
}

func setupFinalizerCleanup[T client.Object](mgr ctrl.Manager, name string, newObj func() T) error {
	hasFinalizer := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return controllerutil.ContainsFinalizer(o, ResourceInUseFinalizer)
	})
	err := ctrl.NewControllerManagedBy(mgr).Named(name).
		For(newObj(), builder.WithPredicates(hasFinalizer)).
		Complete(newRuntimeFinalizerCleanup(mgr.GetClient(), newObj))
	if err != nil {
		return fmt.Errorf("setting up %s: %w", name, err)
	}
	return nil
}
