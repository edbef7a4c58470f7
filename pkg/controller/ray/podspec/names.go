package podspec

import (
	"fmt"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

// HeadServiceName is the user's headService name if set, else
// "<cluster>-head-svc", never shortened (KubeRay's GenerateHeadServiceName):
// clients build the name, and a cluster name of at most 53 characters keeps
// it within 63.
func HeadServiceName(cluster *rayv1.RayCluster) string {
	if svc := cluster.Spec.HeadGroupSpec.HeadService; svc != nil && svc.Name != "" {
		return svc.Name
	}
	return cluster.Name + "-head-svc"
}

// HeadServiceFQDN is the DNS name workers use to reach the head.
func HeadServiceFQDN(cluster *rayv1.RayCluster, clusterDomain string) string {
	return fmt.Sprintf("%s.%s.svc.%s", HeadServiceName(cluster), cluster.Namespace, clusterDomain)
}

// AutoscalerServiceAccountName is the head Pod's service account when the
// autoscaler is on: the one the head template names, else one named after
// the cluster. Names are shortened like KubeRay's so Gantry finds accounts
// KubeRay created.
func AutoscalerServiceAccountName(cluster *rayv1.RayCluster) string {
	if sa := cluster.Spec.HeadGroupSpec.Template.Spec.ServiceAccountName; sa != "" {
		return CheckName(sa)
	}
	return CheckName(cluster.Name)
}
