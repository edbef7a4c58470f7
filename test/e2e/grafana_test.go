//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	raywrappers "github.com/gantry-dev/gantry/test/wrappers/ray"
)

// kubeRayDashboard is KubeRay's Grafana dashboard for its operator,
// config/grafana/KubeRay-Operator.json at v1.7.0 (commit 59d663a), as its
// users import it.
var kubeRayDashboard = filepath.Join(repoRoot, "test", "e2e", "testdata", "grafana", "KubeRay-Operator.json")

// grafanaPanel is one query of a dashboard panel.
type grafanaPanel struct{ title, expr string }

func (p grafanaPanel) String() string { return fmt.Sprintf("panel %q: %s", p.title, p.expr) }

// kubeRayPanels are the queries of the dashboard's panels whose expression
// reads one of prefixes' series.
func kubeRayPanels(prefixes ...string) []grafanaPanel {
	GinkgoHelper()
	raw, err := os.ReadFile(kubeRayDashboard)
	Expect(err).NotTo(HaveOccurred())
	type panel struct {
		Title   string  `json:"title"`
		Panels  []panel `json:"panels"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	}
	var dash struct {
		Panels []panel `json:"panels"`
	}
	Expect(json.Unmarshal(raw, &dash)).To(Succeed())
	var out []grafanaPanel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			walk(p.Panels)
			for _, t := range p.Targets {
				for _, prefix := range prefixes {
					if strings.Contains(t.Expr, prefix) {
						out = append(out, grafanaPanel{title: p.Title, expr: t.Expr})
						break
					}
				}
			}
		}
	}
	walk(dash.Panels)
	return out
}

// prometheus is a real Prometheus (Debian's package) that scrapes the
// manager's metrics endpoint every second, so that a dashboard's queries
// run as Grafana runs them, in PromQL against scraped series.
type prometheus struct{ url string }

// startPrometheus starts the Prometheus at bin scraping the manager's
// metrics as metricsGet reads them, stopped when the spec (or, started
// from a BeforeSuite, the suite) ends.
func startPrometheus(ctx context.Context, bin string) *prometheus {
	GinkgoHelper()
	dir, err := os.MkdirTemp("", "gantry-e2e-prometheus-")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(os.RemoveAll, dir)
	config := filepath.Join(dir, "prometheus.yml")
	scrape := fmt.Sprintf("  static_configs: [{targets: [%q]}]\n  scheme: %s\n", metricsAddr(), metricsScheme())
	if metricsScheme() == "https" {
		scrape += "  tls_config: {insecure_skip_verify: true}\n"
	}
	if t := metricsToken(); t != "" {
		scrape += fmt.Sprintf("  authorization: {credentials: %q}\n", t)
	}
	Expect(os.WriteFile(config, []byte("global: {scrape_interval: 1s, scrape_timeout: 1s}\nscrape_configs:\n- job_name: gantry\n"+scrape), 0o600)).To(Succeed())
	addr := fmt.Sprintf("127.0.0.1:%d", freePort())
	log, err := os.Create(filepath.Join(dir, "prometheus.log"))
	Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command(bin, "--config.file="+config, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = log, log
	Expect(cmd.Start()).To(Succeed())
	DeferCleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = log.Close()
	})
	p := &prometheus{url: "http://" + addr}
	Eventually(ctx, func(g Gomega) {
		status, _, err := httpGet(ctx, p.url+"/-/ready")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(status).To(Equal(200))
	}).WithTimeout(time.Minute).Should(Succeed(), "Prometheus did not become ready (log: %s)", log.Name())
	return p
}

// promSeries is one series of a range query's result.
type promSeries struct {
	Metric map[string]string `json:"metric"`
	Values [][2]any          `json:"values"`
}

// rangeQuery runs expr over [start, end] at a one-second step, as a
// Grafana time-series panel queries it.
func (p *prometheus) rangeQuery(ctx context.Context, expr string, start, end time.Time) ([]promSeries, error) {
	q := url.Values{"query": {expr}, "start": {unixSeconds(start)}, "end": {unixSeconds(end)}, "step": {"1"}}
	status, body, err := httpGet(ctx, p.url+"/api/v1/query_range?"+q.Encode())
	if err != nil {
		return nil, err
	}
	var reply struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []promSeries `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &reply); err != nil {
		return nil, fmt.Errorf("HTTP %d: %v: %s", status, err, body)
	}
	if reply.Status != "success" {
		return nil, fmt.Errorf("HTTP %d: %s", status, reply.Error)
	}
	return reply.Data.Result, nil
}

