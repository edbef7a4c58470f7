package nodeset

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
)

// TestPodOwnerIndex: a pod is indexed under the NodeSet controlling it, a
// pod nobody controls under OrphanPod (the adoption candidates, listed
// through the index instead of by matching every pod's labels), and a pod
// something else controls not at all.
func TestPodOwnerIndex(t *testing.T) {
	ref := func(kind, apiVersion string, controller bool) metav1.OwnerReference {
		return metav1.OwnerReference{Kind: kind, APIVersion: apiVersion, Name: "x", UID: "uid-1", Controller: ptr.To(controller)}
	}
	cases := []struct {
		name string
		refs []metav1.OwnerReference
		want []string
	}{
		{name: "no owner", want: []string{OrphanPod}},
		{name: "an owner that does not control it", refs: []metav1.OwnerReference{ref(slinkyv1beta1.NodeSetKind, slinkyv1beta1.GroupVersion.String(), false)}, want: []string{OrphanPod}},
		{name: "a NodeSet controls it", refs: []metav1.OwnerReference{ref(slinkyv1beta1.NodeSetKind, slinkyv1beta1.GroupVersion.String(), true)}, want: []string{"uid-1"}},
		{name: "a Job controls it", refs: []metav1.OwnerReference{ref("Job", "batch/v1", true)}},
	}
	for _, tc := range cases {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", OwnerReferences: tc.refs}}
		if got := podOwnerIndex(pod); !slices.Equal(got, tc.want) {
			t.Errorf("%s: podOwnerIndex = %q, want %q", tc.name, got, tc.want)
		}
	}
}
