//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/ray/dashboard"
	raywrappers "github.com/gantry-dev/gantry/test/wrappers/ray"
)

// RayJobs and RayServices whose heads run on kwok's simulated nodes reach
// their end states through hack/kwokray, which `make run` starts where it
// can route the heads' IPs here (root): a stand-in dashboard per head, its
// Ray jobs simulated, and the submitter's part played for it. The manager
// reaches those dashboards through the API server (--use-kubernetes-proxy),
// or, in-cluster, through the head Service; nothing points a cluster at a
// dashboard by annotation.

// requireKwokRay skips a spec that needs hack/kwokray, saying why it is not
// running (hack/local-cluster.sh records it in .run/ports.env).
func requireKwokRay(ctx SpecContext, _ string) {
	GinkgoHelper()
	requireSimulatedKubelet(ctx)
	if os.Getenv("GANTRY_KWOK_RAY") != "true" {
		Skip("needs hack/kwokray, the stand-in Ray dashboard for heads on simulated nodes, which make run did not start: " +
			os.Getenv("GANTRY_KWOK_RAY_SKIP_REASON"))
	}
}

// rayJobSucceeded checks the RayJob called name reached Complete with the
// Ray job SUCCEEDED.
func rayJobSucceeded(name string) func(g Gomega, ctx context.Context, ns string) {
	return func(g Gomega, ctx context.Context, ns string) {
		rj := &rayv1.RayJob{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, rj)).To(Succeed())
		g.Expect(rj.Status.JobDeploymentStatus).To(Equal(rayv1.JobDeploymentStatusComplete), "%+v", rj.Status)
		g.Expect(rj.Status.JobStatus).To(Equal(rayv1.JobStatusSucceeded))
	}
}

// rayServiceServing checks the RayService called name is Ready, every
// Serve application of its active cluster RUNNING, and its Serve Service
// (<name>-serve-svc, or the one spec.serveService names) has a ready
// endpoint of that cluster.
func rayServiceServing(name string) func(g Gomega, ctx context.Context, ns string) {
	return func(g Gomega, ctx context.Context, ns string) {
		svc := &rayv1.RayService{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, svc)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(svc.Status.Conditions, string(rayv1.RayServiceReady))).To(BeTrue(), "%v", svc.Status.Conditions)
		active := svc.Status.ActiveServiceStatus
		g.Expect(active.Applications).NotTo(BeEmpty())
		for app, st := range active.Applications {
			g.Expect(st.Status).To(Equal(rayv1.ApplicationStatusRunning), "application %s", app)
		}
		serveName := name + "-serve-svc"
		if svc.Spec.ServeService != nil && svc.Spec.ServeService.Name != "" {
			serveName = svc.Spec.ServeService.Name
		}
		n, clusters, err := readyServeEndpoints(ctx, ns, serveName)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(n).To(BeNumerically(">=", 1))
		g.Expect(clusters).To(HaveKey(active.RayClusterName))
	}
}

// kubeRaySample is a file of KubeRay v1.7.0's samples, as copied to
// test/wrappers/ray/testdata.
func kubeRaySample(dir, file string) string {
	return filepath.Join(repoRoot, "test", "wrappers", "ray", "testdata", dir, file)
}

// applyKubeRaySample applies a file of KubeRay v1.7.0's samples, unchanged,
// in namespace ns, and returns the name of its first object.
func applyKubeRaySample(ctx SpecContext, ns, dir, file string) string {
	GinkgoHelper()
	path := kubeRaySample(dir, file)
	out, err := kubectl(ctx, "apply", "--namespace", ns, "-f", path)
	Expect(err).NotTo(HaveOccurred(), "kubectl apply -f %s: %s", path, out)
	return sampleName(path)
}

// sampleName is the name of the first document of a sample file.
func sampleName(path string) string {
	GinkgoHelper()
	data, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	var meta struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	Expect(yaml.Unmarshal(data, &meta)).To(Succeed())
	Expect(meta.Metadata.Name).NotTo(BeEmpty(), "%s", path)
	return meta.Metadata.Name
}

