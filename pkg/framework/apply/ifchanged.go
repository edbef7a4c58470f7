package apply

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// AnnotationAppliedHash records on an applied object the hash of the apply
// body that last produced it. A body whose hash differs (a field added,
// changed or removed from the desired object) is applied again.
const AnnotationAppliedHash = "gantry.dev/applied-hash"

// ApplyIfChanged applies obj unless live, the object as last observed (from
// the informer cache; nil when it does not exist), already reflects it: live
// carries the hash of the same apply body, and every field the body sets has
// the same value on live. The second check is what corrects drift — someone
// editing a field Gantry owns makes live differ and triggers an apply that
// takes it back — while the hash catches fields removed from the desired
// object, which a containment check cannot see. A reconcile in which nothing
// changed therefore sends no request at all.
//
// Drift is taken back only where server-side apply can: a list entry keyed
// differently (a Service port renumbered by hand is a new entry keyed by
// port and protocol) belongs to whoever added it.
//
// It reports whether a request was sent. On an apply, obj is overwritten with
// the server's object as in Apply.
func (a Applier) ApplyIfChanged(ctx context.Context, obj client.Object, live client.Object) (bool, error) {
	if err := a.check(); err != nil {
		return false, err
	}
	withHash, hash, err := a.hashedBody(obj)
	if err != nil {
		return false, err
	}

	if live != nil && !isNil(live) && live.GetDeletionTimestamp() == nil {
		want := runtime.DeepCopyJSON(withHash.Object)
		// A typed live object read from the cache has no apiVersion/kind.
		delete(want, "apiVersion")
		delete(want, "kind")
		same, err := a.holdsBody(ctx, live, dropZeroScalars(want), hash)
		if err != nil || same {
			return false, err
		}
	}
	if a.Creates && live != nil && !isNil(live) {
		// Fields a Create wrote stay with FieldOwner's update entry, which
		// this apply could not remove them from.
		if err := a.upgradeManagedFields(ctx, live, a.FieldOwner); err != nil {
			return false, err
		}
	}
	if err := a.Apply(ctx, withHash); err != nil {
		return false, err
	}
	a.Trimmed.record(obj, withHash, hash)
	return true, setFrom(obj, withHash, "applied")
}

// hashedBody is obj as an apply request's body, with the applied-hash
// annotation of that body (without the annotation), and the hash.
func (a Applier) hashedBody(obj client.Object) (*unstructured.Unstructured, string, error) {
	body, err := ToApplyObject(obj, a.Client.Scheme())
	if err != nil {
		return nil, "", err
	}
	hash, err := bodyHash(body)
	if err != nil {
		return nil, "", err
	}
	ann := body.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[AnnotationAppliedHash] = hash
	body.SetAnnotations(ann)
	return body, hash, nil
}

// setFrom overwrites obj with u, the server's object after a write (what
// says which write, for the error).
func setFrom(obj client.Object, u *unstructured.Unstructured, what string) error {
	if tu, ok := obj.(*unstructured.Unstructured); ok {
		tu.Object = u.Object
		return nil
	}
	v := reflect.ValueOf(obj).Elem()
	v.Set(reflect.Zero(v.Type()))
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return fmt.Errorf("decoding the %s %s: %w", what, u.GetKind(), err)
	}
	return nil
}

// Contains reports whether every field of want is present in have with an
// equal value: maps are compared key by key (extra keys in have are fine —
// server defaults and other managers' fields), lists element by element with
// equal length, scalars by value.
func Contains(have, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			hv, ok := h[k]
			if !ok || !Contains(hv, wv) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return false
		}
		for i := range w {
			if !Contains(h[i], w[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(normalizeNumber(have), normalizeNumber(want))
	}
}

// dropZeroScalars removes 0, "" and false leaves. Typed structs serialise
// unset non-omitempty fields as zero values (a Service port's targetPort: 0)
// which the server then defaults, so comparing them would see drift on every
// reconcile. The cost is that drift of a field Gantry sets to a zero value is
// only corrected when the desired object itself changes.
func dropZeroScalars(m map[string]any) map[string]any {
	for k, v := range m {
		switch x := v.(type) {
		case map[string]any:
			dropZeroScalars(x)
		case []any:
			for _, e := range x {
				if em, ok := e.(map[string]any); ok {
					dropZeroScalars(em)
				}
			}
		case string:
			if x == "" {
				delete(m, k)
			}
		case bool:
			if !x {
				delete(m, k)
			}
		case int64:
			if x == 0 {
				delete(m, k)
			}
		case float64:
			if x == 0 {
				delete(m, k)
			}
		}
	}
	return m
}

// normalizeNumber makes int64 and float64 encodings of one JSON number compare equal.
func normalizeNumber(v any) any {
	switch n := v.(type) {
	case int64:
		return float64(n)
	case int:
		return float64(n)
	case int32:
		return float64(n)
	}
	return v
}

func bodyHash(u *unstructured.Unstructured) (string, error) {
	// encoding/json sorts map keys, so the hash is stable.
	b, err := json.Marshal(u.Object)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16], nil
}

func toContent(obj client.Object) (map[string]any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.Object, nil
	}
	return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
}

func isNil(obj client.Object) bool {
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Ptr && v.IsNil()
}
