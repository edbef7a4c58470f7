package raycluster

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

func TestBuildAutoscalerRBAC(t *testing.T) {
	long := strings.Repeat("a", 55)
	tests := []struct {
		name       string
		cluster    *raytesting.RayClusterWrapper
		wantSA     string // "" = no ServiceAccount built
		wantRole   string
		wantSubjSA string
	}{
		{name: "operator-made account", cluster: raytesting.MakeRayCluster("rc", "ns"), wantSA: "rc", wantRole: "rc", wantSubjSA: "rc"},
		{name: "user account is bound, not built", cluster: raytesting.MakeRayCluster("rc", "ns").HeadServiceAccount("mine"), wantRole: "rc", wantSubjSA: "mine"},
		{name: "long names are shortened like KubeRay's", cluster: raytesting.MakeRayCluster(long, "ns"), wantSA: long[5:], wantRole: long[5:], wantSubjSA: long[5:]},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cluster := tc.cluster.Autoscaling().Obj()
			rbac := BuildAutoscalerRBAC(cluster)

			if (rbac.ServiceAccount != nil) != (tc.wantSA != "") {
				t.Fatalf("ServiceAccount = %+v, want built=%v", rbac.ServiceAccount, tc.wantSA != "")
			}
			if rbac.ServiceAccount != nil && (rbac.ServiceAccount.Name != tc.wantSA || rbac.ServiceAccount.Kind != "ServiceAccount") {
				t.Errorf("ServiceAccount %s %s, want %s", rbac.ServiceAccount.Kind, rbac.ServiceAccount.Name, tc.wantSA)
			}
			// The head Pod must run as the account the RoleBinding names.
			if got := podspec.BuildHeadPod(cluster, podspec.DefaultBuildOptions()).Spec.ServiceAccountName; got != tc.wantSubjSA {
				t.Errorf("head Pod serviceAccountName = %q, want %q", got, tc.wantSubjSA)
			}
			if rbac.Role.Name != tc.wantRole || rbac.RoleBinding.Name != tc.wantRole || rbac.Role.Namespace != "ns" {
				t.Errorf("role %s/%s binding %s", rbac.Role.Namespace, rbac.Role.Name, rbac.RoleBinding.Name)
			}
			wantRules := []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "patch"}},
				{APIGroups: []string{""}, Resources: []string{"pods/resize"}, Verbs: []string{"patch"}},
				{APIGroups: []string{"ray.io"}, Resources: []string{"rayclusters"}, Verbs: []string{"get", "patch"}},
			}
			if diff := cmp.Diff(wantRules, rbac.Role.Rules); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
			wantSubjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: tc.wantSubjSA, Namespace: "ns"}}
			if diff := cmp.Diff(wantSubjects, rbac.RoleBinding.Subjects); diff != "" {
				t.Errorf("subjects (-want +got):\n%s", diff)
			}
			wantRef := rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: tc.wantRole}
			if rbac.RoleBinding.RoleRef != wantRef {
				t.Errorf("roleRef = %+v, want %+v", rbac.RoleBinding.RoleRef, wantRef)
			}
			if rbac.Role.Labels["ray.io/cluster"] != cluster.Name || len(rbac.RoleBinding.OwnerReferences) != 1 {
				t.Errorf("role labels %v binding owners %v", rbac.Role.Labels, rbac.RoleBinding.OwnerReferences)
			}
		})
	}
}
