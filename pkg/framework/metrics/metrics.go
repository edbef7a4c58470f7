package metrics

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

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

// StateGauge is a gauge with one series per object, always 1, whose labels
// say what state the object is in (a state name, its uid, a condition's
// status). Setting an object's new state replaces its old series instead
// of adding a second one, so a dashboard that sums the gauge counts each
// object once. It is a prometheus.Collector; safe for concurrent use.
type StateGauge struct {
	vec *prometheus.GaugeVec
	mu  sync.Mutex
	// published is each object's current labels.
	published map[objectKey]prometheus.Labels
}

type objectKey struct{ namespace, name string }

// NewStateGauge creates a state gauge with the given labels, which must
// include LabelNamespace and LabelName (in any order, so upstream label
// orders carry over).
func NewStateGauge(opts prometheus.GaugeOpts, labels ...string) *StateGauge {
	if !slices.Contains(labels, LabelNamespace) || !slices.Contains(labels, LabelName) {
		panic(fmt.Sprintf("state gauge %s needs the labels %s and %s", opts.Name, LabelNamespace, LabelName))
	}
	return &StateGauge{vec: prometheus.NewGaugeVec(opts, labels), published: map[objectKey]prometheus.Labels{}}
}

// Set publishes the object's state; labels name every label of the gauge.
// The object's previous series, if its labels differ, is deleted.
func (g *StateGauge) Set(labels prometheus.Labels) {
	key := objectKey{namespace: labels[LabelNamespace], name: labels[LabelName]}
	g.mu.Lock()
	defer g.mu.Unlock()
	if before, ok := g.published[key]; ok {
		if maps.Equal(before, labels) {
			return
		}
		g.vec.Delete(before)
	}
	g.vec.With(labels).Set(1)
	g.published[key] = maps.Clone(labels)
}

// Forget deletes the object's series.
func (g *StateGauge) Forget(namespace, name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	Forget(namespace, name, g.vec)
	delete(g.published, objectKey{namespace: namespace, name: name})
}

// Describe implements prometheus.Collector.
func (g *StateGauge) Describe(ch chan<- *prometheus.Desc) { g.vec.Describe(ch) }

// Collect implements prometheus.Collector.
func (g *StateGauge) Collect(ch chan<- prometheus.Metric) { g.vec.Collect(ch) }

// Registrar registers a workload's collectors one after another and keeps
// the first error, so that a constructor reads as the list of its metrics:
//
//	r := metrics.NewRegistrar(reg)
//	m.status = metrics.Add(r, metrics.NewStateGauge(...))
//	m.created = metrics.Add(r, prometheus.NewCounterVec(...))
//	return m, r.Err()
type Registrar struct {
	reg prometheus.Registerer
	err error
}

// NewRegistrar registers on reg (nil means controller-runtime's registry).
func NewRegistrar(reg prometheus.Registerer) *Registrar { return &Registrar{reg: reg} }

// Add registers c (see Register) unless an earlier one failed, and returns
// the collector to use.
func Add[C prometheus.Collector](r *Registrar, c C) C {
	if r.err != nil {
		return c
	}
	registered, err := Register(r.reg, c)
	if err != nil {
		r.err = err
		return c
	}
	return registered
}

// Err is the first registration error.
func (r *Registrar) Err() error { return r.err }
