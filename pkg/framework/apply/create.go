package apply

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Create creates desired as ApplyIfChanged would apply it (the same body,
// with its applied-hash annotation, so the next reconcile sees it as
// current and sends nothing), but with a plain create under FieldOwner:
// it reports false, and changes nothing, when an object of that name
// already exists. For an object the cache does not show when someone
// else made it (a user's, or one the upstream operator made), this is
// the first request instead of a read past the cache and then an apply,
// and a create costs the API server less than an apply. The caller reads
// an object that exists and goes on as Ensure does. On a create, desired
// holds the server's object.
//
// The fields a create writes belong to FieldOwner's update entry, which
// a later apply would neither change nor remove: an Applier that creates
// sets Creates, so that every apply over an existing object first moves
// them into its apply entry (csaupgrade).
func (a Applier) Create(ctx context.Context, desired client.Object) (bool, error) {
	if err := a.check(); err != nil {
		return false, err
	}
	body, hash, err := a.hashedBody(desired)
	if err != nil {
		return false, err
	}
	if err := a.Client.Create(ctx, body, client.FieldOwner(a.FieldOwner)); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return false, nil
		}
		return false, fmt.Errorf("creating %s %s/%s: %w", body.GetKind(), body.GetNamespace(), body.GetName(), err)
	}
	a.Trimmed.record(desired, body, hash)
	return true, setFrom(desired, body, "created")
}