var _ = Describe("KubeRay's samples on simulated nodes", Label(labelRay), func() {
	It("runs ray-job.sample.yaml, unchanged, to Complete: its submitter submits the entrypoint and ends with the Ray job", func(ctx SpecContext) {
		requireKwokRay(ctx, "")
		ns := newNamespace(ctx, "kuberay-rayjob")
		name := applyKubeRaySample(ctx, ns, "rayjob-samples", "ray-job.sample.yaml")
		Eventually(ctx, func(g Gomega) { rayJobSucceeded(name)(g, ctx, ns) }).Should(Succeed())

		// The Ray job the dashboard ran is the sample's entrypoint, under
		// the RayJob's submission ID; the submitter Job succeeded.
		rj := &rayv1.RayJob{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, rj)).To(Succeed())
		Expect(rj.Status.DashboardURL).NotTo(BeEmpty())
		heads := listPods(Default, ctx, ns, map[string]string{rayv1.RayClusterLabelKey: rj.Status.RayClusterName, rayv1.RayNodeTypeLabelKey: "head"})
		Expect(heads).To(HaveLen(1))
		dash, err := dashboard.New(dashboard.Config{URL: fmt.Sprintf("http://%s:8265", heads[0].Status.PodIP)})
		Expect(err).NotTo(HaveOccurred())
		info, err := dash.JobInfo(ctx, rj.Status.JobId)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Entrypoint).To(Equal(rj.Spec.Entrypoint))
		Expect(info.Status).To(Equal(dashboard.JobSucceeded))
		submitters := listPods(Default, ctx, ns, map[string]string{rayv1.RayOriginatedFromCRNameLabelKey: name, "batch.kubernetes.io/job-name": name})
		Expect(submitters).NotTo(BeEmpty(), "K8sJobMode: a submitter Job's Pod")
		Expect(string(submitters[0].Status.Phase)).To(Equal("Succeeded"))
	})

	It("runs ray-job.sidecar-mode.yaml, unchanged, to Complete: the head's submitter container submits and ends with the Ray job", func(ctx SpecContext) {
		requireKwokRay(ctx, "")
		ns := newNamespace(ctx, "kuberay-rayjob-sidecar")
		name := applyKubeRaySample(ctx, ns, "rayjob-samples", "ray-job.sidecar-mode.yaml")
		// Well inside the 300 s a RayJob in Running waits for a submitter
		// container that never ends.
		Eventually(ctx, func(g Gomega) { rayJobSucceeded(name)(g, ctx, ns) }).Should(Succeed())

		// No submitter Job; the head's submitter container ended with exit
		// code 0 while its Ray container runs on.
		Expect(listPods(Default, ctx, ns, map[string]string{"batch.kubernetes.io/job-name": name})).To(BeEmpty(), "SidecarMode runs no submitter Job")
		rj := &rayv1.RayJob{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, rj)).To(Succeed())
		heads := listPods(Default, ctx, ns, map[string]string{rayv1.RayClusterLabelKey: rj.Status.RayClusterName, rayv1.RayNodeTypeLabelKey: "head"})
		Expect(heads).To(HaveLen(1), "the sample keeps its cluster after the job")
		Expect(heads[0].Status.ContainerStatuses).To(HaveLen(len(heads[0].Spec.Containers)))
		for _, cs := range heads[0].Status.ContainerStatuses {
			switch cs.Name {
			case rayv1.SubmitterContainerName:
				Expect(cs.State.Terminated).NotTo(BeNil(), "the submitter container: %+v", cs.State)
				Expect(cs.State.Terminated.ExitCode).To(BeZero())
			default:
				Expect(cs.State.Running).NotTo(BeNil(), "container %s: %+v", cs.Name, cs.State)
			}
		}
	})

	It("serves ray-service.sample.yaml, unchanged: Ready, every application RUNNING, the Serve Service on its head", func(ctx SpecContext) {
		requireKwokRay(ctx, "")
		ns := newNamespace(ctx, "kuberay-rayservice")
		name := applyKubeRaySample(ctx, ns, "rayservice-samples", "ray-service.sample.yaml")
		Eventually(ctx, func(g Gomega) { rayServiceServing(name)(g, ctx, ns) }).Should(Succeed())
	})

	It("serves ray-service.custom-serve-service.yaml, unchanged: Ready through the Serve Service it names", func(ctx SpecContext) {
		requireKwokRay(ctx, "")
		ns := newNamespace(ctx, "kuberay-rayservice-named")
		name := applyKubeRaySample(ctx, ns, "rayservice-samples", "ray-service.custom-serve-service.yaml")
		Eventually(ctx, func(g Gomega) { rayServiceServing(name)(g, ctx, ns) }).Should(Succeed())
		svc := &rayv1.RayService{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, svc)).To(Succeed())
		Expect(svc.Spec.ServeService).NotTo(BeNil())
		Expect(svc.Status.NumServeEndpoints).To(BeNumerically(">=", 1))
	})

	It("fails an HTTPMode RayJob whose Ray job fails, after a retry on a new cluster", func(ctx SpecContext) {
		requireKwokRay(ctx, "")
		ns := newNamespace(ctx, "kwok-rayjob-fails")
		rj := raywrappers.MakeRayJob("fails", ns, "python -c 'raise SystemExit(3)'").Mode(rayv1.HTTPMode).BackoffLimit(1).
			Annotation("gantry.dev/kwok-exit-code", "3").Annotation("gantry.dev/kwok-run-seconds", "1").Obj()
		rj.UID = ""
		createStrict(ctx, rj)
		Eventually(ctx, func(g Gomega) {
			got := &rayv1.RayJob{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(rj), got)).To(Succeed())
			g.Expect(got.Status.JobDeploymentStatus).To(Equal(rayv1.JobDeploymentStatusFailed), "%+v", got.Status)
			g.Expect(got.Status.Reason).To(Equal(rayv1.AppFailed))
			g.Expect(got.Status.Failed).To(HaveValue(Equal(int32(2))), "the first attempt and its one retry")
		}).Should(Succeed())
	})
})
