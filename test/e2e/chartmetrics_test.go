//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	raywrappers "github.com/gantry-dev/gantry/test/wrappers/ray"
)

// suiteProm scrapes the manager for the whole run (started on process 1
// before the first spec), so that after the last spec it knows every
// series the manager exported while the suite exercised it;
// suitePromWhy says why there is none.
var (
	suiteProm    *prometheus
	suitePromWhy string
)

// startSuitePrometheus starts suiteProm on process 1.
func startSuitePrometheus(ctx context.Context) {
	suiteProm, suitePromWhy = prometheusForManager(ctx)
}

// checkChartMetrics: every metric name a query of the chart's Grafana
// dashboards or an expression of its PrometheusRule reads (parsed with
// Prometheus' own PromQL parser, bin/promql-metrics) is one the manager
// exported during the run. Only a run of the whole suite exercises every
// family, so a filtered run reports why it does not check.
func checkChartMetrics(ctx context.Context) {
	const entry = "chart dashboards and alerts read only series the manager exports"
	if suiteProm == nil {
		AddReportEntry(entry, "not checked: "+suitePromWhy)
		return
	}
	cfg, _ := GinkgoConfiguration()
	if cfg.LabelFilter != "" || len(cfg.FocusStrings) > 0 || len(cfg.FocusFiles) > 0 {
		AddReportEntry(entry, fmt.Sprintf("not checked: this run is filtered (labels %q, focus %v %v); the whole suite exports every family's series",
			cfg.LabelFilter, cfg.FocusStrings, cfg.FocusFiles))
		return
	}
	holdDeletion(ctx)

	names := chartMetricNames()
	Expect(names).To(ContainElement("gantry_terminating_oldest_deletion_timestamp_seconds"), "the stuck-deletion alert's series")
	seen := suiteProm.metricNames(ctx)
	var missing []string
	for _, n := range names {
		if !slices.Contains(seen, n) {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		Fail(fmt.Sprintf("e2e: the chart's dashboards or alerts read series the manager never exported during the run: %v (it exported %d names)", missing, len(seen)))
	}
	AddReportEntry(entry, fmt.Sprintf("%d metric names, all exported: %v", len(names), names))
}

// holdDeletion keeps a RayCluster in deletion (a finalizer nobody else
// removes) until the manager's gantry_terminating_* series show it, as a
// stuck deletion would; the suite's own deletions are too quick for a
// scrape to see them reliably.
func holdDeletion(ctx context.Context) {
	GinkgoHelper()
	const hold = "e2e.gantry.dev/hold"
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-terminating-", Labels: map[string]string{e2eLabel: "true"}}}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	defer func() { _ = k8s.Delete(context.Background(), ns) }()
	rc := raywrappers.MakeRayCluster("held", ns.Name).Obj()
	rc.UID = ""
	rc.Spec.Suspend = new(true)
	rc.Finalizers = []string{hold}
	Expect(k8s.Create(ctx, rc)).To(Succeed())
	Expect(k8s.Delete(ctx, rc)).To(Succeed())
	Eventually(ctx, func(g Gomega) {
		names := suiteProm.metricNamesSince(ctx, time.Now().Add(-time.Minute))
		g.Expect(names).To(ContainElement("gantry_terminating_oldest_deletion_timestamp_seconds"))
	}).WithTimeout(time.Minute).Should(Succeed())
	Eventually(ctx, func(g Gomega) {
		live := &rayv1.RayCluster{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(rc), live)).To(Succeed())
		live.Finalizers = slices.DeleteFunc(live.Finalizers, func(f string) bool { return f == hold })
		g.Expect(k8s.Update(ctx, live)).To(Succeed())
	}).Should(Succeed())
}

// chartMetricNames are the metric names the chart's dashboards and alerts
// read (hack/dashboard-exprs.sh prints their expressions).
func chartMetricNames() []string {
	GinkgoHelper()
	// The script runs from the repository's root: the paths must be absolute.
	root, err := filepath.Abs(repoRoot)
	Expect(err).NotTo(HaveOccurred())
	exprs, err := exec.Command(filepath.Join(root, "hack", "dashboard-exprs.sh"), filepath.Join(root, "bin", "helm")).Output()
	Expect(err).NotTo(HaveOccurred(), "hack/dashboard-exprs.sh: %s", stderrOf(err))
	parse := exec.Command(filepath.Join(root, "bin", "promql-metrics"))
	parse.Stdin = bytes.NewReader(exprs)
	out, err := parse.Output()
	Expect(err).NotTo(HaveOccurred(), "bin/promql-metrics (make bin/promql-metrics): %s", stderrOf(err))
	names := strings.Fields(string(out))
	Expect(names).NotTo(BeEmpty())
	return names
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

// metricNames are the names of every series Prometheus holds.
func (p *prometheus) metricNames(ctx context.Context) []string {
	return p.metricNamesSince(ctx, time.Time{})
}

// metricNamesSince are the names of the series with samples after since
// (the zero time: any).
func (p *prometheus) metricNamesSince(ctx context.Context, since time.Time) []string {
	GinkgoHelper()
	q := url.Values{}
	if !since.IsZero() {
		q.Set("start", unixSeconds(since))
	}
	status, body, err := httpGet(ctx, p.url+"/api/v1/label/__name__/values?"+q.Encode())
	Expect(err).NotTo(HaveOccurred())
	var reply struct {
		Status string   `json:"status"`
		Data   []string `json:"data"`
	}
	Expect(json.Unmarshal([]byte(body), &reply)).To(Succeed(), "HTTP %d: %s", status, body)
	Expect(reply.Status).To(Equal("success"), body)
	return reply.Data
}
