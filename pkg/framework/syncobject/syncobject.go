// Package syncobject creates or converges one object the operator owns.
//
// Contract of SyncObject: Get the live object; when it is missing, Create the
// desired object (AlreadyExists is tolerated: a racing reconcile created it);
// when it is being deleted, leave it alone; otherwise build a JSON merge patch
// from the live object in which labels and annotations are merged (keys the
// user added survive, desired keys win), owner references are merged by UID,
// and only the fields the operator owns for that kind are replaced, as decided
// by the kind's Rule in a Registry. A patch that would change nothing is never
// sent, so a reconcile that changes nothing makes no write. The desired object
// is never modified.
package syncobject

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/gantry/pkg/framework/apply"
	"github.com/gantry-dev/gantry/pkg/framework/builder"
)

// Result says what SyncObject did.
type Result string

const (
	// Created means the object did not exist and was created.
	Created Result = "Created"
	// Updated means a non-empty patch was sent.
	Updated Result = "Updated"
	// Unchanged means the live object already matched; no request was sent.
	Unchanged Result = "Unchanged"
	// Skipped means the live object was left alone on purpose (being deleted,
	// immutable, create-only sync, or created concurrently by someone else).
	Skipped Result = "Skipped"
	// Adopted means the create found an object the cache cannot see,
	// controlled by the same owner (e.g. made by the upstream operator Gantry
	// replaced), and it was converged like an existing object: from then on
	// it carries Gantry's labels and the cache sees it.
	Adopted Result = "Adopted"
)

// ErrOwnedByOtherController is returned when the live object has a
// controller owner reference different from the desired one: adopting it
// would steal it from another controller. It is apply's, so callers test
// for one error whichever path wrote.
var ErrOwnedByOtherController = apply.ErrOwnedByOtherController

type options struct {
	registry       *Registry
	optimisticLock bool
	createOnly     bool
	adoptFrom      client.Reader
}

// Option tunes SyncObject.
type Option func(*options)

// WithRegistry uses r instead of the built-in rules to find the kind's Rule.
func WithRegistry(r *Registry) Option { return func(o *options) { o.registry = r } }

// WithOptimisticLock sends the live resourceVersion with the patch so a
// concurrent writer makes the patch fail with a Conflict instead of being
// silently merged.
func WithOptimisticLock() Option { return func(o *options) { o.optimisticLock = true } }

// AdoptFrom lets SyncObject take over an object that exists but that the
// client's cache does not see (its labels are outside the cache's selector,
// as objects made by the upstream operator are): when the create finds it,
// reader (an uncached API reader) reads it, and if its controller owner
// reference is desired's (the same UID), or neither has a controller, it is
// converged like an existing object, Gantry's labels and owners included.
// Anything else is left alone (Skipped).
func AdoptFrom(reader client.Reader) Option { return func(o *options) { o.adoptFrom = reader } }

// CreateOnly creates the object when missing and otherwise never touches it.
func CreateOnly() Option { return func(o *options) { o.createOnly = true } }

// SyncObject converges the live object named by desired towards desired. See
// the package documentation for the contract.
func SyncObject(ctx context.Context, c client.Client, desired client.Object, opts ...Option) (Result, error) {
	o := options{registry: builtins}
	for _, opt := range opts {
		opt(&o)
	}
	if desired.GetName() == "" {
		return "", errors.New("syncobject: desired object has no name")
	}

	existing, err := emptyLike(desired)
	if err != nil {
		return "", err
	}
	err = c.Get(ctx, client.ObjectKeyFromObject(desired), existing)
	rule, ruleErr := o.registry.ruleFor(desired)
	switch {
	case apierrors.IsNotFound(err):
		// Create consumes a copy: the server's response must not leak into
		// the caller's desired object.
		toCreate := desired.DeepCopyObject().(client.Object)
		toCreate.SetResourceVersion("")
		// Running the rule against the object itself stamps whatever
		// bookkeeping it keeps (the owned-fields hash), so the first sync
		// after the create has nothing to patch.
		if ruleErr == nil {
			if err := rule(toCreate, desired); err != nil && !errors.Is(err, ErrLeaveAlone) {
				return "", fmt.Errorf("creating %s: %w", describe(desired), err)
			}
		}
		err := c.Create(ctx, toCreate)
		switch {
		case err == nil:
			return Created, nil
		case !apierrors.IsAlreadyExists(err):
			return "", fmt.Errorf("creating %s: %w", describe(desired), err)
		case o.adoptFrom == nil || o.createOnly:
			// Another reconcile won the race; the next sync converges it.
			return Skipped, nil
		}
		adoptable, err := readAdoptable(ctx, o.adoptFrom, desired, existing)
		if err != nil || !adoptable {
			return Skipped, err
		}
		res, err := converge(ctx, c, existing, desired, rule, ruleErr, o)
		if err != nil || res == Skipped {
			return res, err
		}
		return Adopted, nil
	case err != nil:
		return "", fmt.Errorf("getting %s: %w", describe(desired), err)
	}
	if o.createOnly {
		return Skipped, nil
	}
	return converge(ctx, c, existing, desired, rule, ruleErr, o)
}

