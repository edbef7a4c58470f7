//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainerv1alpha1 "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

// labelInCluster marks specs that run Gantry's own image as the chart's
// Deployment, in the cluster (on the real node), not as a process on this
// machine.
const labelInCluster = "incluster"

// helmPath is the helm the specs run: $HELM, else the repo's bin/helm.
func helmPath() string {
	if h := os.Getenv("HELM"); h != "" {
		return h
	}
	return filepath.Join(repoRoot, "bin", "helm")
}

func helm(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, helmPath(), args...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

var _ = Describe("Gantry in the cluster", Label(labelManager, labelReal, labelInCluster), func() {
	// The chart installed as a cluster admin installs it, with the image from
	// `make image` (imported into the real node's containerd), two replicas
	// on the real node: the kubelet enforces the chart's security context
	// (non-root, read-only root filesystem) while the manager writes its
	// webhook certificate, the readiness probe gates the pods, one replica
	// holds the leader Lease, the API server calls the webhooks through the
	// chart's Service, a killed leader is replaced by the other replica, and
	// a rotated certificate is served without a restart.
	// A second release in namespaced mode beside the suite's, as in
	// release_test.go, so the two never reconcile the same objects. Serial:
	// its webhook for ClusterTrainingRuntimes sees every spec's requests.
	It("runs the chart's Deployment from Gantry's image: two replicas, one leader, webhooks through the Service, a killed leader replaced, certificates rotated", Serial, func(ctx SpecContext) {
		requireRealNode(ctx)
		if os.Getenv("USE_EXISTING_CLUSTER") == "true" {
			Skip("USE_EXISTING_CLUSTER=true: the cluster's own nodes may not have the image; make kind-e2e runs the whole suite in-cluster there")
		}
		team := newNamespace(ctx, "team-in")
		const release, releaseNS = "gantry-in", "gantry-in-system"
		DeferCleanup(func() {
			// Not the spec's context: the release goes even after an interrupt.
			out, err := helm(context.Background(), "--kubeconfig", os.Getenv("KUBECONFIG"), "uninstall", release, "-n", releaseNS, "--wait", "--timeout", "2m")
			if err != nil {
				GinkgoWriter.Printf("helm uninstall: %v\n%s\n", err, out)
			}
			_ = k8s.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNS}})
		})
		DeferOnFailure(func() {
			out, _ := kubectl(context.Background(), "-n", releaseNS, "logs", "deployment/"+release, "--all-containers", "--tail", fmt.Sprint(managerLogLines))
			AddReportEntry("in-cluster manager log", out)
			out, _ = kubectl(context.Background(), "-n", releaseNS, "describe", "pods")
			AddReportEntry("in-cluster manager pods", out)
		})

		out, err := helm(ctx, "--kubeconfig", os.Getenv("KUBECONFIG"), "upgrade", "--install", release, filepath.Join(repoRoot, "charts", "gantry"),
			"--namespace", releaseNS, "--create-namespace",
			"--set", "crds.install=false", "--set", "trainingRuntimes.install=false",
			"--set", "watchNamespaces={"+team+"}", "--set", "replicas=2",
			"--set", "leaderElection.leaseDuration=8s", "--set", "leaderElection.renewDeadline=5s", "--set", "leaderElection.retryPeriod=1s",
			"--set-json", `nodeSelector={"`+realNodeLabel+`":"true"}`,
			"--set-json", `tolerations=[{"key":"`+realNodeLabel+`","operator":"Equal","value":"true","effect":"NoSchedule"}]`,
			"--wait", "--timeout", "3m")
		Expect(err).NotTo(HaveOccurred(), out)

		deploy := &appsv1.Deployment{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: releaseNS, Name: release}, deploy)).To(Succeed())
		Expect(deploy.Status.ReadyReplicas).To(Equal(int32(2)))
		pods := listPods(Default, ctx, releaseNS, deploy.Spec.Selector.MatchLabels)
		Expect(pods).To(HaveLen(2))
		for i := range pods {
			p := &pods[i]
			expectScheduledRunningReady(Default, p)
			Expect(p.Spec.NodeName).To(HavePrefix("real-"), "pod %s", p.Name)
			c := p.Spec.Containers[0]
			Expect(c.Image).To(HavePrefix("ghcr.io/gantry-dev/gantry:"))
			Expect(c.SecurityContext).NotTo(BeNil())
			Expect(c.SecurityContext.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()), "pod %s: read-only root filesystem", p.Name)
			nonRoot := (c.SecurityContext.RunAsNonRoot != nil && *c.SecurityContext.RunAsNonRoot) ||
				(p.Spec.SecurityContext != nil && p.Spec.SecurityContext.RunAsNonRoot != nil && *p.Spec.SecurityContext.RunAsNonRoot)
			Expect(nonRoot).To(BeTrue(), "pod %s: runAsNonRoot (the kubelet refuses to start a root image under it)", p.Name)
			Expect(p.Status.ContainerStatuses[0].RestartCount).To(BeZero(), "pod %s restarted", p.Name)
		}

		pdbs := &policyv1.PodDisruptionBudgetList{}
		Expect(k8s.List(ctx, pdbs, client.InNamespace(releaseNS))).To(Succeed())
		Expect(pdbs.Items).To(HaveLen(1), "two replicas get a PodDisruptionBudget")

		leader := func(g Gomega) string {
			lease := &coordinationv1.Lease{}
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: releaseNS, Name: "gantry-manager.gantry.dev"}, lease)).To(Succeed())
			g.Expect(lease.Spec.HolderIdentity).NotTo(BeNil())
			holder := *lease.Spec.HolderIdentity
			g.Expect(holder).NotTo(BeEmpty())
			return holder
		}
		var first string
		Eventually(ctx, func(g Gomega) { first = leader(g) }).Should(Succeed())
		var leaderPod string
		for _, p := range pods {
			if strings.HasPrefix(first, p.Name) {
				leaderPod = p.Name
			}
		}
		Expect(leaderPod).NotTo(BeEmpty(), "the Lease holder %q is one of the two pods", first)

		// The webhooks are the release's own, called through its Service
		// (the API server resolves it to the pods), with the CA the manager
		// issued. failurePolicy Fail: a request in the watched namespace
		// succeeds only if the in-cluster webhook answered.
		vwcs := &admissionv1.ValidatingWebhookConfigurationList{}
		Expect(k8s.List(ctx, vwcs, client.MatchingLabels{"app.kubernetes.io/instance": release})).To(Succeed())
		Expect(vwcs.Items).To(HaveLen(1))
		for _, w := range vwcs.Items[0].Webhooks {
			Expect(w.ClientConfig.Service).NotTo(BeNil(), "webhook %s is called through the Service", w.Name)
			Expect(w.ClientConfig.URL).To(BeNil())
			Expect(w.ClientConfig.CABundle).NotTo(BeEmpty(), "webhook %s has the manager's CA", w.Name)
		}
		admitted := func(g Gomega, name string) {
			rt := &trainerv1alpha1.TrainingRuntime{}
			torch := torchRuntimeSpec()
			rt.ObjectMeta = metav1.ObjectMeta{Namespace: team, Name: name}
			rt.Spec = torch
			g.Expect(k8s.Create(ctx, rt, client.DryRunAll)).To(Succeed())
		}
		admitted(Default, "before")

		// The leader is killed; the other replica takes the Lease, the
		// Deployment makes a new pod, and the webhooks keep answering.
		Expect(k8s.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNS, Name: leaderPod}})).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			g.Expect(leader(g)).NotTo(HavePrefix(leaderPod), "a new leader")
		}).WithTimeout(time.Minute).Should(Succeed())
		Eventually(ctx, func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(deploy), deploy)).To(Succeed())
			g.Expect(deploy.Status.ReadyReplicas).To(Equal(int32(2)))
			admitted(g, "after")
		}).Should(Succeed())

		// Rotation: the certificate Secret loses its contents (as when the
		// CA is no longer valid). The replicas issue a new CA and serving
		// certificate into the Secret, inject the new CA into the webhook
		// configuration and serve the new certificate without a restart:
		// the API server, trusting only the new CA, reaches them again.
		secret := &corev1.Secret{}
		secretKey := types.NamespacedName{Namespace: releaseNS, Name: release + "-webhook-cert"}
		Expect(k8s.Get(ctx, secretKey, secret)).To(Succeed())
		oldCA := secret.Data["ca.crt"]
		Expect(oldCA).NotTo(BeEmpty(), "the Secret %s holds the CA", secretKey)
		Expect(vwcs.Items[0].Webhooks[0].ClientConfig.CABundle).To(Equal(oldCA), "the webhooks trust the Secret's CA")
		restarts := map[string]int32{}
		for _, p := range listPods(Default, ctx, releaseNS, deploy.Spec.Selector.MatchLabels) {
			restarts[p.Name] = p.Status.ContainerStatuses[0].RestartCount
		}
		base := secret.DeepCopy()
		secret.Data = nil
		Expect(k8s.Patch(ctx, secret, client.MergeFrom(base))).To(Succeed())
		var newCA []byte
		Eventually(ctx, func(g Gomega) {
			g.Expect(k8s.Get(ctx, secretKey, secret)).To(Succeed())
			newCA = secret.Data["ca.crt"]
			g.Expect(newCA).NotTo(BeEmpty(), "a new CA in the Secret")
			g.Expect(newCA).NotTo(Equal(oldCA))
			vwc := &admissionv1.ValidatingWebhookConfiguration{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&vwcs.Items[0]), vwc)).To(Succeed())
			for _, w := range vwc.Webhooks {
				g.Expect(w.ClientConfig.CABundle).To(Equal(newCA), "webhook %s trusts the new CA", w.Name)
			}
		}).WithTimeout(time.Minute).Should(Succeed())
		// Either replica may answer a call; ten in a row reach both with
		// near certainty, and each must serve a certificate of the new CA.
		Eventually(ctx, func(g Gomega) {
			for i := range 10 {
				admitted(g, fmt.Sprintf("rotated-%d", i))
			}
		}).WithTimeout(2*time.Minute).Should(Succeed(), "the replicas serve the new certificate")
		for _, p := range listPods(Default, ctx, releaseNS, deploy.Spec.Selector.MatchLabels) {
			if n, ok := restarts[p.Name]; ok {
				Expect(p.Status.ContainerStatuses[0].RestartCount).To(Equal(n), "pod %s restarted for the new certificate", p.Name)
			}
		}
	})
})
