package refresolver

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ObjectRef names an object; an empty Namespace means the default namespace
// passed alongside.
type ObjectRef struct {
	Namespace string
	Name      string
}

// NotFoundError reports a reference that does not resolve. Key is empty when
// the object itself is missing and names the key when only the key is.
type NotFoundError struct {
	Kind      string
	Namespace string
	Name      string
	Key       string
	cause     error
}

func (e *NotFoundError) Error() string {
	if e.Key != "" {
		return fmt.Sprintf("key %q not found in %s %s/%s", e.Key, e.Kind, e.Namespace, e.Name)
	}
	return fmt.Sprintf("%s %s/%s not found", e.Kind, e.Namespace, e.Name)
}

func (e *NotFoundError) Unwrap() error { return e.cause }

// IsNotFound reports whether err is a NotFoundError, for a missing object or
// a missing key.
func IsNotFound(err error) bool {
	var nf *NotFoundError
	return errors.As(err, &nf)
}

// Get fetches the object ref names as a T (a pointer to an API struct).
func Get[T client.Object](ctx context.Context, r client.Reader, ref ObjectRef, defaultNamespace string) (T, error) {
	var zero T
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return zero, fmt.Errorf("refresolver: unsupported type %v", t)
	}
	kind := t.Elem().Name()
	if ref.Name == "" {
		return zero, fmt.Errorf("refresolver: empty %s reference", kind)
	}
	ns := ref.Namespace
	if ns == "" {
		ns = defaultNamespace
	}
	obj := reflect.New(t.Elem()).Interface().(T)
	if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return zero, &NotFoundError{Kind: kind, Namespace: ns, Name: ref.Name, cause: err}
		}
		return zero, fmt.Errorf("getting %s %s/%s: %w", kind, ns, ref.Name, err)
	}
	return obj, nil
}

// Resolver bundles a reader for the common lookups.
type Resolver struct {
	Reader client.Reader
}

// New returns a Resolver reading through r (usually the manager's cache).
func New(r client.Reader) *Resolver { return &Resolver{Reader: r} }

// GetSecret fetches a Secret.
func (r *Resolver) GetSecret(ctx context.Context, ref ObjectRef, defaultNamespace string) (*corev1.Secret, error) {
	return Get[*corev1.Secret](ctx, r.Reader, ref, defaultNamespace)
}

// GetConfigMap fetches a ConfigMap.
func (r *Resolver) GetConfigMap(ctx context.Context, ref ObjectRef, defaultNamespace string) (*corev1.ConfigMap, error) {
	return Get[*corev1.ConfigMap](ctx, r.Reader, ref, defaultNamespace)
}

// GetSecretKey returns the value of sel's key in the Secret in namespace ns.
// An optional selector whose Secret or key is missing yields (nil, nil).
func (r *Resolver) GetSecretKey(ctx context.Context, ns string, sel corev1.SecretKeySelector) ([]byte, error) {
	optional := ptr.Deref(sel.Optional, false)
	secret, err := r.GetSecret(ctx, ObjectRef{Name: sel.Name}, ns)
	if err != nil {
		if optional && IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	if v, ok := secret.Data[sel.Key]; ok {
		return v, nil
	}
	// stringData is only seen before the server folds it into data (fake
	// clients, objects read from a local source).
	if v, ok := secret.StringData[sel.Key]; ok {
		return []byte(v), nil
	}
	if optional {
		return nil, nil
	}
	return nil, &NotFoundError{Kind: "Secret", Namespace: ns, Name: sel.Name, Key: sel.Key}
}

// GetConfigMapKey returns the value of sel's key in the ConfigMap in namespace
// ns, looking in data and then binaryData. An optional selector whose
// ConfigMap or key is missing yields ("", nil).
func (r *Resolver) GetConfigMapKey(ctx context.Context, ns string, sel corev1.ConfigMapKeySelector) (string, error) {
	optional := ptr.Deref(sel.Optional, false)
	cm, err := r.GetConfigMap(ctx, ObjectRef{Name: sel.Name}, ns)
	if err != nil {
		if optional && IsNotFound(err) {
			return "", nil
		}
		return "", err
	}
	if v, ok := cm.Data[sel.Key]; ok {
		return v, nil
	}
	if v, ok := cm.BinaryData[sel.Key]; ok {
		return string(v), nil
	}
	if optional {
		return "", nil
	}
	return "", &NotFoundError{Kind: "ConfigMap", Namespace: ns, Name: sel.Name, Key: sel.Key}
}
