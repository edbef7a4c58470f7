package referrers

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestByIndex(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	const index = "spec.secret"
	pod := func(ns, name, secret string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{"secret": secret}}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithObjects(pod("a", "uses", "keys"), pod("a", "other", "else"), pod("b", "elsewhere", "keys")).
		WithIndex(&corev1.Pod{}, index, func(o client.Object) []string { return []string{o.GetAnnotations()["secret"]} }).
		Build()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "keys"}}
	got := ByIndex(c, func() client.ObjectList { return &corev1.PodList{} }, index)(context.Background(), secret)
	want := []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: "a", Name: "uses"}}}
	if len(got) != 1 || got[0] != want[0] {
		t.Fatalf("requests %v, want %v (same namespace, index match only)", got, want)
	}

	failing := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).Build(), interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
		return errors.New("cache not synced")
	}})
	if got := Requests(context.Background(), failing, &corev1.PodList{}); got != nil {
		t.Fatalf("a failed list gave %v, want none", got)
	}
}