// readAdoptable reads the live object into existing through reader and
// reports whether it may be adopted: desired's controller controls it, or
// neither has a controller.
func readAdoptable(ctx context.Context, reader client.Reader, desired, existing client.Object) (bool, error) {
	if err := reader.Get(ctx, client.ObjectKeyFromObject(desired), existing); err != nil {
		if apierrors.IsNotFound(err) {
			// Gone again; the next sync creates it.
			return false, nil
		}
		return false, fmt.Errorf("reading %s to adopt it: %w", describe(desired), err)
	}
	want, have := metav1.GetControllerOfNoCopy(desired), metav1.GetControllerOfNoCopy(existing)
	if want == nil {
		// An object no one controls (e.g. one shared by several owners, as
		// Slinky's workers' Service is, with no owner at all) is taken
		// over under the name Gantry gives its own.
		return have == nil, nil
	}
	return have != nil && want.UID == have.UID, nil
}

// converge patches the live object towards desired (see the package doc).
func converge(ctx context.Context, c client.Client, existing, desired client.Object, rule Rule, ruleErr error, o options) (Result, error) {
	if existing.GetDeletionTimestamp() != nil {
		return Skipped, nil
	}
	if ruleErr != nil {
		return "", ruleErr
	}

	base := existing.DeepCopyObject().(client.Object)
	if err := rule(existing, desired); err != nil {
		if errors.Is(err, ErrLeaveAlone) {
			return Skipped, nil
		}
		return "", fmt.Errorf("syncing %s: %w", describe(desired), err)
	}
	existing.SetLabels(mergeStringMaps(existing.GetLabels(), desired.GetLabels()))
	existing.SetAnnotations(mergeStringMaps(existing.GetAnnotations(), desired.GetAnnotations()))
	refs, err := mergeOwnerReferences(existing.GetOwnerReferences(), desired.GetOwnerReferences())
	if err != nil {
		return "", fmt.Errorf("syncing %s: %w", describe(desired), err)
	}
	existing.SetOwnerReferences(refs)

	var patch client.Patch
	if o.optimisticLock {
		patch = client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})
	} else {
		patch = client.MergeFrom(base)
	}
	if empty, err := isEmptyPatch(base, existing); err != nil {
		return "", err
	} else if empty {
		return Unchanged, nil
	}
	if err := c.Patch(ctx, existing, patch); err != nil {
		return "", fmt.Errorf("patching %s: %w", describe(desired), err)
	}
	return Updated, nil
}

// isEmptyPatch decides emptiness on a plain merge patch: the optimistic-lock
// variant always carries resourceVersion and so is never literally "{}".
func isEmptyPatch(base, modified client.Object) (bool, error) {
	data, err := client.MergeFrom(base).Data(modified)
	if err != nil {
		return false, fmt.Errorf("computing patch: %w", err)
	}
	return bytes.Equal(bytes.TrimSpace(data), []byte("{}")), nil
}

// emptyLike returns a zero object of desired's type. Decoding the live object
// into a fresh value (instead of a copy of desired) guarantees no desired
// field survives where the server has none.
func emptyLike(desired client.Object) (client.Object, error) {
	if u, ok := desired.(*unstructured.Unstructured); ok {
		out := &unstructured.Unstructured{}
		out.SetGroupVersionKind(u.GroupVersionKind())
		return out, nil
	}
	t := reflect.TypeOf(desired)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("syncobject: unsupported object type %T", desired)
	}
	return reflect.New(t.Elem()).Interface().(client.Object), nil
}

func describe(obj client.Object) string {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if kind == "" {
		kind = reflect.TypeOf(obj).Elem().Name()
	}
	if ns := obj.GetNamespace(); ns != "" {
		return fmt.Sprintf("%s %s/%s", kind, ns, obj.GetName())
	}
	return fmt.Sprintf("%s %s", kind, obj.GetName())
}

// mergeStringMaps keeps every live key and lets desired keys win. A nil or
// empty live map is returned as is for two empty inputs, keeping the patch
// free of a spurious "{}" value.
func mergeStringMaps(live, desired map[string]string) map[string]string {
	if len(live) == 0 && len(desired) == 0 {
		return live
	}
	return builder.MergeLabels(live, desired)
}

// mergeOwnerReferences replaces live references with desired ones of the same
// UID and appends new ones. Two different controllers on one object are
// refused because the API server rejects them and adopting would be theft.
func mergeOwnerReferences(live, desired []metav1.OwnerReference) ([]metav1.OwnerReference, error) {
	if len(desired) == 0 {
		return live, nil
	}
	out := make([]metav1.OwnerReference, len(live))
	copy(out, live)
	for _, d := range desired {
		replaced := false
		for i := range out {
			if out[i].UID == d.UID {
				out[i] = *d.DeepCopy()
				replaced = true
				continue
			}
			if isController(d) && isController(out[i]) {
				return nil, fmt.Errorf("%w: %s %s", ErrOwnedByOtherController, out[i].Kind, out[i].Name)
			}
		}
		if !replaced {
			out = append(out, *d.DeepCopy())
		}
	}
	return out, nil
}

func isController(ref metav1.OwnerReference) bool {
	return ref.Controller != nil && *ref.Controller
}
