package token

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
)

// TestWarningOncePerTransition: a Token whose signing key is missing is
// retried every 30 s; the Warning is recorded when it becomes not Ready,
// not again on every retry, and again when the reason changes.
func TestWarningOncePerTransition(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, slinkyv1beta1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	tok := &slinkyv1beta1.Token{
		ObjectMeta: metav1.ObjectMeta{Name: "nokey", Namespace: "ns", UID: types.UID("tok")},
		Spec: slinkyv1beta1.TokenSpec{
			Username:  "carol",
			JwtKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "missing"}, Key: "jwt.key"},
		},
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tok).WithStatusSubresource(tok).Build()
	rec := events.NewFakeRecorder(10)
	r := newReconciler(c, c, rec)
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "nokey"}}
	ctx := context.Background()

	warnings := func() []string {
		var out []string
		for {
			select {
			case e := <-rec.Events:
				out = append(out, e)
			default:
				return out
			}
		}
	}
	for range 3 {
		res, err := r.Reconcile(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		// The key's Secret is watched: its creation brings the Token back.
		if res.RequeueAfter != 0 {
			t.Fatalf("requeue after %v, want none", res.RequeueAfter)
		}
	}
	got := warnings()
	if len(got) != 1 || !strings.Contains(got[0], ReasonSigningKeyNotFound) {
		t.Fatalf("three reconciles with the key missing recorded %q, want one %s warning", got, ReasonSigningKeyNotFound)
	}

	// Someone else's Secret under the token's name: a new reason, a new warning.
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "keys", Namespace: "ns"}, Data: map[string][]byte{"jwt.key": []byte("k")}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "nokey-jwt-carol", Namespace: "ns"}}); err != nil {
		t.Fatal(err)
	}
	cur := &slinkyv1beta1.Token{}
	if err := c.Get(ctx, req.NamespacedName, cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.JwtKeyRef.Name = "keys"
	if err := c.Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	got = warnings()
	if len(got) != 1 || !strings.Contains(got[0], ReasonSecretNotOwned) {
		t.Fatalf("two reconciles against a foreign Secret recorded %q, want one %s warning", got, ReasonSecretNotOwned)
	}
}
