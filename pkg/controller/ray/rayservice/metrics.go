package rayservice

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	fwmetrics "github.com/gantry-dev/gantry/pkg/framework/metrics"
)

// ServiceMetrics are KubeRay's kuberay_service_* series, with its names
// and labels so that its Grafana dashboard and alerts work unchanged.
// KubeRay lists every RayService at scrape time; Gantry sets them from the
// reconciler, so a scrape costs no API list, and Forget drops a deleted
// RayService's series.
type ServiceMetrics struct {
	info              *fwmetrics.StateGauge
	ready             *fwmetrics.StateGauge
	upgradeInProgress *fwmetrics.StateGauge
}

// NewServiceMetrics creates the collectors and registers them on reg.
func NewServiceMetrics(reg prometheus.Registerer) (*ServiceMetrics, error) {
	m := &ServiceMetrics{
		info: fwmetrics.NewStateGauge(prometheus.GaugeOpts{
			Name: "kuberay_service_info",
			Help: "Metadata information about RayService custom resources",
		}, "name", "namespace", "uid"),
		ready: fwmetrics.NewStateGauge(prometheus.GaugeOpts{
			Name: "kuberay_service_condition_ready",
			Help: "Describes whether the RayService is ready. Ready means users can send requests to the underlying cluster and the number of serve endpoints is greater than 0.",
		}, "name", "namespace", "uid", "condition"),
		upgradeInProgress: fwmetrics.NewStateGauge(prometheus.GaugeOpts{
			Name: "kuberay_service_condition_upgrade_in_progress",
			Help: "Describes whether the RayService is performing a zero-downtime upgrade.",
		}, "name", "namespace", "uid", "condition"),
	}
	for _, c := range []prometheus.Collector{m.info, m.ready, m.upgradeInProgress} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Set publishes the RayService's series from its status.
func (m *ServiceMetrics) Set(svc *rayv1.RayService) {
	id := prometheus.Labels{"name": svc.Name, "namespace": svc.Namespace, "uid": string(svc.UID)}
	m.info.Set(id)
	with := func(cond rayv1.RayServiceConditionType) prometheus.Labels {
		l := prometheus.Labels{"condition": strconv.FormatBool(meta.IsStatusConditionTrue(svc.Status.Conditions, string(cond)))}
		for k, v := range id {
			l[k] = v
		}
		return l
	}
	m.ready.Set(with(rayv1.RayServiceReady))
	m.upgradeInProgress.Set(with(rayv1.UpgradeInProgress))
}

// Forget drops the series of a RayService that is gone.
func (m *ServiceMetrics) Forget(namespace, name string) {
	m.info.Forget(namespace, name)
	m.ready.Forget(namespace, name)
	m.upgradeInProgress.Forget(namespace, name)
}
