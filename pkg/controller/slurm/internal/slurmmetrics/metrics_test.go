package slurmmetrics

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// series returns the value of each series of metric in reg, keyed by its
// label values in label-name order joined with "|" (histograms: the sample
// count).
func series(t *testing.T, reg *prometheus.Registry, metric string) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != metric {
			continue
		}
		for _, m := range f.GetMetric() {
			key := ""
			for i, l := range m.GetLabel() {
				if i > 0 {
					key += "|"
				}
				key += l.GetValue()
			}
			switch {
			case m.GetGauge() != nil:
				out[key] = m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				out[key] = m.GetCounter().GetValue()
			case m.GetHistogram() != nil:
				out[key] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := New(reg); err != nil || again.nodeSetPods != m.nodeSetPods {
		t.Fatalf("a second New did not share the collectors: %v", err)
	}
	m.SetNodeSetPods("ns", "cpu", PodCounts{Desired: 5, Ready: 4, Draining: 1, Drained: 1, Busy: 2})
	m.SetNodeSetPods("ns", "gpu", PodCounts{Desired: 1})
	m.ObserveDrainWait("ns", "cpu", 90*time.Second)
	obs := m.Observer("ns", "slurm")
	obs("GET nodes", 200, 20*time.Millisecond, nil)
	obs("POST node", 0, time.Second, errors.New("connection refused"))

	if got := series(t, reg, "gantry_slurm_nodeset_pods")["cpu|ns|busy"]; got != 2 {
		t.Errorf("busy = %v, want 2", got)
	}
	if got := series(t, reg, "gantry_slurm_restapi_requests_total")["0|slurm|ns|POST node"]; got != 1 {
		t.Errorf("failed POSTs = %v, want 1", got)
	}
	if got := series(t, reg, "gantry_slurm_restapi_request_duration_seconds"); len(got) != 2 || got["slurm|ns|GET nodes"] != 1 {
		t.Errorf("latency series = %v, want one sample each of 2 operations", got)
	}
	if got := series(t, reg, "gantry_slurm_nodeset_drain_wait_seconds"); len(got) != 1 || got["cpu|ns"] != 1 {
		t.Errorf("drain wait series = %v", got)
	}

	m.ForgetNodeSet("ns", "cpu")
	if got := series(t, reg, "gantry_slurm_nodeset_pods"); len(got) != 5 || got["gpu|ns|desired"] != 1 {
		t.Errorf("after forgetting cpu: %v, want gpu's 5 series", got)
	}
	if got := series(t, reg, "gantry_slurm_nodeset_drain_wait_seconds"); len(got) != 0 {
		t.Errorf("drain wait series of a forgotten NodeSet remain: %v", got)
	}
	m.ForgetController("ns", "slurm")
	if n := len(series(t, reg, "gantry_slurm_restapi_requests_total")) + len(series(t, reg, "gantry_slurm_restapi_request_duration_seconds")); n != 0 {
		t.Errorf("series of a forgotten Controller remain: %d", n)
	}

	var none *Metrics
	none.SetNodeSetPods("ns", "x", PodCounts{})
	none.ObserveDrainWait("ns", "x", time.Second)
	if none.Observer("ns", "x") != nil {
		t.Error("nil metrics gave an observer")
	}
}
