package trainjob

import (
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

// gaugeStates lists the state labels of the job's gantry_trainjob_status series.
func gaugeStates(t *testing.T, reg *prometheus.Registry, ns, name string) []string {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, f := range families {
		if f.GetName() != "gantry_trainjob_status" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["namespace"] == ns && labels["name"] == name && m.GetGauge().GetValue() == 1 {
				states = append(states, labels["state"])
			}
		}
	}
	slices.Sort(states)
	return states
}

// counterValue is the value of the counter series with exactly these labels, or 0.
func counterValue(t *testing.T, reg *prometheus.Registry, metric string, want map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != metric {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			match := len(labels) == len(want)
			for k, v := range want {
				match = match && labels[k] == v
			}
			if match {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func cond(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason}
}

func TestState(t *testing.T) {
	cases := []struct {
		name  string
		conds []metav1.Condition
		want  string
	}{
		{"nothing yet", nil, StatePending},
		{"created", []metav1.Condition{cond(trainer.TrainJobCreated, metav1.ConditionTrue, "")}, StateCreated},
		{"creation failed", []metav1.Condition{cond(trainer.TrainJobCreated, metav1.ConditionFalse, "")}, StatePending},
		{"running", []metav1.Condition{
			cond(trainer.TrainJobCreated, metav1.ConditionTrue, ""), cond(trainer.TrainJobRunning, metav1.ConditionTrue, "")}, StateRunning},
		{"suspended beats created", []metav1.Condition{
			cond(trainer.TrainJobCreated, metav1.ConditionTrue, ""), cond(trainer.TrainJobSuspended, metav1.ConditionTrue, "")}, StateSuspended},
		{"resumed and running", []metav1.Condition{
			cond(trainer.TrainJobSuspended, metav1.ConditionFalse, ""), cond(trainer.TrainJobRunning, metav1.ConditionTrue, "")}, StateRunning},
		{"complete", []metav1.Condition{
			cond(trainer.TrainJobRunning, metav1.ConditionFalse, ""), cond(trainer.TrainJobComplete, metav1.ConditionTrue, "")}, StateComplete},
		{"failed beats everything", []metav1.Condition{
			cond(trainer.TrainJobSuspended, metav1.ConditionTrue, ""), cond(trainer.TrainJobFailed, metav1.ConditionTrue, "")}, StateFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := State(&trainer.TrainJobStatus{Conditions: tc.conds}, false); got != tc.want {
				t.Errorf("State() = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestMetricsFollowTheJob(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	again, err := NewMetrics(reg)
	if err != nil {
		t.Fatalf("registering twice must share the collectors: %v", err)
	}
	if again.status != m.status {
		t.Error("a second NewMetrics on one registry made new collectors")
	}

	job := &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "job"}}
	steps := []struct {
		name       string
		conds      []metav1.Condition
		wantStates []string
	}{
		{"pending", nil, []string{StatePending}},
		{"created", []metav1.Condition{cond(trainer.TrainJobCreated, metav1.ConditionTrue, "x")}, []string{StateCreated}},
		{"failed", []metav1.Condition{
			cond(trainer.TrainJobCreated, metav1.ConditionTrue, "x"),
			cond(trainer.TrainJobFailed, metav1.ConditionTrue, trainer.TrainJobDeadlineExceededReason)}, []string{StateFailed}},
	}
	for _, s := range steps {
		before := job.Status.DeepCopy()
		job.Status.Conditions = s.conds
		m.ObserveTransition(job.Namespace, before, &job.Status)
		if s.name == "created" {
			// The controller counts the JobSet it creates.
			m.ObserveCreated(job.Namespace)
		}
		m.SetState(job, false)
		if got := gaugeStates(t, reg, "ns", "job"); !slices.Equal(got, s.wantStates) {
			t.Errorf("%s: states = %v, want %v (one series per job)", s.name, got, s.wantStates)
		}
	}
	// Observing the same status again is not a transition.
	m.ObserveTransition(job.Namespace, job.Status.DeepCopy(), &job.Status)

	for metric, want := range map[string]float64{"gantry_trainjob_created_total": 1, "gantry_trainjob_completed_total": 0} {
		if got := counterValue(t, reg, metric, map[string]string{"namespace": "ns"}); got != want {
			t.Errorf("%s = %v, want %v", metric, got, want)
		}
	}
	if got := counterValue(t, reg, "gantry_trainjob_failed_total", map[string]string{"namespace": "ns", "reason": trainer.TrainJobDeadlineExceededReason}); got != 1 {
		t.Errorf("%s = %v, want 1", "gantry_trainjob_failed_total", got)
	}

	m.Forget("ns", "job")
	if got := gaugeStates(t, reg, "ns", "job"); len(got) != 0 {
		t.Errorf("after Forget the job still has series %v", got)
	}
	// A nil *Metrics (metrics disabled) is safe to call.
	var none *Metrics
	none.SetState(job, false)
	none.ObserveTransition("ns", &job.Status, &job.Status)
	none.Forget("ns", "job")
}

// TestStateWithoutProgressConditions: by default the status has no Created
// or Running condition, so the JobSet's counters tell the state.
func TestStateWithoutProgressConditions(t *testing.T) {
	for _, tc := range []struct {
		name string
		st   trainer.TrainJobStatus
		want string
	}{
		{"no JobSet yet", trainer.TrainJobStatus{}, StatePending},
		{"JobSet, nothing active", trainer.TrainJobStatus{JobsStatus: []trainer.JobStatus{{Name: "node", Active: ptr.To[int32](0)}}}, StateCreated},
		{"JobSet, jobs active", trainer.TrainJobStatus{JobsStatus: []trainer.JobStatus{{Name: "node", Active: ptr.To[int32](2)}}}, StateRunning},
		{"suspended with jobs still active", trainer.TrainJobStatus{
			Conditions: []metav1.Condition{{Type: trainer.TrainJobSuspended, Status: metav1.ConditionTrue}},
			JobsStatus: []trainer.JobStatus{{Name: "node", Active: ptr.To[int32](1)}}}, StateSuspended},
	} {
		if got := State(&tc.st, false); got != tc.want {
			t.Errorf("%s: state %s, want %s", tc.name, got, tc.want)
		}
	}
	if got := State(&trainer.TrainJobStatus{}, true); got != StateCreated {
		t.Errorf("a JobSet that reports no jobs yet: state %s, want %s", got, StateCreated)
	}
}
