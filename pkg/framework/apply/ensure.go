package apply

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Result says what Ensure did.
type Result string

const (
	// Created means the object did not exist and was applied.
	Created Result = "Created"
	// Updated means the live object differed and desired was applied.
	Updated Result = "Updated"
	// Unchanged means the live object already matched; no request was sent.
	Unchanged Result = "Unchanged"
)

// ErrOwnedByOtherController is returned when the live object has a
// controller owner reference other than desired's: taking it over would
// steal it from another controller.
var ErrOwnedByOtherController = errors.New("object is controlled by another owner")

// Ensure is the one way a reconciler writes an object it owns: it reads the
// live object through the applier's client (the cache, for typed objects),
// refuses one that another controller owns, and applies desired unless the
// live object already reflects it (ApplyIfChanged), so a converged reconcile
// sends nothing. An object without a controller is taken over.
//
// It returns what it did and the live object as read, nil when there was
// none. When it applied, desired holds the server's object.
func (a Applier) Ensure(ctx context.Context, desired client.Object) (Result, client.Object, error) {
	live, err := a.live(ctx, desired)
	if err != nil {
		return "", nil, err
	}
	if live != nil && !MayTakeOver(live, desired) {
		owner := metav1.GetControllerOfNoCopy(live)
		return "", live, fmt.Errorf("%w: %s %s is controlled by %s %s", ErrOwnedByOtherController,
			kindOf(desired), desired.GetName(), owner.Kind, owner.Name)
	}
	sent, err := a.ApplyIfChanged(ctx, desired, live)
	switch {
	case err != nil:
		return "", live, err
	case !sent:
		return Unchanged, live, nil
	case live == nil:
		return Created, nil, nil
	}
	return Updated, live, nil
}

// MayTakeOver reports whether desired may be written over live: live has
// no controller, or the same controller (by UID) as desired.
func MayTakeOver(live, desired client.Object) bool {
	owner := metav1.GetControllerOfNoCopy(live)
	if owner == nil {
		return true
	}
	want := metav1.GetControllerOfNoCopy(desired)
	return want != nil && want.UID == owner.UID
}

// live reads the object named by desired, or returns nil when it does not
// exist.
func (a Applier) live(ctx context.Context, desired client.Object) (client.Object, error) {
	var live client.Object
	if u, ok := desired.(*unstructured.Unstructured); ok {
		lu := &unstructured.Unstructured{}
		lu.SetGroupVersionKind(u.GroupVersionKind())
		live = lu
	} else {
		live = reflect.New(reflect.TypeOf(desired).Elem()).Interface().(client.Object)
	}
	if err := a.Client.Get(ctx, client.ObjectKeyFromObject(desired), live); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading %s %s: %w", kindOf(desired), client.ObjectKeyFromObject(desired), err)
	}
	return live, nil
}

func kindOf(obj client.Object) string {
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	return reflect.TypeOf(obj).Elem().Name()
}
