package syncobject

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Rule copies the fields the operator owns for one kind from desired onto
// existing, a private copy of the live object that becomes the patch target.
// Metadata (labels, annotations, owner references) is merged by SyncObject,
// not by rules. A rule returns ErrLeaveAlone when the live object must not be
// touched at all.
type Rule func(existing, desired client.Object) error

// ErrLeaveAlone, returned by a Rule, makes SyncObject send nothing and report
// Skipped. It is a signal, not a failure.
var ErrLeaveAlone = errors.New("syncobject: leave the live object alone")

// ErrNoRule is returned for a kind that has no registered rule and no Spec.
var ErrNoRule = errors.New("syncobject: no sync rule for kind")

// AnnotationOwnedFieldsHash records the hash of the owned fields last written
// for kinds whose owned fields the server defaults (pod templates, CR specs).
// Comparing hashes detects every change of desired state, removals included,
// which a comparison against the defaulted live object cannot.
const AnnotationOwnedFieldsHash = "gantry.dev/owned-fields-hash"

// Registry maps object types (typed objects) and GroupVersionKinds
// (unstructured objects) to their Rule.
type Registry struct {
	mu     sync.RWMutex
	byType map[reflect.Type]Rule
	byGVK  map[schema.GroupVersionKind]Rule
}

// NewRegistry returns a registry holding the built-in rules for core kinds.
func NewRegistry() *Registry {
	r := &Registry{byType: map[reflect.Type]Rule{}, byGVK: map[schema.GroupVersionKind]Rule{}}
	registerBuiltins(r)
	return r
}

// builtins holds the built-in rules, used unless WithRegistry says
// otherwise. Nothing registers into it: a caller with rules of its own
// passes its own Registry.
var builtins = NewRegistry()

// Register sets the rule for objects of the same Go type as example.
func (r *Registry) Register(example client.Object, rule Rule) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byType[reflect.TypeOf(example)] = rule
}

// RegisterGVK sets the rule for unstructured objects of gvk.
func (r *Registry) RegisterGVK(gvk schema.GroupVersionKind, rule Rule) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byGVK[gvk] = rule
}

// TypedRule adapts a rule written for one concrete type.
func TypedRule[T client.Object](f func(existing, desired T) error) Rule {
	return func(existing, desired client.Object) error {
		e, ok1 := existing.(T)
		d, ok2 := desired.(T)
		if !ok1 || !ok2 {
			return fmt.Errorf("syncobject: rule for %T got %T and %T", *new(T), existing, desired)
		}
		return f(e, d)
	}
}

// ruleFor falls back to SpecRule for objects with a spec (the operator's own
// CRs), so adding a CR kind needs no registration.
func (r *Registry) ruleFor(obj client.Object) (Rule, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if u, ok := obj.(*unstructured.Unstructured); ok {
		if rule, ok := r.byGVK[u.GroupVersionKind()]; ok {
			return rule, nil
		}
		return SpecRule, nil
	}
	if rule, ok := r.byType[reflect.TypeOf(obj)]; ok {
		return rule, nil
	}
	if _, ok := specField(obj); ok {
		return SpecRule, nil
	}
	return nil, fmt.Errorf("%w %T", ErrNoRule, obj)
}

// SpecRule treats spec as wholly owned: it is replaced when desired's spec
// changed since the last write (hash annotation) or when a field desired sets
// drifted in the live object. Fields the server defaulted are not drift.
func SpecRule(existing, desired client.Object) error {
	if du, ok := desired.(*unstructured.Unstructured); ok {
		eu := existing.(*unstructured.Unstructured)
		dSpec, dHas := du.Object["spec"]
		if !dHas {
			return nil
		}
		eSpec := eu.Object["spec"]
		return replaceOwned(existing, dSpec, eSpec, func() {
			eu.Object["spec"] = runtime.DeepCopyJSONValue(dSpec)
		})
	}
	dv, ok := specField(desired)
	if !ok {
		return fmt.Errorf("%w %T", ErrNoRule, desired)
	}
	ev, _ := specField(existing)
	return replaceOwned(existing, dv.Interface(), ev.Interface(), func() {
		ev.Set(deepCopyValue(dv))
	})
}

// replaceOwned runs replace when the owned fields must be rewritten and then
// stamps their hash on existing.
func replaceOwned(existing client.Object, desiredOwned, liveOwned any, replace func()) error {
	hash, err := hashOf(desiredOwned)
	if err != nil {
		return err
	}
	if existing.GetAnnotations()[AnnotationOwnedFieldsHash] == hash &&
		Derivative(desiredOwned, liveOwned) {
		return nil
	}
	replace()
	ann := existing.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[AnnotationOwnedFieldsHash] = hash
	existing.SetAnnotations(ann)
	return nil
}

func hashOf(v any) (string, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("hashing owned fields: %w", err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8]), nil
}

func specField(obj client.Object) (reflect.Value, bool) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	f := v.Elem().FieldByName("Spec")
	if !f.IsValid() || !f.CanSet() {
		return reflect.Value{}, false
	}
	return f, true
}

// deepCopyValue copies a Spec value through its generated DeepCopy when there
// is one, so the live object never aliases desired's maps and slices.
func deepCopyValue(v reflect.Value) reflect.Value {
	if v.CanAddr() {
		if m := v.Addr().MethodByName("DeepCopy"); m.IsValid() && m.Type().NumIn() == 0 && m.Type().NumOut() == 1 {
			out := m.Call(nil)[0]
			if out.Kind() == reflect.Pointer && out.Elem().Type() == v.Type() {
				return out.Elem()
			}
		}
	}
	// No generated DeepCopy: round-trip through JSON.
	ptr := reflect.New(v.Type())
	data, err := json.Marshal(v.Interface())
	if err == nil && json.Unmarshal(data, ptr.Interface()) == nil {
		return ptr.Elem()
	}
	return v
}
