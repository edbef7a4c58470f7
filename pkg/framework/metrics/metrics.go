// Package metrics registers Gantry's workload metrics on controller-runtime's
// registry (served on the manager's one metrics endpoint) and removes an
// object's series when the object is deleted.
//
// Contract: Register is idempotent: registering a collector that is already
// registered returns the registered one instead of failing, so a workload
// set up twice (tests, restarts of a controller inside one process) shares
// one set of series. Per-object metrics carry "namespace" and "name" as their
// first labels (KubeRay's label names) so Forget can drop every series of a
// deleted object with one partial match.
package metrics

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Label names every per-object metric starts with.
const (
	LabelNamespace = "namespace"
	LabelName      = "name"
)

// Register registers c on reg and returns the collector to use: c itself, or
// the equal collector registered earlier. A nil reg means controller-runtime's
// registry. It fails when a different collector type holds the name, or the
// registration is invalid.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if reg == nil {
		reg = ctrlmetrics.Registry
	}
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var already prometheus.AlreadyRegisteredError
	if !errors.As(err, &already) {
		return c, err
	}
	existing, ok := already.ExistingCollector.(C)
	if !ok {
		return c, fmt.Errorf("metric already registered as %T: %w", already.ExistingCollector, err)
	}
	return existing, nil
}

// MustRegister is Register for start-up code, where a clash is a bug.
func MustRegister[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	registered, err := Register(reg, c)
	if err != nil {
		panic(err)
	}
	return registered
}

// partialDeleter is what every prometheus *Vec offers.
type partialDeleter interface {
	DeletePartialMatch(labels prometheus.Labels) int
}

// Forget deletes every series of the object from each vec (GaugeVec,
// CounterVec, HistogramVec, ...) whose labels include LabelNamespace and
// LabelName, and returns how many series were deleted.
func Forget(namespace, name string, vecs ...partialDeleter) int {
	match := prometheus.Labels{LabelNamespace: namespace, LabelName: name}
	deleted := 0
	for _, v := range vecs {
		deleted += v.DeletePartialMatch(match)
	}
	return deleted
}

// ObjectGaugeVec is a gauge per object, optionally split by further labels
// (a condition type, a worker group).
type ObjectGaugeVec struct {
	*prometheus.GaugeVec
}

// NewObjectGaugeVec creates a gauge vec labelled namespace, name, then
// extraLabels.
func NewObjectGaugeVec(opts prometheus.GaugeOpts, extraLabels ...string) *ObjectGaugeVec {
	labels := append([]string{LabelNamespace, LabelName}, extraLabels...)
	return &ObjectGaugeVec{GaugeVec: prometheus.NewGaugeVec(opts, labels)}
}

// Set sets the object's gauge; extraValues follow the order of extraLabels
// and, as with WithLabelValues, a wrong count panics.
func (g *ObjectGaugeVec) Set(namespace, name string, value float64, extraValues ...string) {
	g.WithLabelValues(append([]string{namespace, name}, extraValues...)...).Set(value)
}

// Forget deletes all series of the object.
func (g *ObjectGaugeVec) Forget(namespace, name string) int {
	return Forget(namespace, name, g.GaugeVec)
}
