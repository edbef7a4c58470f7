//go:build benchcompare

package benchcompare

import (
	"cmp"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

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
	return scrapeURL(http.DefaultClient, "http://"+addr+"/metrics")
}

// scrapeURL reads the Prometheus text served at url, through hc.
func scrapeURL(hc *http.Client, url string) (map[string]*dto.MetricFamily, error) {
	resp, err := hc.Get(url)
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

// apiServerWork is what the API server's own metrics say it did, as sums
// since it started: seconds spent serving requests per "VERB resource[/sub]"
// and watch events sent per kind, with their bytes.
type apiServerWork struct {
	requestSeconds map[string]float64
	requests       map[string]float64
	watchEvents    map[string]float64
	watchBytes     map[string]float64
}

// apiServerMetrics reads the API server's /metrics as the admin.
func (cl *cluster) apiServerMetrics() (apiServerWork, error) {
	w := apiServerWork{requestSeconds: map[string]float64{}, requests: map[string]float64{}, watchEvents: map[string]float64{}, watchBytes: map[string]float64{}}
	hc, err := rest.HTTPClientFor(cl.cfg)
	if err != nil {
		return w, err
	}
	families, err := scrapeURL(hc, strings.TrimSuffix(cl.cfg.Host, "/")+"/metrics")
	if err != nil {
		return w, err
	}
	request := func(m *dto.Metric) string {
		key := label(m, "verb") + " " + label(m, "resource")
		if sub := label(m, "subresource"); sub != "" {
			key += "/" + sub
		}
		return key
	}
	if fam := families["apiserver_request_duration_seconds"]; fam != nil {
		for _, m := range fam.GetMetric() {
			if label(m, "verb") == "WATCH" {
				continue // open for the whole run: its duration says nothing of work
			}
			w.requestSeconds[request(m)] += m.GetHistogram().GetSampleSum()
			w.requests[request(m)] += float64(m.GetHistogram().GetSampleCount())
		}
	}
	if fam := families["apiserver_watch_events_total"]; fam != nil {
		for _, m := range fam.GetMetric() {
			w.watchEvents[watchKey(m)] += m.GetCounter().GetValue()
		}
	}
	if fam := families["apiserver_watch_events_sizes"]; fam != nil {
		for _, m := range fam.GetMetric() {
			w.watchBytes[watchKey(m)] += m.GetHistogram().GetSampleSum()
		}
	}
	return w, nil
}

// watchKey names a watch-event series "resource.group" (the label was
// "kind" before Kubernetes v1.32).
func watchKey(m *dto.Metric) string {
	resource := label(m, "resource")
	if resource == "" {
		resource = label(m, "kind")
	}
	return strings.TrimSuffix(resource+"."+label(m, "group"), ".")
}

// logAPIServerWork logs what the API server did between before and after:
// the requests that took it longest (count and seconds) and the watch
// events it sent per kind.
func logAPIServerWork(t *testing.T, before, after apiServerWork) {
	type row struct {
		key      string
		seconds  float64
		count    float64
		kilobyte float64
	}
	var reqs, watches []row
	for key, s := range after.requestSeconds {
		if d := s - before.requestSeconds[key]; d > 0 {
			reqs = append(reqs, row{key: key, seconds: d, count: after.requests[key] - before.requests[key]})
		}
	}
	for key, n := range after.watchEvents {
		if d := n - before.watchEvents[key]; d > 0 {
			watches = append(watches, row{key: key, count: d, kilobyte: (after.watchBytes[key] - before.watchBytes[key]) / 1024})
		}
	}
	slices.SortFunc(reqs, func(a, b row) int { return cmp.Compare(b.seconds, a.seconds) })
	slices.SortFunc(watches, func(a, b row) int { return cmp.Compare(b.count, a.count) })
	for _, r := range reqs[:min(len(reqs), 15)] {
		t.Logf("API server: %-45s %7.0f requests, %7.1f s serving them (wall time, summed)", r.key, r.count, r.seconds)
	}
	for _, r := range watches[:min(len(watches), 10)] {
		t.Logf("API server: watch events %-35s %7.0f sent, %8.0f KiB", r.key, r.count, r.kilobyte)
	}
}
