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
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return reconcileFigures{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return reconcileFigures{}, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
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
