package raycluster

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	fwmetrics "github.com/gantry-dev/gantry/pkg/framework/metrics"
)

// ownerKindNone is owner_kind for a cluster no RayJob or RayService made.
const ownerKindNone = "None"

// ClusterMetrics holds the RayCluster metrics. Their names and labels are
// KubeRay's, so existing dashboards and alerts work unchanged. KubeRay computes info and
// condition_provisioned by listing every RayCluster at scrape time; Gantry
// sets them from the reconciler instead, so a scrape costs no API list and
// the series of a deleted cluster go away with Forget.
type ClusterMetrics struct {
	provisionedDuration *prometheus.GaugeVec
	// info and conditionProvisioned are state gauges: a changed uid, owner
	// or condition replaces the cluster's old series instead of adding one.
	info                 *fwmetrics.StateGauge
	conditionProvisioned *fwmetrics.StateGauge
}

// NewClusterMetrics creates the collectors and registers them on reg (the
// manager passes controller-runtime's registry).
func NewClusterMetrics(reg prometheus.Registerer) (*ClusterMetrics, error) {
	m := &ClusterMetrics{
		provisionedDuration: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kuberay_cluster_provisioned_duration_seconds",
			Help: "The time, in seconds, from a RayCluster's creation until its RayClusterProvisioned condition became true",
		}, []string{"name", "namespace", "uid"}),
		info: fwmetrics.NewStateGauge(prometheus.GaugeOpts{
			Name: "kuberay_cluster_info",
			Help: "Metadata information about RayCluster custom resources",
		}, "name", "namespace", "uid", "owner_kind"),
		conditionProvisioned: fwmetrics.NewStateGauge(prometheus.GaugeOpts{
			Name: "kuberay_cluster_condition_provisioned",
			Help: "Indicates whether the RayCluster is provisioned",
		}, "name", "namespace", "uid", "condition"),
	}
	// Registering twice is an error here, unlike fwmetrics.Register: one
	// process runs one RayCluster controller, and a second is a bug.
	for _, c := range []prometheus.Collector{m.provisionedDuration, m.info, m.conditionProvisioned} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// ObserveProvisioned records how long the cluster took to be provisioned.
func (m *ClusterMetrics) ObserveProvisioned(cluster *rayv1.RayCluster, seconds float64) {
	m.provisionedDuration.WithLabelValues(cluster.Name, cluster.Namespace, string(cluster.UID)).Set(seconds)
}

// ObserveStatusWrite is called after the new status in cluster was written
// over oldStatus. When RayClusterProvisioned turned true it records the time
// since creation; after a suspend and resume that is observed again, as in
// KubeRay.
func (m *ClusterMetrics) ObserveStatusWrite(cluster *rayv1.RayCluster, oldStatus rayv1.RayClusterStatus, now time.Time) {
	provisioned := string(rayv1.RayClusterProvisioned)
	if meta.IsStatusConditionTrue(oldStatus.Conditions, provisioned) ||
		!meta.IsStatusConditionTrue(cluster.Status.Conditions, provisioned) {
		return
	}
	m.ObserveProvisioned(cluster, now.Sub(cluster.CreationTimestamp.Time).Seconds())
}

// SetInfo publishes kuberay_cluster_info and
// kuberay_cluster_condition_provisioned for the cluster as it is now. The
// reconciler calls it on every reconcile, written or not, so the series
// exist for clusters whose status never changes.
func (m *ClusterMetrics) SetInfo(cluster *rayv1.RayCluster) {
	ownerKind := ownerKindNone
	if kind, ok := cluster.Labels[rayv1.RayOriginatedFromCRDLabelKey]; ok {
		ownerKind = kind
	}
	uid := string(cluster.UID)
	m.info.Set(prometheus.Labels{"name": cluster.Name, "namespace": cluster.Namespace, "uid": uid, "owner_kind": ownerKind})
	m.conditionProvisioned.Set(prometheus.Labels{"name": cluster.Name, "namespace": cluster.Namespace, "uid": uid,
		"condition": strconv.FormatBool(meta.IsStatusConditionTrue(cluster.Status.Conditions, string(rayv1.RayClusterProvisioned)))})
}

// Forget removes every series of the named cluster, whatever its uid; the
// reconciler calls it when the cluster is gone.
func (m *ClusterMetrics) Forget(namespace, name string) {
	m.provisionedDuration.DeletePartialMatch(prometheus.Labels{"name": name, "namespace": namespace})
	m.info.Forget(namespace, name)
	m.conditionProvisioned.Forget(namespace, name)
}
