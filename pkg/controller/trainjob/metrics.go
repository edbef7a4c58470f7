package trainjob

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	fwmetrics "github.com/gantry-dev/gantry/pkg/framework/metrics"
)

// States reported by gantry_trainjob_status, most decisive first.
const (
	StatePending   = "Pending"
	StateCreated   = "Created"
	StateRunning   = "Running"
	StateSuspended = "Suspended"
	StateComplete  = "Complete"
	StateFailed    = "Failed"
)

// Metrics are the TrainJob workload metrics; upstream Trainer exports none
// of its own, so these are Gantry's. The per-job gauge has one
// series per job (its current state) and is dropped when the job is
// deleted; the counters count transitions this process wrote, per
// namespace, and are cumulative by nature.
type Metrics struct {
	status                     *fwmetrics.StateGauge
	created, completed, failed *prometheus.CounterVec
	// ttlDeleted counts TrainJobs deleted by ttlSecondsAfterFinished.
	ttlDeleted *prometheus.CounterVec
}

// NewMetrics creates the collectors and registers them on reg (nil means
// controller-runtime's registry). Registering twice shares the collectors.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	r := fwmetrics.NewRegistrar(reg)
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return fwmetrics.Add(r, prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels))
	}
	m := &Metrics{
		status: fwmetrics.Add(r, fwmetrics.NewStateGauge(prometheus.GaugeOpts{
			Name: "gantry_trainjob_status",
			Help: "The current state of a TrainJob: 1 for the series whose state label holds",
		}, fwmetrics.LabelNamespace, fwmetrics.LabelName, "state")),
		created:   counter("gantry_trainjob_created_total", "TrainJobs whose JobSet was created", fwmetrics.LabelNamespace),
		completed: counter("gantry_trainjob_completed_total", "TrainJobs that completed", fwmetrics.LabelNamespace),
		failed:    counter("gantry_trainjob_failed_total", "TrainJobs that failed, by reason", fwmetrics.LabelNamespace, "reason"),
		ttlDeleted: counter("gantry_trainjob_ttl_deleted_total",
			"Finished TrainJobs deleted once their ttlSecondsAfterFinished passed", fwmetrics.LabelNamespace),
	}
	return m, r.Err()
}

// State is the single state a TrainJob is reported in; jobSetExists is
// whether its JobSet exists, which a status without the Created condition
// (the default, see ProgressConditions) does not tell before the JobSet
// reports its jobs.
func State(st *trainer.TrainJobStatus, jobSetExists bool) string {
	conds := st.Conditions
	switch {
	case meta.IsStatusConditionTrue(conds, trainer.TrainJobFailed):
		return StateFailed
	case meta.IsStatusConditionTrue(conds, trainer.TrainJobComplete):
		return StateComplete
	case meta.IsStatusConditionTrue(conds, trainer.TrainJobSuspended):
		return StateSuspended
	case meta.IsStatusConditionTrue(conds, trainer.TrainJobRunning):
		return StateRunning
	case meta.FindStatusCondition(conds, trainer.TrainJobRunning) == nil && anyJobActive(st.JobsStatus):
		// Trainer's condition set (no Running condition): the JobSet's
		// counters say it.
		return StateRunning
	case created(st) || jobSetExists:
		return StateCreated
	}
	return StatePending
}

// created: the JobSet exists, by the Created condition where the status
// carries it and by the JobSet's counters where it does not.
func created(st *trainer.TrainJobStatus) bool {
	return meta.IsStatusConditionTrue(st.Conditions, trainer.TrainJobCreated) || len(st.JobsStatus) > 0
}

func anyJobActive(jobs []trainer.JobStatus) bool {
	for _, j := range jobs {
		if ptr.Deref(j.Active, 0) > 0 {
			return true
		}
	}
	return false
}

// SetState publishes the job's current state.
func (m *Metrics) SetState(trainJob *trainer.TrainJob, jobSetExists bool) {
	if m == nil {
		return
	}
	m.status.Set(prometheus.Labels{
		fwmetrics.LabelNamespace: trainJob.Namespace,
		fwmetrics.LabelName:      trainJob.Name,
		"state":                  State(&trainJob.Status, jobSetExists),
	})
}

// ObserveCreated counts a TrainJob whose JobSet the controller created.
func (m *Metrics) ObserveCreated(namespace string) {
	if m == nil {
		return
	}
	m.created.WithLabelValues(namespace).Inc()
}

// ObserveTTLDeleted counts a TrainJob deleted after its TTL.
func (m *Metrics) ObserveTTLDeleted(namespace string) {
	if m == nil {
		return
	}
	m.ttlDeleted.WithLabelValues(namespace).Inc()
}

// ObserveTransition counts the conditions that turned true between two
// written statuses of a job in namespace.
func (m *Metrics) ObserveTransition(namespace string, before, after *trainer.TrainJobStatus) {
	if m == nil {
		return
	}
	if turnedTrue(before, after, trainer.TrainJobComplete) {
		m.completed.WithLabelValues(namespace).Inc()
	}
	if turnedTrue(before, after, trainer.TrainJobFailed) {
		m.failed.WithLabelValues(namespace, meta.FindStatusCondition(after.Conditions, trainer.TrainJobFailed).Reason).Inc()
	}
}

// Forget drops the job's per-job series.
func (m *Metrics) Forget(namespace, name string) {
	if m == nil {
		return
	}
	m.status.Forget(namespace, name)
}

func turnedTrue(before, after *trainer.TrainJobStatus, condType string) bool {
	return !meta.IsStatusConditionTrue(before.Conditions, condType) &&
		meta.IsStatusConditionPresentAndEqual(after.Conditions, condType, metav1.ConditionTrue)
}
