package raycluster

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	"github.com/gantry-dev/gantry/pkg/framework/builder"
)

// kubeRayCreatedBy is the app.kubernetes.io/created-by value KubeRay (and
// Gantry, which keeps KubeRay's labels) put on a RayCluster's Pods.
const kubeRayCreatedBy = podspec.ComponentName

// ReasonAdoptedPods is the event of a cluster whose Pods KubeRay made were
// taken over.
const ReasonAdoptedPods = "AdoptedPods"

// adoptionScans remembers which clusters were scanned for Pods KubeRay
// made (name → UID, so a cluster deleted and created again is new), so
// each is scanned at most once per manager process; a deleted cluster is
// forgotten.
type adoptionScans struct{ done sync.Map }

func (a *adoptionScans) first(cluster *rayv1.RayCluster) bool {
	prev, seen := a.done.Swap(client.ObjectKeyFromObject(cluster), cluster.UID)
	return !seen || prev.(types.UID) != cluster.UID
}

func (a *adoptionScans) forget(key types.NamespacedName) { a.done.Delete(key) }

// adoptKubeRayPods takes over the Pods KubeRay created for a cluster that
// ran under KubeRay before Gantry: they carry no app.kubernetes.io/managed-by
// label, so Gantry's label-filtered cache cannot see them, and without this
// Gantry would start a second head and a second set of workers beside
// them.
//
// It looks only where such Pods can be: a cluster whose status says it was
// provisioned (KubeRay wrote it) while the cache holds none of its Pods,
// and at most once per cluster per manager process. New clusters and
// clusters whose Pods Gantry sees cost nothing. The Pods are read from the
// API server, and each one the cluster controls and KubeRay created is
// labelled managed-by=gantry; the cache then sees it, and this reconcile
// waits for that (it returns adopted > 0).
func (r *Reconciler) adoptKubeRayPods(ctx context.Context, s *scope) (adopted int, err error) {
	cluster := s.Object
	if !provisionedBefore(cluster) {
		return 0, nil
	}
	cached, err := r.listPods(ctx, s, nil)
	if err != nil || len(cached) > 0 || !r.adoptions.first(cluster) {
		return 0, err
	}
	var pods corev1.PodList
	if err := r.apiReader.List(ctx, &pods, client.InNamespace(cluster.Namespace),
		client.MatchingLabels{rayv1.RayClusterLabelKey: cluster.Name, builder.LabelCreatedBy: kubeRayCreatedBy}); err != nil {
		r.adoptions.forget(client.ObjectKeyFromObject(cluster))
		return 0, fmt.Errorf("listing the Pods KubeRay made for the cluster: %w", err)
	}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.Labels[builder.LabelManagedBy] == builder.ManagedByGantry || !metav1.IsControlledBy(pod, cluster) || !pod.DeletionTimestamp.IsZero() {
			continue
		}
		patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q}}}`, builder.LabelManagedBy, builder.ManagedByGantry))
		if err := r.client.Patch(ctx, pod, patch); err != nil && !apierrors.IsNotFound(err) {
			r.adoptions.forget(client.ObjectKeyFromObject(cluster))
			return adopted, fmt.Errorf("adopting Pod %s: %w", pod.Name, err)
		}
		adopted++
	}
	if adopted > 0 {
		ctrl.LoggerFrom(ctx).Info("adopted the Pods KubeRay created for the cluster", "pods", adopted)
		r.recorder.Normal(cluster, ReasonAdoptedPods, "Adopted %d Pods that KubeRay created; Gantry manages them from now on", adopted)
	}
	return adopted, nil
}

// provisionedBefore: the cluster's status shows a head was running once —
// written by KubeRay, or by Gantry before.
func provisionedBefore(cluster *rayv1.RayCluster) bool {
	return cluster.Status.Head.PodName != "" || cluster.Status.State != ""
}
