//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	trainerv1alpha1 "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

// The addresses hack/local-cluster.sh binds the manager to, overridable the
// same way: the environment, else the run's .run/ports.env, else the usual
// ones.
func probeAddr() string   { return envOr("GANTRY_PROBE_ADDR", "127.0.0.1:8081") }
func metricsAddr() string { return envOr("GANTRY_METRICS_ADDR", "127.0.0.1:8080") }

// metricsScheme and metricsToken say how to read the manager's metrics:
// plain HTTP (a manager on this machine), or where it serves them with
// --metrics-secure (the chart's default, the in-cluster pass) HTTPS with
// the token of a ServiceAccount bound to the chart's metrics-reader
// ClusterRole, which hack/local-cluster.sh writes to .run/ports.env.
func metricsScheme() string { return envOr("GANTRY_METRICS_SCHEME", "http") }
func metricsToken() string  { return envOr("GANTRY_METRICS_TOKEN", "") }

// metricsURL is the manager's metrics endpoint.
func metricsURL() string { return metricsScheme() + "://" + metricsAddr() + "/metrics" }

// metricsClient reads the self-signed HTTPS endpoint of --metrics-secure.
var metricsClient = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
	TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the manager's certificate is self-signed
}}

// metricsGet reads the manager's metrics as Prometheus would.
func metricsGet(ctx context.Context) (status int, body string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricsURL(), nil)
	if err != nil {
		return 0, "", err
	}
	if t := metricsToken(); t != "" {
		req.Header.Set("Authorization", "Bearer "+t)
	}
	resp, err := metricsClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data), err
}

func envOr(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	if v := runPorts()[key]; v != "" {
		return v
	}
	return fallback
}

// runPorts reads the NAME=VALUE lines of the ports `make run` chose for
// this checkout (hack/local-cluster.sh), if any.
func runPorts() map[string]string {
	ports := map[string]string{}
	data, err := os.ReadFile(filepath.Join(repoRoot, ".run", "ports.env"))
	if err != nil {
		return ports
	}
	for line := range strings.Lines(string(data)) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			ports[k] = v
		}
	}
	return ports
}

// freePort returns a port on 127.0.0.1 that nothing listens on now.
func freePort() int {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

var httpClient = &http.Client{Timeout: 5 * time.Second}

func httpGet(ctx context.Context, url string) (status int, body string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data), err
}

var _ = Describe("Manager", Label(labelManager), func() {
	// The manager answers its readiness probe and exports the workload
	// series of the objects that exist, and only of those. It needs the
	// manager's endpoints on this machine (`make run`); against a cluster
	// where the manager runs in-cluster it skips. Other specs' objects live
	// in other namespaces, and the series are selected by namespace, so it
	// runs in parallel with them.
	It("answers its probes and exports metrics of existing objects only", func(ctx SpecContext) {
		readyz := "http://" + probeAddr() + "/readyz"
		if _, _, err := httpGet(ctx, readyz); err != nil {
			Skip(fmt.Sprintf("the manager is not reachable at %s (%v). "+
				"Set GANTRY_PROBE_ADDR and GANTRY_METRICS_ADDR (e.g. to a port-forward) to run this spec", readyz, err))
		}
		if _, _, err := metricsGet(ctx); err != nil {
			Skip(fmt.Sprintf("the manager's metrics are not reachable at %s (%v). "+
				"Set GANTRY_METRICS_ADDR (e.g. to a port-forward) to run this spec", metricsURL(), err))
		}
		for _, probe := range []string{readyz, "http://" + probeAddr() + "/healthz"} {
			status, body, err := httpGet(ctx, probe)
			Expect(err).NotTo(HaveOccurred())
			Expect(status).To(Equal(http.StatusOK), "%s: %s", probe, body)
		}

		ns := newNamespace(ctx, "metrics")
		rc := createMinimalRayCluster(ctx, ns)
		tj := loadSample[trainerv1alpha1.TrainJob](trainJobSample)
		tj.Namespace = ns
		createStrict(ctx, tj)

		clusterInfo := series{name: "kuberay_cluster_info", labels: map[string]string{"namespace": ns, "name": rc.Name}}
		// The TrainJob runs to completion on the JobSet controller, so whichever
		// state it is in when scraped, exactly one of its state series is 1.
		trainJobStates := series{name: "gantry_trainjob_status", labels: map[string]string{"namespace": ns, "name": tj.Name}}
		Eventually(ctx, func(g Gomega) {
			exposition := scrape(g, ctx)
			g.Expect(clusterInfo.valueIn(exposition)).To(Equal("1"), "%s", clusterInfo)
			g.Expect(trainJobStates.valuesIn(exposition)).To(ContainElement("1"), "%s", trainJobStates)
		}).Should(Succeed())

		// Series of deleted objects must go, or a long-running manager's
		// metrics grow with every object ever created.
		anyTrainJobState := series{name: "gantry_trainjob_status", labels: map[string]string{"namespace": ns, "name": tj.Name}}
		Expect(k8s.Delete(ctx, rc, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
		Expect(k8s.Delete(ctx, tj, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			expectGone(g, ctx, &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: rc.Name}})
			expectGone(g, ctx, &trainerv1alpha1.TrainJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tj.Name}})
			exposition := scrape(g, ctx)
			g.Expect(clusterInfo.valueIn(exposition)).To(BeEmpty(), "%s after deletion", clusterInfo)
			g.Expect(anyTrainJobState.valueIn(exposition)).To(BeEmpty(), "%s after deletion", anyTrainJobState)
		}).Should(Succeed())
	})
})

func scrape(g Gomega, ctx context.Context) string {
	status, body, err := metricsGet(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(status).To(Equal(http.StatusOK), "%s: %s", metricsURL(), body)
	return body
}

// series selects samples of one metric by a subset of their labels.
type series struct {
	name   string
	labels map[string]string
}

func (s series) String() string { return fmt.Sprintf("%s%v", s.name, s.labels) }

// valueIn returns the value of the first sample in a Prometheus text
// exposition that matches s, or "" when none does.
func (s series) valueIn(exposition string) string {
	for _, line := range strings.Split(exposition, "\n") {
		name, labels, value, ok := parseSample(line)
		if !ok || name != s.name {
			continue
		}
		matches := true
		for k, v := range s.labels {
			if labels[k] != v {
				matches = false
				break
			}
		}
		if matches {
			return value
		}
	}
	return ""
}

// valuesIn returns the values of every sample in the exposition that
// matches s.
func (s series) valuesIn(exposition string) []string {
	var out []string
	for _, line := range strings.Split(exposition, "\n") {
		if v := s.valueIn(line); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// parseSample splits one line of the text format, name{k="v",...} value,
// enough for the label values Gantry exports (names, namespaces, UIDs).
func parseSample(line string) (name string, labels map[string]string, value string, ok bool) {
	line = strings.TrimSpace(line)
	if line == "" || strings.HasPrefix(line, "#") {
		return "", nil, "", false
	}
	labels = map[string]string{}
	rest := line
	if open := strings.IndexByte(line, '{'); open >= 0 {
		closing := strings.LastIndexByte(line, '}')
		if closing < open {
			return "", nil, "", false
		}
		name, rest = line[:open], line[closing+1:]
		for _, pair := range strings.Split(line[open+1:closing], ",") {
			k, v, found := strings.Cut(pair, "=")
			if found {
				labels[strings.TrimSpace(k)] = strings.Trim(v, `"`)
			}
		}
	} else {
		var found bool
		if name, rest, found = strings.Cut(line, " "); !found {
			return "", nil, "", false
		}
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return "", nil, "", false
	}
	return name, labels, fields[0], true
}
