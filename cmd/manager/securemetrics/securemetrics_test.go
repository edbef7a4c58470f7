// Package securemetrics tests the manager's --metrics-secure against a real
// API server. It is a package of its own so that its manager runs in a
// process of its own: controller-runtime refuses a second controller of the
// same name in one process, and cmd/manager's RBAC test runs every family.
package securemetrics

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/onsi/gomega"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/cmd/manager/app"
	"github.com/gantry-dev/gantry/pkg/controller/slurm"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
	"github.com/gantry-dev/gantry/test/testenv"
)

// metricsCase is one scrape: a token (or none), a method and a path, and
// the status --metrics-secure must answer.
type metricsCase struct {
	name, token, method, path string
	want                      int
	// upstream, when set, is controller-runtime's answer where it differs
	// on purpose (docs/install.md).
	upstream int
}

// TestSecureMetrics runs --metrics-secure against a real API server, the
// manager acting as the ServiceAccount of the chart (default values):
//
//   - Gantry's filter answers every scrape as controller-runtime's
//     filters.WithAuthenticationAndAuthorization does (both run side by
//     side on the same requests), and as expected: 401 without a token the
//     API server accepts, 403 for a ServiceAccount not bound to the chart's
//     metrics-reader ClusterRole or for another path or verb, 200 for one
//     that is. The chart's RBAC must let the manager create the
//     TokenReviews and SubjectAccessReviews, or every answer is a 500.
//   - The manager started with --metrics-secure serves its metrics over
//     HTTPS that way, the gantry_terminating_objects series among them.
func TestSecureMetrics(t *testing.T) {
	env := testenv.Start(t, testenv.Options{AddToScheme: []func(*runtime.Scheme) error{slinkyv1beta1.AddToScheme}})
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = testenv.ChartIdentity(t, env)
	ctx := context.Background()

	const ns = "monitoring"
	create(t, env.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	token := func(sa string) string {
		t.Helper()
		account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}}
		create(t, env.Client, account)
		tr := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))}}
		if err := env.Client.SubResource("token").Create(ctx, account, tr); err != nil {
			t.Fatalf("token of %s: %v", sa, err)
		}
		return tr.Status.Token
	}
	reader, stranger := token("prometheus"), token("stranger")
	create(t, env.Client, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-reads-gantry"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "gantry-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "prometheus"}},
	})
	cases := []metricsCase{
		{name: "no token", method: http.MethodGet, path: "/metrics", want: http.StatusUnauthorized},
		// controller-runtime's filter answers 500 "Authentication failed":
		// the API server's TokenReview of a bad token carries an error
		// message, which k8s.io/apiserver's webhook authenticator turns
		// into an error. It is the caller's token that is wrong, so Gantry
		// answers 401, as for no token.
		{name: "a token the API server refuses", token: "not-a-token", method: http.MethodGet, path: "/metrics",
			want: http.StatusUnauthorized, upstream: http.StatusInternalServerError},
		{name: "a ServiceAccount without the reader role", token: stranger, method: http.MethodGet, path: "/metrics", want: http.StatusForbidden},
		{name: "the reader", token: reader, method: http.MethodGet, path: "/metrics", want: http.StatusOK},
		// The header split as k8s.io/apiserver splits it: the second word
		// is the token, a third is ignored, an empty second is no token.
		{name: "the reader, a word after the token", token: reader + " trailing", method: http.MethodGet, path: "/metrics", want: http.StatusOK},
		{name: "two spaces before the token", token: " " + reader, method: http.MethodGet, path: "/metrics", want: http.StatusUnauthorized},
		{name: "the reader, a second time (cached)", token: reader, method: http.MethodGet, path: "/metrics", want: http.StatusOK},
		{name: "the reader, another path", token: reader, method: http.MethodGet, path: "/debug", want: http.StatusForbidden},
		{name: "the reader, another verb", token: reader, method: http.MethodPost, path: "/metrics", want: http.StatusForbidden},
	}

	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	serve := func(provider func(*rest.Config, *http.Client) (metricsserver.Filter, error)) string {
		filter, err := provider(cfg, httpClient)
		if err != nil {
			t.Fatal(err)
		}
		h, err := filter(logr.Discard(), ok)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv.URL
	}
	ours, upstream := serve(app.MetricsAuthFilter), serve(filters.WithAuthenticationAndAuthorization)
	for _, tc := range cases {
		wantUpstream := tc.want
		if tc.upstream != 0 {
			wantUpstream = tc.upstream
		}
		got, upstreamGot := scrape(t, http.DefaultClient, ours, tc), scrape(t, http.DefaultClient, upstream, tc)
		if got != tc.want || upstreamGot != wantUpstream {
			t.Errorf("%s: Gantry's filter answers %d (want %d), controller-runtime's %d (want %d)", tc.name, got, tc.want, upstreamGot, wantUpstream)
		}
	}

	reg := &workload.Registry{}
	reg.MustRegister(slurm.Integration())
	metricsAddr, probe := testenv.FreeAddr(t), testenv.FreeAddr(t)
	opts, err := app.ParseFlags([]string{"--controllers=slurm", "--webhook-port=0", "--metrics-secure",
		"--metrics-bind-address=" + metricsAddr, "--health-probe-bind-address=" + probe}, reg)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- app.Run(runCtx, cfg, opts, reg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	url := "https://" + metricsAddr
	g := gomega.NewWithT(t)
	g.Eventually(func() string {
		req, _ := http.NewRequest(http.MethodGet, url+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+reader)
		resp, err := insecure.Do(req)
		if err != nil {
			return err.Error()
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		return resp.Status + "\n" + string(body)
	}).WithTimeout(time.Minute).Should(gomega.And(gomega.HavePrefix("200 OK"),
		gomega.ContainSubstring(`gantry_terminating_objects{controller="slurm-nodeset"} 0`)))
	for _, tc := range cases {
		// The manager's metrics server answers other paths 404 before
		// any filter runs.
		if tc.want != http.StatusOK && tc.path == "/metrics" {
			if got := scrape(t, insecure, url, tc); got != tc.want {
				t.Errorf("the manager, %s: %d, want %d", tc.name, got, tc.want)
			}
		}
	}
	// Plain HTTP reaches nothing.
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err == nil {
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("the secure metrics endpoint answered plain HTTP with 200")
		}
	}
}

func scrape(t *testing.T, c *http.Client, base string, tc metricsCase) int {
	t.Helper()
	req, err := http.NewRequest(tc.method, base+tc.path, strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	if tc.token != "" {
		req.Header.Set("Authorization", "Bearer "+tc.token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", tc.name, err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

func create(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}