func unixSeconds(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

// expectPanelsHaveData requires that every panel, with the dashboard's
// $namespace variable set to ns, shows data for ns between start and now:
// a series whose namespace label is ns, or, for a panel that aggregates the
// label away after selecting ns, any series.
func (p *prometheus) expectPanelsHaveData(ctx context.Context, panels []grafanaPanel, ns string, start time.Time) {
	GinkgoHelper()
	Expect(panels).NotTo(BeEmpty())
	for _, panel := range panels {
		expr := strings.ReplaceAll(panel.expr, "$namespace", ns)
		Eventually(ctx, func(g Gomega) {
			result, err := p.rangeQuery(ctx, expr, start, time.Now())
			g.Expect(err).NotTo(HaveOccurred())
			ours := 0
			for _, s := range result {
				if n, ok := s.Metric["namespace"]; (!ok || n == ns) && len(s.Values) > 0 {
					ours++
				}
			}
			g.Expect(ours).To(BeNumerically(">", 0), "%s has no data for namespace %s; result: %v", panel, ns, result)
		}).WithTimeout(time.Minute).Should(Succeed())
		GinkgoWriter.Printf("%s: has data\n", panel)
	}
}

// prometheusForManager starts a Prometheus scraping the manager's metrics
// endpoint. Where it cannot, it returns nil and why: the endpoint is not
// reachable from here, or Prometheus is not installed (CI installs it). An
// endpoint that answers but not with 200 fails.
func prometheusForManager(ctx context.Context) (*prometheus, string) {
	GinkgoHelper()
	status, body, err := metricsGet(ctx)
	if err != nil {
		return nil, fmt.Sprintf("the manager's metrics are not reachable at %s: %v", metricsURL(), err)
	}
	// Reachable but unreadable is a failure, not a reason to skip: the
	// scheme or token (hack/local-cluster.sh) does not match the manager.
	Expect(status).To(Equal(http.StatusOK), "reading the manager's metrics at %s: %.300s", metricsURL(), body)
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		return nil, "Prometheus is not installed (apt-get install prometheus; CI installs it): " + err.Error()
	}
	return startPrometheus(ctx, bin), ""
}

var _ = Describe("KubeRay's Grafana dashboard", Label(labelRay), func() {
	// KubeRay's operator dashboard, imported unchanged, shows Gantry's
	// RayJobs and RayServices: a real Prometheus scrapes the manager, and
	// every RayJob and RayService panel's query, run as Grafana runs it,
	// returns series of this namespace. The RayJobs are one that fails (its
	// Ray job, simulated by hack/kwokray, exits 1) and one created
	// suspended; the RayService has no Serve config. The UpgradeInProgress
	// panel needs an upgrade: the real-node RayService spec checks it.
	It("shows Gantry's RayJobs and RayServices in its RayJob and RayService panels", func(ctx SpecContext) {
		prom, why := prometheusForManager(ctx)
		if prom == nil {
			Skip(why)
		}
		requireKwokRay(ctx, "")
		ns := newNamespace(ctx, "grafana")
		start := time.Now().Add(-time.Minute)
		failing := raywrappers.MakeRayJob("fails", ns, "python -c 'print(1)'").Annotation("gantry.dev/kwok-exit-code", "1").Obj()
		failing.UID = ""
		createStrict(ctx, failing)
		suspended := raywrappers.MakeRayJob("suspended", ns, "python -c 'print(1)'").ShutdownAfterJobFinishes(0).Suspend(true).Obj()
		suspended.UID = ""
		createStrict(ctx, suspended)
		svc := &rayv1.RayService{
			ObjectMeta: metav1.ObjectMeta{Name: "no-config", Namespace: ns},
			Spec:       rayv1.RayServiceSpec{RayClusterSpec: raywrappers.MakeRayCluster("no-config", ns).WorkerGroup("cpu", 1).Obj().Spec},
		}
		createStrict(ctx, svc)

		Eventually(ctx, func(g Gomega) {
			for name, want := range map[string]rayv1.JobDeploymentStatus{
				"fails": rayv1.JobDeploymentStatusFailed, "suspended": rayv1.JobDeploymentStatusSuspended,
			} {
				rj := &rayv1.RayJob{}
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, rj)).To(Succeed())
				g.Expect(rj.Status.JobDeploymentStatus).To(Equal(want), "%s: %+v", name, rj.Status)
			}
		}).WithTimeout(3 * time.Minute).Should(Succeed())

		var panels []grafanaPanel
		for _, p := range kubeRayPanels("kuberay_job_", "kuberay_service_") {
			if p.title != "UpgradeInProgress (true)" {
				panels = append(panels, p)
			}
		}
		Expect(len(panels)).To(Equal(6), "KubeRay v1.7.0's dashboard has 7 RayJob and RayService queries: %v", panels)
		prom.expectPanelsHaveData(ctx, panels, ns, start)
	})
})
