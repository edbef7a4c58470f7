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
	"github.com/gantry-dev/gantry/pkg/framework/finalizers"
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

// runtimeFinalizerReconciler removes ResourceInUseFinalizer from the
// runtimes of one kind.
type runtimeFinalizerReconciler[T client.Object] struct {
	client client.Client
	newObj func() T
}

func (r *runtimeFinalizerReconciler[T]) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rt := r.newObj()
	if err := r.client.Get(ctx, req.NamespacedName, rt); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	sent, err := finalizers.Remove(ctx, r.client, rt, ResourceInUseFinalizer)
	if sent && err == nil {
		ctrl.LoggerFrom(ctx).Info("removed the finalizer an older Trainer left on the runtime", "finalizer", ResourceInUseFinalizer)
	}
	return ctrl.Result{}, err
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
		Complete(&runtimeFinalizerReconciler[T]{client: mgr.GetClient(), newObj: newObj})
	if err != nil {
		return fmt.Errorf("setting up %s: %w", name, err)
	}
	return nil
}
