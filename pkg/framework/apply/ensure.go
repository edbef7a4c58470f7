package apply

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/csaupgrade"
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
	// Foreign means the object exists and is not desired's controller's
	// (EnsureOwn): it was left as it is.
	Foreign Result = "Foreign"
)

// ErrOwnedByOtherController is returned when the live object has a
// controller owner reference other than desired's: taking it over would
// steal it from another controller.
var ErrOwnedByOtherController = errors.New("object is controlled by another owner")

// Ensure is the one way a reconciler writes an object it owns: it reads the
// live object (through Reader or Client, the cache for typed objects, and
// through Uncached when that does not find it), refuses one that another
// controller owns, upgrades the managedFields of one it never applied
// (UpgradeFrom), keeps the live values of fields the API server never lets
// change, and applies desired unless the live object already reflects it
// (ApplyIfChanged), so a converged reconcile sends nothing. An object
// without a controller is taken over.
//
// It returns what it did and the live object as read, nil when there was
// none. When it applied, desired holds the server's object.
func (a Applier) Ensure(ctx context.Context, desired client.Object) (Result, client.Object, error) {
	live, err := a.live(ctx, desired)
	if err != nil {
		return "", nil, err
	}
	return a.ensureFrom(ctx, desired, live)
}

// ensureFrom is Ensure with the live object already read (nil: none).
func (a Applier) ensureFrom(ctx context.Context, desired, live client.Object) (Result, client.Object, error) {
	if live != nil && !MayTakeOver(live, desired) {
		owner := metav1.GetControllerOfNoCopy(live)
		return "", live, fmt.Errorf("%w: %s %s is controlled by %s %s", ErrOwnedByOtherController,
			kindOf(desired), desired.GetName(), owner.Kind, owner.Name)
	}
	if live != nil && len(a.UpgradeFrom) > 0 && live.GetAnnotations()[AnnotationAppliedHash] == "" {
		if err := a.upgradeManagedFields(ctx, live, a.UpgradeFrom...); err != nil {
			return "", live, err
		}
	}
	if live != nil {
		keepImmutable(live, desired)
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

// EnsureOwn is Ensure for an object a user may have made under the same
// name for the workload to use (a ServiceAccount with cloud identity
// annotations, a Role): it writes the object only when it does not exist or
// desired's controller (by UID) already controls it, and otherwise leaves
// it untouched and returns Foreign with the live object. Taking such an
// object over would make the workload's garbage collection delete the
// user's object with it.
func (a Applier) EnsureOwn(ctx context.Context, desired client.Object) (Result, client.Object, error) {
	live, err := a.live(ctx, desired)
	if err != nil {
		return "", nil, err
	}
	return a.EnsureOwnFrom(ctx, desired, live)
}

// EnsureOwnFrom is EnsureOwn for a caller that has already read the live
// object (nil: it does not exist), as Reader then Uncached would have, so
// that a step which looks at it first does not make the API server answer
// twice.
func (a Applier) EnsureOwnFrom(ctx context.Context, desired, live client.Object) (Result, client.Object, error) {
	if live != nil {
		owner, want := metav1.GetControllerOfNoCopy(live), metav1.GetControllerOfNoCopy(desired)
		if owner == nil || want == nil || owner.UID != want.UID {
			return Foreign, live, nil
		}
	}
	// The same read decides the write: reading again would cost an
	// uncached object a second request to the API server.
	return a.ensureFrom(ctx, desired, live)
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

// live reads the object named by desired through Reader (or Client), and
// through Uncached when that does not find it, or returns nil when it does
// not exist.
func (a Applier) live(ctx context.Context, desired client.Object) (client.Object, error) {
	var reader client.Reader = a.Client
	if a.Reader != nil {
		reader = a.Reader
	}
	live, err := get(ctx, reader, desired)
	if live == nil && err == nil && a.Uncached != nil {
		live, err = get(ctx, a.Uncached, desired)
	}
	return live, err
}

func get(ctx context.Context, reader client.Reader, desired client.Object) (client.Object, error) {
	live := emptyLike(desired)
	if err := reader.Get(ctx, client.ObjectKeyFromObject(desired), live); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading %s %s: %w", kindOf(desired), client.ObjectKeyFromObject(desired), err)
	}
	return live, nil
}

// emptyLike returns a zero object of obj's type (of its kind, for an
// unstructured one).
func emptyLike(obj client.Object) client.Object {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		out := &unstructured.Unstructured{}
		out.SetGroupVersionKind(u.GroupVersionKind())
		return out
	}
	return reflect.New(reflect.TypeOf(obj).Elem()).Interface().(client.Object)
}

// upgradeManagedFields moves the fields that the managers (UpgradeFrom's,
// or FieldOwner's own for an Applier that Creates) wrote with create,
// update or patch into the applier's own apply entry (csaupgrade): for
// UpgradeFrom once, before the first apply to an object (one that carries
// no applied-hash annotation was never applied by Gantry). Without
// it the old entries would keep every field they ever wrote: a field that
// desired no longer sets would stay forever (orphaned), owned by a manager
// that no longer writes. The cache strips managedFields, so they are read
// through Uncached when live has none. The patch carries live's
// resourceVersion, so a concurrent write makes it a Conflict and the
// reconcile is retried.
func (a Applier) upgradeManagedFields(ctx context.Context, live client.Object, managers ...string) error {
	obj := live
	if len(obj.GetManagedFields()) == 0 && a.Uncached != nil {
		full, err := get(ctx, a.Uncached, live)
		if err != nil || full == nil {
			return err
		}
		obj = full
	}
	patch, err := csaupgrade.UpgradeManagedFieldsPatch(obj, sets.New(managers...), a.FieldOwner)
	if err != nil || patch == nil {
		return err
	}
	if err := a.Client.Patch(ctx, emptyLikeKeyed(obj), client.RawPatch(types.JSONPatchType, patch)); err != nil {
		return fmt.Errorf("moving the fields of %s %s to server-side apply: %w", kindOf(obj), client.ObjectKeyFromObject(obj), err)
	}
	return nil
}

// emptyLikeKeyed is an object of obj's type and name, for a request whose
// body is not the object (a JSON patch); the response lands in it.
func emptyLikeKeyed(obj client.Object) client.Object {
	out := emptyLike(obj)
	out.SetNamespace(obj.GetNamespace())
	out.SetName(obj.GetName())
	return out
}

func kindOf(obj client.Object) string {
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	return reflect.TypeOf(obj).Elem().Name()
}
