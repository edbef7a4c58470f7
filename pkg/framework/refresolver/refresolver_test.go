package refresolver

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func objects() []client.Object {
	return []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "jwt", Namespace: "slurm"}, Data: map[string][]byte{"jwt.key": []byte("k1")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "jwt", Namespace: "other"}, Data: map[string][]byte{"jwt.key": []byte("k2")}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "conf", Namespace: "slurm"},
			Data: map[string]string{"a": "1"}, BinaryData: map[string][]byte{"b": []byte("2")}},
	}
}

func TestGetSecretKey(t *testing.T) {
	tests := []struct {
		name         string
		ns           string
		sel          corev1.SecretKeySelector
		want         string
		wantNotFound bool
		wantKeyErr   bool
		wantAPINF    bool
	}{
		{name: "key resolved in the given namespace", ns: "slurm", sel: sel("jwt", "jwt.key", false), want: "k1"},
		{name: "namespace decides which secret", ns: "other", sel: sel("jwt", "jwt.key", false), want: "k2"},
		{name: "missing secret", ns: "slurm", sel: sel("nope", "jwt.key", false), wantNotFound: true, wantAPINF: true},
		{name: "missing key", ns: "slurm", sel: sel("jwt", "nope", false), wantNotFound: true, wantKeyErr: true},
		{name: "optional missing secret", ns: "slurm", sel: sel("nope", "jwt.key", true)},
		{name: "optional missing key", ns: "slurm", sel: sel("jwt", "nope", true)},
	}
	r := New(fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(objects()...).Build())
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := r.GetSecretKey(context.Background(), tc.ns, tc.sel)
			if IsNotFound(err) != tc.wantNotFound || isKeyNotFound(err) != tc.wantKeyErr || apierrors.IsNotFound(err) != tc.wantAPINF {
				t.Fatalf("err = %v: IsNotFound=%v IsKeyNotFound=%v apierrors.IsNotFound=%v", err, IsNotFound(err), isKeyNotFound(err), apierrors.IsNotFound(err))
			}
			if !tc.wantNotFound && err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("value = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestGetConfigMapKey(t *testing.T) {
	cmSel := func(name, key string, optional bool) corev1.ConfigMapKeySelector {
		return corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key, Optional: ptr.To(optional)}
	}
	tests := []struct {
		name       string
		sel        corev1.ConfigMapKeySelector
		want       string
		wantErrKey string // "" no error; "object" or "key"
	}{
		{name: "data key", sel: cmSel("conf", "a", false), want: "1"},
		{name: "binaryData key", sel: cmSel("conf", "b", false), want: "2"},
		{name: "missing key", sel: cmSel("conf", "c", false), wantErrKey: "key"},
		{name: "missing configmap", sel: cmSel("gone", "a", false), wantErrKey: "object"},
		{name: "optional missing configmap", sel: cmSel("gone", "a", true)},
	}
	r := New(fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(objects()...).Build())
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := r.GetConfigMapKey(context.Background(), "slurm", tc.sel)
			var nf *NotFoundError
			switch tc.wantErrKey {
			case "":
				if err != nil {
					t.Fatal(err)
				}
			case "key":
				if !errors.As(err, &nf) || nf.Key != tc.sel.Key || nf.Kind != "ConfigMap" || nf.Namespace != "slurm" {
					t.Fatalf("err = %#v", err)
				}
			case "object":
				if !errors.As(err, &nf) || nf.Key != "" || nf.Name != tc.sel.Name || isKeyNotFound(err) {
					t.Fatalf("err = %#v", err)
				}
			}
			if got != tc.want {
				t.Errorf("value = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestGetDefaultsNamespace(t *testing.T) {
	tests := []struct {
		name      string
		ref       ObjectRef
		defaultNs string
		wantData  string
		wantErr   bool
		wantNF    bool
	}{
		{name: "empty namespace uses the default", ref: ObjectRef{Name: "conf"}, defaultNs: "slurm", wantData: "1"},
		{name: "explicit namespace wins over the default", ref: ObjectRef{Namespace: "slurm", Name: "conf"}, defaultNs: "other", wantData: "1"},
		{name: "default namespace without the object", ref: ObjectRef{Name: "conf"}, defaultNs: "other", wantErr: true, wantNF: true},
		{name: "empty name is an error, not a lookup", ref: ObjectRef{}, defaultNs: "slurm", wantErr: true},
	}
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(objects()...).Build()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cm, err := Get[*corev1.ConfigMap](context.Background(), c, tc.ref, tc.defaultNs)
			if (err != nil) != tc.wantErr || IsNotFound(err) != tc.wantNF {
				t.Fatalf("err = %v", err)
			}
			if err == nil && cm.Data["a"] != tc.wantData {
				t.Errorf("data = %v", cm.Data)
			}
		})
	}
}

func TestGetPassesOtherErrorsThrough(t *testing.T) {
	boom := apierrors.NewServiceUnavailable("etcd down")
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return boom
		},
	}).Build()
	_, err := New(c).GetSecretKey(context.Background(), "slurm", sel("jwt", "jwt.key", true))
	if err == nil || IsNotFound(err) || !apierrors.IsServiceUnavailable(err) {
		t.Errorf("err = %v, want the unavailable error even for an optional selector", err)
	}
}

func sel(name, key string, optional bool) corev1.SecretKeySelector {
	return corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key, Optional: ptr.To(optional)}
}

// isKeyNotFound reports whether the object exists but lacks the key.
func isKeyNotFound(err error) bool {
	var nf *NotFoundError
	return errors.As(err, &nf) && nf.Key != ""
}
