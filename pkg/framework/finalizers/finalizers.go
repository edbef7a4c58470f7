// Package finalizers adds and removes an object's finalizers without ever
// dropping one another controller added meanwhile.
//
// Contract: a change is sent as a merge patch of metadata.finalizers that
// carries the resourceVersion it was computed from. A merge patch replaces
// the whole list, so without the lock a finalizer another controller added
// since our read would be lost; with it the API server answers Conflict,
// and the caller's next reconcile starts from a fresh read. Nothing is sent
// when the finalizer is already as asked. On success obj is what the server
// returned.
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
