package finalizers

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// Add adds finalizer to obj. It reports whether a request was sent.
func Add(ctx context.Context, c client.Client, obj client.Object, finalizer string) (bool, error) {
	if controllerutil.ContainsFinalizer(obj, finalizer) {
		return false, nil
	}
	return true, patch(ctx, c, obj, "adding", finalizer, func(o client.Object, f string) bool {
		return controllerutil.AddFinalizer(o, f)
	})
}

// Remove removes finalizer from obj. It reports whether a request was sent.
func Remove(ctx context.Context, c client.Client, obj client.Object, finalizer string) (bool, error) {
	if !controllerutil.ContainsFinalizer(obj, finalizer) {
		return false, nil
	}
	return true, patch(ctx, c, obj, "removing", finalizer, func(o client.Object, f string) bool {
		return controllerutil.RemoveFinalizer(o, f)
	})
}

func patch(ctx context.Context, c client.Client, obj client.Object, verb, finalizer string, change func(client.Object, string) bool) error {
	base := obj.DeepCopyObject().(client.Object)
	change(obj, finalizer)
	if err := c.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("%s the %s finalizer: %w", verb, finalizer, err)
	}
	return nil
}
