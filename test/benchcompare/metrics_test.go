//go:build benchcompare

package benchcompare

import (
	"fmt"
	"math"
	"net/http"
	"slices"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// reconcileFigures are what an operator's controller-runtime metrics say
// of a run, summed over all its controllers: every operator here is built
// on controller-runtime, so the names and buckets are the same.
type reconcileFigures struct {
	reconciles, errors, requeues float64
	// p50 and p99 of controller_runtime_reconcile_time_seconds, in
	// seconds.
	reconcileP50, reconcileP99 float64
	// reconcileSeconds is the time spent reconciling, all reconciles
	// together: with one worker, what the queue costs every object.
	reconcileSeconds float64
	// queueMean is the mean of workqueue_queue_duration_seconds (time an
	// item waits in the queue), in seconds: its buckets are powers of ten,
	// too coarse for a percentile.
	queueMean float64
}

// scrapeReconciles reads the Prometheus text served at addr/metrics.
func scrapeReconciles(addr string) (reconcileFigures, error) {
	families, err := scrape(addr)
	if err != nil {
		return reconcileFigures{}, err
	}
	var f reconcileFigures
	if fam := families["controller_runtime_reconcile_total"]; fam != nil {
		for _, m := range fam.GetMetric() {
			v := m.GetCounter().GetValue()
			f.reconciles += v
			switch label(m, "result") {
			case "error":
				f.errors += v
			case "requeue", "requeue_after":
				f.requeues += v
			}
		}
	}
	f.reconcileP50, f.reconcileP99 = quantile(families["controller_runtime_reconcile_time_seconds"], 0.5), quantile(families["controller_runtime_reconcile_time_seconds"], 0.99)
	f.queueMean = mean(families["workqueue_queue_duration_seconds"])
	f.reconcileSeconds = total(families["controller_runtime_reconcile_time_seconds"])
	return f, nil
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// total is the sum of the observations of the histograms of fam.
func total(fam *dto.MetricFamily) float64 {
	sum := 0.0
	for _, m := range fam.GetMetric() {
		sum += m.GetHistogram().GetSampleSum()
	}
	return sum
}

// mean is the mean of the observations of the histograms of fam.
func mean(fam *dto.MetricFamily) float64 {
	sum, count := 0.0, 0.0
	for _, m := range fam.GetMetric() {
		sum += m.GetHistogram().GetSampleSum()
		count += float64(m.GetHistogram().GetSampleCount())
	}
	if count == 0 {
		return math.NaN()
	}
	return sum / count
}

// quantile estimates the q-quantile of the histograms of fam summed
// together, interpolating linearly inside a bucket as Prometheus's
// histogram_quantile does. NaN when there are no observations.
func quantile(fam *dto.MetricFamily, q float64) float64 {
	if fam == nil {
		return math.NaN()
	}
	counts := map[float64]float64{}
	total := 0.0
	for _, m := range fam.GetMetric() {
		h := m.GetHistogram()
		total += float64(h.GetSampleCount())
		for _, b := range h.GetBucket() {
			counts[b.GetUpperBound()] += float64(b.GetCumulativeCount())
		}
	}
	if total == 0 {
		return math.NaN()
	}
	bounds := make([]float64, 0, len(counts))
	for b := range counts {
		bounds = append(bounds, b)
	}
	slices.Sort(bounds)
	rank, lower, below := q*total, 0.0, 0.0
	for _, upper := range bounds {
		if c := counts[upper]; c >= rank {
			if c == below {
				return upper
			}
			return lower + (upper-lower)*(rank-below)/(c-below)
		} else {
			lower, below = upper, c
		}
	}
	// Above the highest bound: that bound is all a histogram can say.
	return bounds[len(bounds)-1]
}

// scrape reads the Prometheus text served at addr/metrics.
func scrape(addr string) (map[string]*dto.MetricFamily, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
}

// goMemory says where a Go operator's memory is, from the Go collector
// every controller-runtime metrics endpoint serves: the heap in use, the
// heap kept from the OS though free (idle, not released), goroutine
// stacks, the runtime's own structures, and the goroutines and threads.
// With the RSS split it tells heap growth from the collector's headroom
// and from stacks.
func goMemory(addr string) (string, error) {
	families, err := scrape(addr)
	if err != nil {
		return "", err
	}
	v := func(name string) float64 {
		fam := families[name]
		if fam == nil || len(fam.GetMetric()) == 0 {
			return math.NaN()
		}
		return fam.GetMetric()[0].GetGauge().GetValue()
	}
	const mib = 1 << 20
	return fmt.Sprintf("heap in use %.1f MiB, heap free but kept %.1f MiB, stacks %.1f MiB, runtime %.1f MiB, %.0f goroutines, %.0f threads",
		v("go_memstats_heap_inuse_bytes")/mib,
		(v("go_memstats_heap_idle_bytes")-v("go_memstats_heap_released_bytes"))/mib,
		v("go_memstats_stack_inuse_bytes")/mib,
		(v("go_memstats_mspan_inuse_bytes")+v("go_memstats_mcache_inuse_bytes")+v("go_memstats_gc_sys_bytes")+v("go_memstats_other_sys_bytes")+v("go_memstats_buck_hash_sys_bytes"))/mib,
		v("go_goroutines"), v("go_threads")), nil
}
