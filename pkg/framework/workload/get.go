package workload

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// GetOrForget is how a reconcile starts: it reads the object req names
// into obj. When the object is gone, forget (when not nil) drops what the
// reconciler keeps about it — expectations, metric series — and found is
// false with no error: there is nothing left to reconcile.
func GetOrForget(ctx context.Context, c client.Reader, req ctrl.Request, obj client.Object, forget func()) (found bool, err error) {
	err = c.Get(ctx, req.NamespacedName, obj)
	if apierrors.IsNotFound(err) {
		if forget != nil {
			forget()
		}
		return false, nil
	}
	return err == nil, err
}
