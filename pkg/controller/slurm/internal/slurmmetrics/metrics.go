package slurmmetrics

import (
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	fwmetrics "github.com/gantry-dev/gantry/pkg/framework/metrics"
	"github.com/gantry-dev/gantry/pkg/slurm"
)

// Metrics are the Slurm workload's metrics. Series of a NodeSet or a
// Controller are dropped when it is deleted.
type Metrics struct {
	nodeSetPods *fwmetrics.ObjectGaugeVec
	drainWait   *prometheus.HistogramVec
	requests    *prometheus.CounterVec
	latency     *prometheus.HistogramVec
}

// New creates the collectors and registers them on reg (nil means
// controller-runtime's registry). Registering twice shares the collectors.
func New(reg prometheus.Registerer) (*Metrics, error) {
	r := fwmetrics.NewRegistrar(reg)
	object := []string{fwmetrics.LabelNamespace, fwmetrics.LabelName}
	m := &Metrics{
		nodeSetPods: fwmetrics.Add(r, fwmetrics.NewObjectGaugeVec(prometheus.GaugeOpts{
			Name: "gantry_slurm_nodeset_pods",
			Help: "Pods of a NodeSet by state: desired, ready, and of those whose Slurm node is known, draining (drain asked, a job still runs), drained (drain done), busy (running a job)",
		}, "state")),
		drainWait: fwmetrics.Add(r, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gantry_slurm_nodeset_drain_wait_seconds",
			Help:    "Seconds from Gantry draining a NodeSet pod's Slurm node until the pod was deleted",
			Buckets: prometheus.ExponentialBuckets(1, 4, 9), // 1 s … ~18 h
		}, object)),
		requests: fwmetrics.Add(r, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gantry_slurm_restapi_requests_total",
			Help: "Requests to a Controller's slurmrestd by operation and HTTP status (0: no answer)",
		}, append(slices.Clone(object), "operation", "code"))),
		latency: fwmetrics.Add(r, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gantry_slurm_restapi_request_duration_seconds",
			Help:    "Latency of requests to a Controller's slurmrestd by operation",
			Buckets: prometheus.DefBuckets,
		}, append(slices.Clone(object), "operation"))),
	}
	return m, r.Err()
}

// PodCounts are a NodeSet's pods by state.
type PodCounts struct {
	Desired, Ready, Draining, Drained, Busy int
}

// SetNodeSetPods publishes the NodeSet's pod counts.
func (m *Metrics) SetNodeSetPods(namespace, name string, c PodCounts) {
	if m == nil {
		return
	}
	for state, v := range map[string]int{
		"desired": c.Desired, "ready": c.Ready, "draining": c.Draining, "drained": c.Drained, "busy": c.Busy,
	} {
		m.nodeSetPods.Set(namespace, name, float64(v), state)
	}
}

// ObserveDrainWait records how long a pod's Slurm node drained before the
// pod was deleted.
func (m *Metrics) ObserveDrainWait(namespace, name string, d time.Duration) {
	if m == nil || d < 0 {
		return
	}
	m.drainWait.WithLabelValues(namespace, name).Observe(d.Seconds())
}

// ForgetNodeSet drops the NodeSet's series.
func (m *Metrics) ForgetNodeSet(namespace, name string) {
	if m == nil {
		return
	}
	fwmetrics.Forget(namespace, name, m.nodeSetPods.GaugeVec, m.drainWait)
}

// Observer is the slurm.Observer of the client of the Controller
// namespace/name.
func (m *Metrics) Observer(namespace, name string) slurm.Observer {
	if m == nil {
		return nil
	}
	return func(operation string, code int, elapsed time.Duration, _ error) {
		m.requests.WithLabelValues(namespace, name, operation, strconv.Itoa(code)).Inc()
		m.latency.WithLabelValues(namespace, name, operation).Observe(elapsed.Seconds())
	}
}

// ForgetController drops the Controller's series.
func (m *Metrics) ForgetController(namespace, name string) {
	if m == nil {
		return
	}
	fwmetrics.Forget(namespace, name, m.requests, m.latency)
}
