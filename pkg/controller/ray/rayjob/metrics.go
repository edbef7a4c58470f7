package rayjob

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/ptr"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	fwmetrics "github.com/gantry-dev/gantry/pkg/framework/metrics"
)

// JobMetrics are KubeRay's kuberay_job_* series, with its names and labels
// so that its Grafana dashboard and alerts work unchanged. KubeRay lists
// every RayJob at scrape time for info and deployment_status; Gantry sets
// them from the reconciler, so a scrape costs no API list, and Forget
// drops a deleted RayJob's series.
type JobMetrics struct {
	executionDuration *prometheus.GaugeVec
	info              *fwmetrics.StateGauge
	deploymentStatus  *fwmetrics.StateGauge
}

// NewJobMetrics creates the collectors and registers them on reg.
func NewJobMetrics(reg prometheus.Registerer) (*JobMetrics, error) {
	m := &JobMetrics{
		executionDuration: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kuberay_job_execution_duration_seconds",
			Help: "Duration from when the RayJob's JobDeploymentStatus left Initializing until it reached Retrying or a terminal state (Complete, Failed)",
		}, []string{"name", "namespace", "uid", "job_deployment_status", "retry_count"}),
		info: fwmetrics.NewStateGauge(prometheus.GaugeOpts{
			Name: "kuberay_job_info",
			Help: "Metadata information about RayJob custom resources",
		}, "name", "namespace", "uid"),
		deploymentStatus: fwmetrics.NewStateGauge(prometheus.GaugeOpts{
			Name: "kuberay_job_deployment_status",
			Help: "The RayJob's current deployment status",
		}, "name", "namespace", "uid", "deployment_status"),
	}
	for _, c := range []prometheus.Collector{m.executionDuration, m.info, m.deploymentStatus} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// SetInfo publishes the RayJob's info and deployment status series.
func (m *JobMetrics) SetInfo(job *rayv1.RayJob) {
	m.info.Set(prometheus.Labels{"name": job.Name, "namespace": job.Namespace, "uid": string(job.UID)})
	m.deploymentStatus.Set(prometheus.Labels{"name": job.Name, "namespace": job.Namespace, "uid": string(job.UID),
		"deployment_status": string(job.Status.JobDeploymentStatus)})
}

// ObserveTransition records the execution duration when a written status
// moved the RayJob from a running state to Retrying or an end.
func (m *JobMetrics) ObserveTransition(job *rayv1.RayJob, old rayv1.RayJobStatus, now time.Time) {
	st := job.Status
	if rayv1.IsJobDeploymentTerminal(old.JobDeploymentStatus) || st.StartTime == nil ||
		!(rayv1.IsJobDeploymentTerminal(st.JobDeploymentStatus) || st.JobDeploymentStatus == rayv1.JobDeploymentStatusRetrying) {
		return
	}
	retries := strconv.Itoa(int(ptr.Deref(old.Failed, 0)))
	m.executionDuration.WithLabelValues(job.Name, job.Namespace, string(job.UID), string(st.JobDeploymentStatus), retries).
		Set(now.Sub(st.StartTime.Time).Seconds())
}

// Forget drops the series of a RayJob that is gone.
func (m *JobMetrics) Forget(namespace, name string) {
	fwmetrics.Forget(namespace, name, m.executionDuration)
	m.info.Forget(namespace, name)
	m.deploymentStatus.Forget(namespace, name)
}
