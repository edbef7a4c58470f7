package core

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gantry-dev/gantry/pkg/controller/slurm/common"
)

// Images are a kind's default container images.
type Images[I any] interface {
	// Or returns the images with every empty field taken from fallback.
	Or(fallback I) I
}

// Options tune a kind's SetupWithManager.
type Options[I Images[I]] struct {
	// MaxConcurrentReconciles is the number of workers; 0 means one.
	MaxConcurrentReconciles int
	// Images override the default images field by field.
	Images I
}

// Apply applies the first of opts, if any, over images and returns the
// number of workers it asks for.
func Apply[I Images[I]](opts []Options[I], images *I) int {
	var o Options[I]
	if len(opts) > 0 {
		o = opts[0]
	}
	*images = o.Images.Or(*images)
	return o.MaxConcurrentReconciles
}

// Watches adds a kind's watches to b; their mappings read through cache,
// the manager's client.
type Watches func(b *builder.Builder, cache client.Reader) *builder.Builder

// Setup registers r as name, reconciling forObj with workers workers (at
// least one) and the watches watch adds, after the field indexes the Slurm
// watches map through.
func Setup(mgr ctrl.Manager, name string, forObj client.Object, r reconcile.Reconciler, workers int, watch Watches) error {
	if err := common.RegisterIndexes(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).Named(name).For(forObj)
	return watch(b, mgr.GetClient()).WithOptions(controller.Options{MaxConcurrentReconciles: max(workers, 1)}).Complete(r)
}
