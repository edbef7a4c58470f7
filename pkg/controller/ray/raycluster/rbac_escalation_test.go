package raycluster

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

// TestManagerHoldsEveryAutoscalerPermission: the API server refuses to let
// the manager create a Role granting a permission the manager does not hold
// itself (RBAC escalation check), and the refusal stops the cluster's whole
// reconcile chain. So every rule of the autoscaler Role must be covered by
// the manager's generated ClusterRole (config/rbac/role.yaml, which the
// chart renders).
func TestManagerHoldsEveryAutoscalerPermission(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	manager := &rbacv1.ClusterRole{}
	if err := yaml.Unmarshal(data, manager); err != nil {
		t.Fatal(err)
	}
	holds := func(group, resource, verb string) bool {
		for _, r := range manager.Rules {
			if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
				return true
			}
		}
		return false
	}
	role := BuildAutoscalerRBAC(raytesting.MakeRayCluster("rc", "ns").Autoscaling().Obj()).Role
	for _, rule := range role.Rules {
		for _, g := range rule.APIGroups {
			for _, res := range rule.Resources {
				for _, v := range rule.Verbs {
					if !holds(g, res, v) {
						t.Errorf("the autoscaler Role grants %s %q/%s, which the manager's ClusterRole lacks: the API server would refuse the Role (add a +kubebuilder:rbac marker and run make manifests)", v, g, res)
					}
				}
			}
		}
	}
}
