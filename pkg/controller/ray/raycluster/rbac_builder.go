package raycluster

import (
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	"github.com/gantry-dev/gantry/pkg/framework/builder"
)

// AutoscalerRBAC is what the autoscaler sidecar needs to scale the
// cluster: read and label Pods, resize them in place, and patch the
// RayCluster's replicas and workersToDelete.
type AutoscalerRBAC struct {
	// ServiceAccount is nil when the head template names its own service
	// account: the user owns that account, and the reconciler only checks
	// that it exists.
	ServiceAccount *corev1.ServiceAccount
	Role           *rbacv1.Role
	RoleBinding    *rbacv1.RoleBinding
}

// BuildAutoscalerRBAC returns the autoscaler's ServiceAccount, Role and
// RoleBinding, complete for server-side apply.
func BuildAutoscalerRBAC(cluster *rayv1.RayCluster) AutoscalerRBAC {
	saName := podspec.AutoscalerServiceAccountName(cluster)
	roleName := podspec.CheckName(cluster.Name)
	meta := func(name string) metav1.ObjectMeta {
		m := builder.NewMetadata(name, cluster.Namespace).
			WithLabels(map[string]string{
				rayv1.RayClusterLabelKey: cluster.Name,
				builder.LabelName:        podspec.ApplicationName,
				builder.LabelCreatedBy:   podspec.ComponentName,
			}).
			Build()
		m.OwnerReferences = []metav1.OwnerReference{podspec.OwnerReference(cluster)}
		return m
	}

	var rbac AutoscalerRBAC
	if cluster.Spec.HeadGroupSpec.Template.Spec.ServiceAccountName == "" {
		rbac.ServiceAccount = &corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: meta(saName),
		}
	}
	rbac.Role = &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
		ObjectMeta: meta(roleName),
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "patch"}},
			{APIGroups: []string{""}, Resources: []string{"pods/resize"}, Verbs: []string{"patch"}},
			{APIGroups: []string{rayv1.GroupVersion.Group}, Resources: []string{"rayclusters"}, Verbs: []string{"get", "patch"}},
		},
	}
	rbac.RoleBinding = &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
		ObjectMeta: meta(roleName),
		Subjects: []rbacv1.Subject{{
			Kind:      rbacv1.ServiceAccountKind,
			Name:      saName,
			Namespace: cluster.Namespace,
		}},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: roleName},
	}
	return rbac
}
