//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

// pointDashboard sets the RayJob's cluster's gantry.dev/ray-dashboard-url
// to its head Pod's IP once the head has one: a manager outside the
// cluster cannot resolve the head Service's name (the manager runs with
// RayDashboardURLOverride in this tier). The submitter, inside the
// cluster, still uses the Service's name.
func pointDashboard(ctx context.Context, job *rayv1.RayJob) string {
	GinkgoHelper()
	var cluster string
	Eventually(ctx, func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
		cluster = job.Status.RayClusterName
		g.Expect(cluster).NotTo(BeEmpty())
		head := podOf(g, ctx, job.Namespace, cluster, "head")
		g.Expect(head.Status.PodIP).NotTo(BeEmpty())
		rc := &rayv1.RayCluster{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: cluster}, rc)).To(Succeed())
		patch := client.MergeFrom(rc.DeepCopy())
		metav1.SetMetaDataAnnotation(&rc.ObjectMeta, rayv1.AnnotationRayDashboardURL, fmt.Sprintf("http://%s:8265", head.Status.PodIP))
		g.Expect(k8s.Patch(ctx, rc, patch)).To(Succeed())
	}).Should(Succeed())
	return cluster
}

var _ = Describe("A RayJob on the real node", Label(labelRay, labelReal), func() {
	// The whole K8sJobMode path in real containers: Gantry creates the
	// cluster, waits for it to be ready and creates the submitter Job; the
	// submitter's `ray job submit` (the stand-in CLI) reaches the dashboard
	// by the head Service's name, the entrypoint runs in the head
	// container, `ray job logs --follow` relays its output and ends, the
	// Job controller marks the Job Complete, and the RayJob is Complete
	// only then; shutdownAfterJobFinishes then deletes the cluster.
	It("submits from a submitter Job, runs the entrypoint in the head, completes and deletes its cluster", func(ctx SpecContext) {
		requireRealNode(ctx)
		ns := newNamespace(ctx, "rayjob-real")
		spec := realRayCluster(ns).Spec
		submitterPod := corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
			Name: "ray-job-submitter", Image: testBaseImage, ImagePullPolicy: corev1.PullNever, Resources: smallResources("200m", "128Mi"),
		}}}
		onRealNode(&submitterPod)
		job := &rayv1.RayJob{
			ObjectMeta: metav1.ObjectMeta{Name: "real-job", Namespace: ns},
			Spec: rayv1.RayJobSpec{
				Entrypoint:               `python3 -c "print('rayjob-ran-' + str(6*7))"`,
				RayClusterSpec:           &spec,
				SubmitterPodTemplate:     &corev1.PodTemplateSpec{Spec: submitterPod},
				ShutdownAfterJobFinishes: true,
			},
		}
		createStrict(ctx, job)
		cluster := pointDashboard(ctx, job)

		Eventually(ctx, func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
			g.Expect(job.Status.JobDeploymentStatus).To(Equal(rayv1.JobDeploymentStatusComplete), "status: %+v", job.Status)
		}).WithTimeout(4 * time.Minute).Should(Succeed())
		Expect(job.Status.JobStatus).To(Equal(rayv1.JobStatusSucceeded))
		Expect(ptr.Deref(job.Status.Succeeded, 0)).To(BeEquivalentTo(1))

		sub := &batchv1.Job{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(job), sub)).To(Succeed())
		Expect(sub.Status.Succeeded).To(BeEquivalentTo(1))
		logs, err := kubectl(ctx, "-n", ns, "logs", "job/"+job.Name)
		Expect(err).NotTo(HaveOccurred(), logs)
		Expect(logs).To(ContainSubstring("rayjob-ran-42"), "the submitter relays the entrypoint's output")

		Eventually(ctx, func(g Gomega) {
			err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster}, &rayv1.RayCluster{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "cluster %s: %v", cluster, err)
		}).Should(Succeed())
	})
})
