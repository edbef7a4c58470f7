package app

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/raycluster"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
	"github.com/gantry-dev/gantry/test/testenv"
)

// readyz returns the verbose readyz status and body.
func readyz(probe string) (int, string) {
	resp, err := http.Get("http://" + probe + "/readyz?verbose")
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// urlWebhookConfigurations loads the generated webhook configurations
// (config/webhook/manifests.yaml), renames them and points every webhook at
// https://localhost:port by URL, without a caBundle: the manager must
// inject one before the API server can call it. Only the RayCluster
// webhook is kept, the one workload this test runs.
func urlWebhookConfigurations(t *testing.T, port int, validatingName string) *admissionv1.ValidatingWebhookConfiguration {
	t.Helper()
	f, err := os.Open(filepath.Join(testenv.RepoRoot(), "config", "webhook", "manifests.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		u := &admissionv1.ValidatingWebhookConfiguration{}
		if err := dec.Decode(u); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if u.Kind != "ValidatingWebhookConfiguration" {
			continue
		}
		out := &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: validatingName}}
		for _, w := range u.Webhooks {
			if w.ClientConfig.Service == nil || !strings.Contains(*w.ClientConfig.Service.Path, "ray-io") {
				continue
			}
			w.ClientConfig = admissionv1.WebhookClientConfig{URL: ptr.To(fmt.Sprintf("https://localhost:%d%s", port, *w.ClientConfig.Service.Path))}
			out.Webhooks = append(out.Webhooks, w)
		}
		if len(out.Webhooks) == 0 {
			t.Fatal("config/webhook/manifests.yaml has no RayCluster webhook (run make manifests)")
		}
		return out
	}
	t.Fatal("config/webhook/manifests.yaml has no ValidatingWebhookConfiguration (run make manifests)")
	return nil
}

func invalidRayCluster(ns string) *rayv1.RayCluster {
	return &rayv1.RayCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad"},
		Spec: rayv1.RayClusterSpec{
			HeadGroupSpec: rayv1.HeadGroupSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "ray-head", Image: "rayproject/ray:2.46.0"}},
			}}},
			WorkerGroupSpecs: []rayv1.WorkerGroupSpec{{
				GroupName: "w", Replicas: ptr.To[int32](1), MinReplicas: ptr.To[int32](3), MaxReplicas: ptr.To[int32](2),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "ray-worker", Image: "rayproject/ray:2.46.0"}},
				}},
			}},
		},
	}
}

