package nodeset

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

// A changed whenDeleted reaches the claims of pods that exist, as in
// Slinky (and StatefulSets): with Retain the NodeSet no longer owns them,
// so deleting it keeps them; with Delete it does. A claim a scaled-in pod
// owns is left to that pod.
func TestClaimOwnersFollowWhenDeleted(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name        string
		policy      slinkyv1beta1.PersistentVolumeClaimRetentionPolicyType
		ownedBefore bool
		wantOwned   bool
	}{
		{"Delete to Retain", slinkyv1beta1.RetainPersistentVolumeClaimRetentionPolicyType, true, false},
		{"Retain to Delete", slinkyv1beta1.DeletePersistentVolumeClaimRetentionPolicyType, false, true},
		{"Retain kept", slinkyv1beta1.RetainPersistentVolumeClaimRetentionPolicyType, false, false},
		{"Delete kept", slinkyv1beta1.DeletePersistentVolumeClaimRetentionPolicyType, true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := slinkytesting.MakeNodeSet("ns", "ns", "slurm").Obj()
			n.UID = "nodeset-uid"
			n.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "scratch"}}}
			n.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted = tt.policy
			pod := makePod("ns-0").obj()
			claim := podClaims(n, pod)[0]
			claim.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "someone-else", UID: "cm-uid"}}
			if tt.ownedBefore {
				claim.OwnerReferences = append(claim.OwnerReferences, *metav1.NewControllerRef(n, slinkyv1beta1.NodeSetGVK))
			}
			c := ctrlfake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(claim).Build()
			r := newReconciler(c, c, nil, nil)
			if err := r.syncClaimOwners(ctx, n, pod); err != nil {
				t.Fatal(err)
			}
			got := &corev1.PersistentVolumeClaim{}
			if err := c.Get(ctx, types.NamespacedName{Namespace: claim.Namespace, Name: claim.Name}, got); err != nil {
				t.Fatal(err)
			}
			if owned := metav1.IsControlledBy(got, n); owned != tt.wantOwned {
				t.Errorf("the NodeSet owns the claim: %v, want %v (owners %v)", owned, tt.wantOwned, got.OwnerReferences)
			}
			if got.OwnerReferences[0].Name != "someone-else" {
				t.Errorf("another owner was dropped: %v", got.OwnerReferences)
			}
		})
	}
}
