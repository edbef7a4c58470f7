package apply

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Applier applies objects as one field manager.
type Applier struct {
	Client     client.Client
	FieldOwner string
	// Reader, when set, is where Ensure reads live objects instead of
	// Client: an uncached reader for a kind the cache holds only as
	// metadata (Secrets).
	Reader client.Reader
	// Uncached, when set, is read when the object is not found through
	// Reader: an object outside the cache's label selector (one the
	// upstream operator made) is then seen, and taken over in place
	// rather than applied blind. It also reads managedFields, which the
	// cache strips, for UpgradeFrom.
	Uncached client.Reader
	// UpgradeFrom names the field managers under which this controller
	// once wrote with create, update or patch. Before the first apply to
	// an object, their entries become this applier's apply entry
	// (csaupgrade), so that nothing they wrote is orphaned or fought over.
	UpgradeFrom []string
	// Creates says that this controller also creates objects with Create,
	// whose fields land in FieldOwner's update entry: before every apply
	// over an existing object, its managedFields are read through
	// Uncached and that entry, if any, becomes the apply entry. It costs a
	// read on the applies that change something, never on a reconcile
	// that sends nothing.
	Creates bool
	// Trimmed, when set, names the kinds the cache holds without their
	// spec; ApplyIfChanged then verifies their spec by generation, and
	// past the cache when the generation moved.
	Trimmed *Trimmed
}

// Apply server-side-applies obj and, on success, overwrites obj with the
// object the server returned (new resourceVersion, defaulted fields).
// Every field set in obj is asserted: zero values that serialise (a false
// bool without omitempty, an empty struct) are owned too, so build obj with
// only the fields the controller means to own.
func (a Applier) Apply(ctx context.Context, obj client.Object) error {
	if err := a.check(); err != nil {
		return err
	}
	u, err := ToApplyObject(obj, a.Client.Scheme())
	if err != nil {
		return err
	}
	if err := a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), a.options()...); err != nil {
		return fmt.Errorf("applying %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	if tu, ok := obj.(*unstructured.Unstructured); ok {
		tu.Object = u.Object
		return nil
	}
	// Zero obj first so fields the server no longer has do not survive.
	v := reflect.ValueOf(obj).Elem()
	v.Set(reflect.Zero(v.Type()))
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return fmt.Errorf("decoding the applied %s: %w", u.GetKind(), err)
	}
	return nil
}

func (a Applier) check() error {
	if a.Client == nil {
		return errors.New("apply: Applier has no client")
	}
	if a.FieldOwner == "" {
		return errors.New("apply: Applier has no field owner")
	}
	if a.Trimmed != nil && a.Trimmed.reader == nil {
		return errors.New("apply: Applier's Trimmed kinds have no uncached reader to verify them with")
	}
	if a.Creates && a.Uncached == nil {
		return errors.New("apply: an Applier that Creates needs Uncached to read managedFields past the cache")
	}
	return nil
}

func (a Applier) options() []client.ApplyOption {
	return []client.ApplyOption{client.FieldOwner(a.FieldOwner), client.ForceOwnership}
}

// ToApplyObject converts obj into the unstructured body of an apply request.
// It never modifies obj.
func ToApplyObject(obj client.Object, scheme *runtime.Scheme) (*unstructured.Unstructured, error) {
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return nil, fmt.Errorf("apply: resolving the kind of %T: %w", obj, err)
	}
	var content map[string]any
	if u, ok := obj.(*unstructured.Unstructured); ok {
		content = runtime.DeepCopyJSON(u.Object)
	} else {
		content, err = runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return nil, fmt.Errorf("apply: converting %T: %w", obj, err)
		}
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(gvk)
	delete(u.Object, "status")
	if md, ok := u.Object["metadata"].(map[string]any); ok {
		for _, f := range []string{"managedFields", "resourceVersion", "uid", "creationTimestamp", "generation", "selfLink"} {
			delete(md, f)
		}
	}
	dropNulls(u.Object)
	if u.GetName() == "" {
		return nil, fmt.Errorf("apply: %s has no name", gvk.Kind)
	}
	return u, nil
}

// dropNulls removes null values, which typed structs emit for unset
// non-omitempty fields (nested creationTimestamp) and which in an apply body
// would read as "I own this field and want it empty".
func dropNulls(m map[string]any) {
	for k, v := range m {
		switch tv := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			dropNulls(tv)
		case []any:
			for _, item := range tv {
				if im, ok := item.(map[string]any); ok {
					dropNulls(im)
				}
			}
		}
	}
}
