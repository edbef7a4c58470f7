//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/gantry-dev/gantry/test/testenv"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var _ = Describe("A second release", Label(labelManager), func() {
	// A second release of the chart in its own namespace, watching one
	// namespace only, beside the release the suite runs on: the install must
	// not clash with the first (cluster objects are named per release; CRDs
	// and runtimes are left to the first), its manager must start and serve
	// its webhooks with only the namespaced permissions the chart gives it
	// (its caches cannot sync otherwise), and those permissions must stop at
	// the watched namespace.
	//
	// It starts a second manager on this machine through
	// hack/local-cluster.sh, so it needs `make test-e2e`'s local control
	// plane. Serial: the second release's webhooks for cluster-scoped
	// objects (ClusterTrainingRuntimes) see every other spec's requests
	// while it is installed.
	It("installs in namespaced mode beside the first", Serial, func(ctx SpecContext) {
		if os.Getenv("USE_EXISTING_CLUSTER") == "true" {
			Skip("USE_EXISTING_CLUSTER=true: this spec starts a second manager on this machine, which a remote API server cannot call; it runs in `make test-e2e` on the local control plane")
		}
		team := newNamespace(ctx, "team-b")
		const release, releaseNS = "gantry-b", "gantry-b-system"
		releaseLog := filepath.Join(repoRoot, ".run", "release-"+release, "manager.log")

		script := filepath.Join(repoRoot, "hack", "local-cluster.sh")
		// Free ports, not fixed ones: another checkout's run may hold those.
		probe := fmt.Sprintf("127.0.0.1:%d", freePort())
		env := append(os.Environ(),
			"GANTRY_RELEASE="+release, "GANTRY_RELEASE_NAMESPACE="+releaseNS,
			fmt.Sprintf("GANTRY_WEBHOOK_PORT=%d", freePort()), "GANTRY_PROBE_ADDR="+probe, fmt.Sprintf("GANTRY_METRICS_ADDR=127.0.0.1:%d", freePort()),
			"GANTRY_HELM_ARGS=--set crds.install=false --set trainingRuntimes.install=false --set watchNamespaces={"+team+"}",
		)
		run := func(ctx context.Context, verb string) (string, error) {
			cmd := exec.CommandContext(ctx, "bash", script, verb)
			cmd.Env = env
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			return out.String(), err
		}
		DeferCleanup(func() {
			// Not the spec's context: the release goes even after an interrupt.
			if out, err := run(context.Background(), "release-down"); err != nil {
				GinkgoWriter.Printf("release-down: %v\n%s\n", err, out)
			}
		})
		// The second manager's log too, when this spec fails.
		DeferOnFailure(func() {
			if log, err := os.ReadFile(releaseLog); err == nil {
				AddReportEntry(fmt.Sprintf("manager log of release %s: last %d lines", release, managerLogLines), testenv.TailLines(string(log), managerLogLines))
			}
		})
		out, err := run(ctx, "release-up")
		if err != nil {
			log, _ := os.ReadFile(releaseLog)
			Fail(fmt.Sprintf("installing and starting release %s failed: %v\n%s\nmanager log:\n%s", release, err, out, testenv.TailLines(string(log), 40)))
		}

		// Ready means: informers synced (with namespaced RBAC only) and the
		// webhook server serving a certificate whose CA is injected.
		status, body, err := httpGet(ctx, "http://"+probe+"/readyz?verbose")
		Expect(err).NotTo(HaveOccurred())
		Expect(status).To(Equal(http.StatusOK), body)

		// The release's namespaced permissions live in Roles in the watched
		// namespace; its ClusterRole grants no Pods anywhere.
		roles := &rbacv1.RoleList{}
		Expect(k8s.List(ctx, roles, client.InNamespace(team), client.MatchingLabels{"app.kubernetes.io/instance": release})).To(Succeed())
		Expect(roles.Items).NotTo(BeEmpty(), "release %s has no Role in its watched namespace %s", release, team)
		sa := "system:serviceaccount:" + releaseNS + ":" + release
		for _, tc := range []struct {
			ns      string
			allowed bool
		}{{team, true}, {"default", false}} {
			out, _ := kubectl(ctx, "auth", "can-i", "create", "pods", "-n", tc.ns, "--as", sa)
			Expect(strings.TrimSpace(out)).To(Equal(map[bool]string{true: "yes", false: "no"}[tc.allowed]),
				"can %s create pods in %s", sa, tc.ns)
		}

		// Its own webhook configuration, with its CA injected, selecting only
		// the watched namespace.
		vwcs := &admissionv1.ValidatingWebhookConfigurationList{}
		Expect(k8s.List(ctx, vwcs, client.MatchingLabels{"app.kubernetes.io/instance": release})).To(Succeed())
		Expect(vwcs.Items).To(HaveLen(1))
		Expect(vwcs.Items[0].Webhooks).NotTo(BeEmpty())
		for _, w := range vwcs.Items[0].Webhooks {
			Expect(w.ClientConfig.CABundle).NotTo(BeEmpty(), "webhook %s of release %s has no CA", w.Name, release)
			if w.Name == "vclustertrainingruntime.trainer.kubeflow.org" {
				continue // cluster-scoped: a namespaceSelector would not apply
			}
			Expect(w.NamespaceSelector).NotTo(BeNil(), "webhook %s of a namespaced release selects every namespace", w.Name)
			Expect(fmt.Sprint(w.NamespaceSelector.MatchExpressions)).To(ContainSubstring(team),
				"webhook %s of release %s must select only its watched namespace", w.Name, release)
		}

		// The manager never hit a permission error.
		log, err := os.ReadFile(releaseLog)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(log)).NotTo(ContainSubstring("forbidden"), "manager of release %s:\n%s", release, testenv.TailLines(string(log), 40))

		// The first release is untouched: its webhook configuration still exists.
		Expect(k8s.Get(ctx, types.NamespacedName{Name: "gantry-validating-webhook-configuration"}, &admissionv1.ValidatingWebhookConfiguration{})).To(Succeed())
	})
})