// TestRunServesWebhooksWithSelfManagedCertificates runs the real manager
// with webhooks on and no certificate anywhere: it must create its CA and
// serving certificate in the Secret, inject the CA into the webhook
// configuration, serve, report ready, and the API server must then reject
// an invalid RayCluster through it. Emptying the Secret makes it issue a
// new certificate, which it injects and serves again.
func TestRunServesWebhooksWithSelfManagedCertificates(t *testing.T) {
	g := gomega.NewWithT(t)
	env := testenv.Start(t, testenv.Options{AddToScheme: []func(*apiruntime.Scheme) error{rayv1.AddToScheme}})
	ctx := context.Background()
	c := env.Client
	const ns, secretName, vwcName = "gantry-system", "gantry-webhook-cert", "test-validating"
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(gomega.Succeed())
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}})).To(gomega.Succeed())
	port := testenv.FreePort(t)
	g.Expect(c.Create(ctx, urlWebhookConfigurations(t, port, vwcName))).To(gomega.Succeed())

	reg := &workload.Registry{}
	reg.MustRegister(raycluster.Integration())
	probe := testenv.FreeAddr(t)
	certDir := t.TempDir()
	opts, err := ParseFlags([]string{
		"--controllers=raycluster", "--metrics-bind-address=0", "--health-probe-bind-address=" + probe,
		"--webhook-port=" + strconv.Itoa(port), "--webhook-secret-namespace=" + ns, "--webhook-secret-name=" + secretName,
		"--webhook-dns-names=localhost", "--webhook-cert-write", "--webhook-cert-dir=" + certDir,
		"--validating-webhook-configuration=" + vwcName, "--mutating-webhook-configuration=",
		"--ray-max-pods-per-cluster=3",
	}, reg)
	g.Expect(err).NotTo(gomega.HaveOccurred())

	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- Run(runCtx, env.Config, opts, reg) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(time.Minute):
			t.Error("the manager did not stop")
		}
	})

	g.Eventually(func() string { code, body := readyz(probe); return strconv.Itoa(code) + " " + body }).
		WithTimeout(90 * time.Second).WithPolling(200 * time.Millisecond).Should(gomega.HavePrefix("200 "))

	secret := &corev1.Secret{}
	g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: secretName}, secret)).To(gomega.Succeed())
	g.Expect(secret.Data).To(gomega.HaveKey("ca.crt"))
	g.Expect(secret.Data).To(gomega.HaveKey("tls.crt"))
	block, _ := pem.Decode(secret.Data["tls.crt"])
	g.Expect(block).NotTo(gomega.BeNil())
	cert, err := x509.ParseCertificate(block.Bytes)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(cert.DNSNames).To(gomega.ContainElements("gantry-webhook.gantry-system.svc", "localhost"))
	g.Expect(cert.NotAfter).To(gomega.BeTemporally(">", time.Now().Add(30*24*time.Hour)))

	expectInjected := func(g gomega.Gomega) {
		s := &corev1.Secret{}
		g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: secretName}, s)).To(gomega.Succeed())
		vwc := &admissionv1.ValidatingWebhookConfiguration{}
		g.Expect(c.Get(ctx, types.NamespacedName{Name: vwcName}, vwc)).To(gomega.Succeed())
		for _, w := range vwc.Webhooks {
			g.Expect(w.ClientConfig.CABundle).To(gomega.Equal(s.Data["ca.crt"]), "webhook %s caBundle", w.Name)
		}
	}
	g.Eventually(expectInjected).WithTimeout(30 * time.Second).Should(gomega.Succeed())

	expectRejected := func(g gomega.Gomega) {
		err := c.Create(ctx, invalidRayCluster("team"))
		g.Expect(err).To(gomega.HaveOccurred())
		g.Expect(err.Error()).To(gomega.ContainSubstring("denied the request"))
		g.Expect(err.Error()).To(gomega.ContainSubstring("minReplicas"))
	}
	g.Eventually(expectRejected).WithTimeout(30 * time.Second).Should(gomega.Succeed())

	// --ray-max-pods-per-cluster reaches admission: 1 head + 3 workers is
	// one Pod too many.
	big := invalidRayCluster("team")
	big.Name = "big"
	big.Spec.WorkerGroupSpecs[0].MinReplicas = ptr.To[int32](0)
	big.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](3)
	big.Spec.WorkerGroupSpecs[0].MaxReplicas = ptr.To[int32](3)
	err = c.Create(ctx, big)
	g.Expect(err).To(gomega.HaveOccurred())
	g.Expect(err.Error()).To(gomega.ContainSubstring("would have 4 Pods (1 head and 3 workers); at most 3 Pods per RayCluster"))

	// A lost Secret: the manager issues a new CA and certificate, injects
	// the new CA and serves the new certificate.
	oldCA := secret.Data["ca.crt"]
	secret.Data = nil
	g.Expect(c.Update(ctx, secret)).To(gomega.Succeed())
	g.Eventually(func() []byte {
		s := &corev1.Secret{}
		_ = c.Get(ctx, client.ObjectKeyFromObject(secret), s)
		return s.Data["ca.crt"]
	}).WithTimeout(60 * time.Second).ShouldNot(gomega.Or(gomega.BeEmpty(), gomega.Equal(oldCA)))
	g.Eventually(expectInjected).WithTimeout(30 * time.Second).Should(gomega.Succeed())
	g.Eventually(expectRejected).WithTimeout(90 * time.Second).Should(gomega.Succeed())
}

// TestRunNotReadyUntilExternalCertificatesArrive: with certificates
// provided from outside (cert-manager), readyz stays false while the files
// are missing, and turns true once they appear.
func TestRunNotReadyUntilExternalCertificatesArrive(t *testing.T) {
	g := gomega.NewWithT(t)
	env := testenv.Start(t, testenv.Options{WithoutCRDs: true})
	reg := &workload.Registry{}
	reg.MustRegister(workload.Integration{Name: "nothing", Setup: func(context.Context, ctrl.Manager, workload.Options) error { return nil }})
	probe := testenv.FreeAddr(t)
	certDir := t.TempDir()
	opts, err := ParseFlags([]string{
		"--controllers=nothing", "--metrics-bind-address=0", "--health-probe-bind-address=" + probe,
		"--webhook-port=" + strconv.Itoa(testenv.FreePort(t)), "--cert-management=external", "--webhook-cert-dir=" + certDir,
	}, reg)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(runCtx, env.Config, opts, reg) }()
	t.Cleanup(func() { cancel(); <-done })

	g.Eventually(func() string { _, body := readyz(probe); return body }).WithTimeout(time.Minute).
		Should(gomega.ContainSubstring("[+]informers ok"), "the manager should be up, with synced informers")
	g.Consistently(func() string { code, body := readyz(probe); return strconv.Itoa(code) + " " + body }).
		WithTimeout(3 * time.Second).WithPolling(250 * time.Millisecond).
		Should(gomega.And(gomega.HavePrefix("500 "), gomega.ContainSubstring("[-]webhooks failed")))

	testenv.WriteServingCert(t, certDir)
	g.Eventually(func() int { code, _ := readyz(probe); return code }).WithTimeout(time.Minute).
		WithPolling(200 * time.Millisecond).Should(gomega.Equal(http.StatusOK))
}
