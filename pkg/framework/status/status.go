package status

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// IgnoredTimeFields are the JSON field names the default comparison skips.
var IgnoredTimeFields = []string{"lastTransitionTime", "lastUpdateTime", "lastProbeTime", "lastHeartbeatTime"}

type options struct {
	equal func(old, updated client.Object) (bool, error)
	hold  func(old, updated client.Object) time.Duration
}

// Option tunes Update.
type Option func(*options)

// WithEqual replaces the default comparison. equal receives the object before
// and after mutate and reports whether they are equal for the purpose of
// writing.
func WithEqual[T client.Object](equal func(old, updated T) bool) Option {
	return func(o *options) {
		o.equal = func(a, b client.Object) (bool, error) { return equal(a.(T), b.(T)), nil }
	}
}

// WithHold lets a change wait (Coalescer): hold receives the object before
// and after mutate once their statuses differ, and a positive duration
// means the status is not written now. Update then reports no write; the
// caller, whose hold saw the duration, asks to be reconciled again by then.
func WithHold[T client.Object](hold func(old, updated T) time.Duration) Option {
	return func(o *options) {
		o.hold = func(a, b client.Object) time.Duration { return hold(a.(T), b.(T)) }
	}
}

// Update runs mutate on a copy of obj and writes the status when it changed
// (and no WithHold holds it). It reports whether a write happened.
func Update[T client.Object](ctx context.Context, c client.Client, obj T, mutate func(T) error, opts ...Option) (bool, error) {
	o := options{equal: StatusEqual}
	for _, opt := range opts {
		opt(&o)
	}
	current := obj
	first := true
	changed := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			fresh, err := emptyLike(obj)
			if err != nil {
				return err
			}
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), fresh); err != nil {
				return err
			}
			current = fresh
		}
		first = false

		next := current.DeepCopyObject().(T)
		if err := mutate(next); err != nil {
			return err
		}
		same, err := o.equal(current, next)
		if err != nil {
			return err
		}
		if same || (o.hold != nil && o.hold(current, next) > 0) {
			// The unwritten copy is dropped: the caller keeps the server's view.
			changed = false
			return nil
		}
		if err := write(ctx, c, current, next); err != nil {
			return err
		}
		changed = true
		current = next
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("updating status of %s: %w", client.ObjectKeyFromObject(obj), err)
	}
	// Copy what was written (or re-read) into the caller's object so it sees
	// the new resourceVersion; T is always a pointer to a struct.
	if any(current) != any(obj) {
		reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(current).Elem())
	}
	return changed, nil
}

func isIgnoredTimeField(name string) bool {
	for _, f := range IgnoredTimeFields {
		if f == name {
			return true
		}
	}
	return false
}

func emptyLike[T client.Object](obj T) (T, error) {
	var zero T
	if u, ok := any(obj).(*unstructured.Unstructured); ok {
		out := &unstructured.Unstructured{}
		out.SetGroupVersionKind(u.GroupVersionKind())
		return any(out).(T), nil
	}
	t := reflect.TypeOf(obj)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return zero, fmt.Errorf("status: unsupported object type %T", obj)
	}
	return reflect.New(t.Elem()).Interface().(T), nil
}

// write sends the change from current's status to next's as a JSON merge
// patch (RFC 7386) of the status subresource, with current's
// resourceVersion as a precondition, and decodes the object the server
// returns into next.
//
// Not an Update: that sends the whole object, spec included (pod
// templates), for the API server to decode and then ignore, and
// encoding/json builds its encoders for every type of the object on the
// first write (0.2 MB for a training job). The patch is built through the
// unstructured converter from the status alone, and the response is
// decoded by the API machinery's decoder, whose cache the manager's watches
// have filled.
func write(ctx context.Context, c client.Client, current, next client.Object) error {
	before, err := statusMap(current)
	if err != nil {
		return err
	}
	after, err := statusMap(next)
	if err != nil {
		return err
	}
	body := map[string]any{}
	if diff := mergePatch(before, after); len(diff) > 0 {
		body["status"] = diff
	}
	if rv := current.GetResourceVersion(); rv != "" {
		body["metadata"] = map[string]any{"resourceVersion": rv}
	}
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	return c.Status().Patch(ctx, next, client.RawPatch(types.MergePatchType, data))
}

// statusMap is obj's status as JSON values (nil when it has none).
func statusMap(obj client.Object) (map[string]any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		m, _ := u.Object["status"].(map[string]any)
		return m, nil
	}
	f, err := statusField(obj)
	if err != nil {
		return nil, err
	}
	if f.Kind() == reflect.Pointer {
		if f.IsNil() {
			return nil, nil
		}
		f = f.Elem()
	}
	if f.Kind() != reflect.Struct || !f.CanAddr() {
		return nil, fmt.Errorf("status: the Status field of %T is not a struct", obj)
	}
	return runtime.DefaultUnstructuredConverter.ToUnstructured(f.Addr().Interface())
}

// mergePatch is the JSON merge patch from before to after: the keys whose
// value changed (objects compared key by key, anything else replaced
// whole, as RFC 7386 replaces lists) and null for the keys after lacks.
func mergePatch(before, after map[string]any) map[string]any {
	patch := map[string]any{}
	for k, a := range after {
		b, had := before[k]
		if had {
			bm, bIsObject := b.(map[string]any)
			am, aIsObject := a.(map[string]any)
			if bIsObject && aIsObject {
				if sub := mergePatch(bm, am); len(sub) > 0 {
					patch[k] = sub
				}
				continue
			}
			if reflect.DeepEqual(a, b) {
				continue
			}
		}
		patch[k] = a
	}
	for k := range before {
		if _, kept := after[k]; !kept {
			patch[k] = nil
		}
	}
	return patch
}
