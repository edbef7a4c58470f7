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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/ray/dashboard"
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
		cluster = pointCurrentCluster(g, ctx, job)
	}).Should(Succeed())
	return cluster
}

// pointCurrentCluster points the job's current cluster's dashboard URL at
// its head Pod (see pointDashboard) unless it already is, and returns the
// cluster's name. A retry gets a new cluster, so a loop that waits for a
// retried job calls it on every poll.
func pointCurrentCluster(g Gomega, ctx context.Context, job *rayv1.RayJob) string {
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
	cluster := job.Status.RayClusterName
	g.Expect(cluster).NotTo(BeEmpty())
	rc := &rayv1.RayCluster{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: cluster}, rc)).To(Succeed())
	if rc.Annotations[rayv1.AnnotationRayDashboardURL] != "" {
		return cluster
	}
	head := podOf(g, ctx, job.Namespace, cluster, "head")
	g.Expect(head.Status.PodIP).NotTo(BeEmpty())
	patch := client.MergeFrom(rc.DeepCopy())
	metav1.SetMetaDataAnnotation(&rc.ObjectMeta, rayv1.AnnotationRayDashboardURL, fmt.Sprintf("http://%s:8265", head.Status.PodIP))
	g.Expect(k8s.Patch(ctx, rc, patch)).To(Succeed())
	return cluster
}

// headOnlyRayCluster is realRayCluster without workers and with a smaller
// head: a RayJob's entrypoint runs in the head, and several of these share
// the real node at once.
func headOnlyRayCluster(ns string) rayv1.RayClusterSpec {
	spec := realRayCluster(ns).Spec
	spec.WorkerGroupSpecs = nil
	spec.HeadGroupSpec.Template.Spec.Containers[0].Resources = smallResources("200m", "256Mi")
	return spec
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
		// The Pod that succeeded relays the entrypoint's output. An earlier
		// one may have failed: on a loaded machine its `ray job logs` can
		// time out reaching the dashboard, and the Job retries it within
		// submitterConfig.backoffLimit, as with KubeRay (`kubectl logs
		// job/...` would pick any of them).
		var subPods corev1.PodList
		Expect(k8s.List(ctx, &subPods, client.InNamespace(ns), client.MatchingLabels{"job-name": job.Name})).To(Succeed())
		succeeded := ""
		for _, p := range subPods.Items {
			if p.Status.Phase == corev1.PodSucceeded {
				succeeded = p.Name
			}
		}
		Expect(succeeded).NotTo(BeEmpty(), "no submitter Pod succeeded among %d", len(subPods.Items))
		logs, err := kubectl(ctx, "-n", ns, "logs", succeeded)
		Expect(err).NotTo(HaveOccurred(), logs)
		Expect(logs).To(ContainSubstring("rayjob-ran-42"), "the submitter relays the entrypoint's output")

		Eventually(ctx, func(g Gomega) {
			err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster}, &rayv1.RayCluster{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "cluster %s: %v", cluster, err)
		}).Should(Succeed())
	})

	// The other ways in, at once on the real node: HTTPMode (the
	// controller submits to the dashboard itself), SidecarMode (`ray job
	// submit` in a container of the head Pod, against 127.0.0.1), and a
	// failing entrypoint with backoffLimit 1, retried once on a new
	// cluster, then Failed with both attempts counted.
	It("runs HTTPMode and SidecarMode to Complete, and retries a failing job on a new cluster before it fails", func(ctx SpecContext) {
		requireRealNode(ctx)
		ns := newNamespace(ctx, "rayjob-modes")
		newJob := func(name string, mode rayv1.JobSubmissionMode, entrypoint string) *rayv1.RayJob {
			spec := headOnlyRayCluster(ns)
			return &rayv1.RayJob{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec: rayv1.RayJobSpec{
					Entrypoint: entrypoint, SubmissionMode: mode, RayClusterSpec: &spec,
					ShutdownAfterJobFinishes: true,
				},
			}
		}
		httpJob := newJob("http", rayv1.HTTPMode, `python3 -c "print('http-mode-ran')"`)
		// The sidecar's entrypoint ends at once, before the head Pod has
		// passed its readiness probe: the Pod, whose finished submitter
		// container is never ready again, never turns Ready. KubeRay
		// v1.7.0 would wait in Initializing for good; Gantry goes on once
		// the submitter has ended and the Ray container runs
		// (docs/rayjob.md, differences).
		sidecarJob := newJob("sidecar", rayv1.SidecarMode, `python3 -c "print('sidecar-mode-ran')"`)
		failing := newJob("failing", rayv1.HTTPMode, `python3 -c "import sys; sys.exit(3)"`)
		failing.Spec.BackoffLimit = ptr.To[int32](1)
		for _, job := range []*rayv1.RayJob{httpJob, sidecarJob, failing} {
			createStrict(ctx, job)
		}

		clusters := map[string]bool{}
		Eventually(ctx, func(g Gomega) {
			for _, job := range []*rayv1.RayJob{httpJob, sidecarJob, failing} {
				if job.Status.JobDeploymentStatus == rayv1.JobDeploymentStatusComplete || job.Status.JobDeploymentStatus == rayv1.JobDeploymentStatusFailed {
					continue
				}
				// SidecarMode submits from the head Pod itself; the
				// controller still reads the job's state from the dashboard.
				if cluster := pointCurrentCluster(g, ctx, job); job == failing {
					clusters[cluster] = true
				}
			}
			g.Expect(httpJob.Status.JobDeploymentStatus).To(Equal(rayv1.JobDeploymentStatusComplete), "http: %+v", httpJob.Status)
			g.Expect(sidecarJob.Status.JobDeploymentStatus).To(Equal(rayv1.JobDeploymentStatusComplete), "sidecar: %+v", sidecarJob.Status)
			g.Expect(failing.Status.JobDeploymentStatus).To(Equal(rayv1.JobDeploymentStatusFailed), "failing: %+v", failing.Status)
		}).WithTimeout(6 * time.Minute).Should(Succeed())

		Expect(httpJob.Status.JobStatus).To(Equal(rayv1.JobStatusSucceeded))
		Expect(sidecarJob.Status.JobStatus).To(Equal(rayv1.JobStatusSucceeded))
		// SidecarMode runs no submitter Job.
		Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(sidecarJob), &batchv1.Job{}))).To(BeTrue())

		Expect(failing.Status.JobStatus).To(Equal(rayv1.JobStatusFailed))
		Expect(failing.Status.Reason).To(Equal(rayv1.AppFailed))
		Expect(ptr.Deref(failing.Status.Failed, 0)).To(BeEquivalentTo(2), "two attempts, both failed")
		Expect(ptr.Deref(failing.Status.Succeeded, 0)).To(BeEquivalentTo(0))
		// Each attempt ran on a cluster of its own: the RayJob's
		// CreatedRayCluster events name both. (The polling above sees a
		// cluster only while its attempt lasts: with the manager in the
		// cluster, which reaches the head without being pointed at it, the
		// second attempt can start and fail between two polls.)
		Eventually(ctx, func(g Gomega) {
			created := map[string]bool{}
			for _, e := range eventsFor(g, ctx, failing) {
				if e.Reason == string(rayv1.CreatedRayCluster) {
					created[e.Message] = true
				}
			}
			g.Expect(created).To(HaveLen(2), "each attempt ran on a cluster of its own (polled: %v)", clusters)
		}).Should(Succeed())
	})

	// `kubectl ray job submit` (KubeRay v1.7.0's kubectl plugin, without -f)
	// server-side applies an InteractiveMode RayJob whose spec.jobId is the
	// submission ID it then submits under, waits for status.rayClusterName
	// and a ready cluster, submits through a port-forward to the head
	// Service, and watches the RayJob to its end. The object below is the
	// one its generation package builds (field manager ray-kubectl-plugin,
	// --name, --image, --head-cpu 200m --head-memory 256Mi
	// --worker-replicas 0 --worker-cpu 100m --worker-memory 128Mi,
	// --head-node-selectors/--worker-node-selectors for the real node,
	// --ttl-seconds-after-finished 5), plus the real node's toleration,
	// which the plugin has no flag for. The submission goes straight to the
	// head Pod's dashboard, as the port-forward would take it there.
	It("runs a RayJob shaped as kubectl ray job submit makes it", func(ctx SpecContext) {
		requireRealNode(ctx)
		ns := newNamespace(ctx, "rayjob-kubectl")
		const submissionID = "raysubmit_e2ekubectlray01"
		podSpec := func(container string, cpu, memory string) map[string]any {
			return map[string]any{
				"nodeSelector": map[string]any{realNodeLabel: "true"},
				"tolerations":  []any{map[string]any{"key": realNodeLabel, "operator": "Equal", "value": "true", "effect": "NoSchedule"}},
				"containers": []any{map[string]any{
					"name": container, "image": testBaseImage,
					"resources": map[string]any{
						"requests": map[string]any{"cpu": cpu, "memory": memory},
						"limits":   map[string]any{"memory": memory},
					},
				}},
			}
		}
		head := podSpec("ray-head", "200m", "256Mi")
		head["containers"].([]any)[0].(map[string]any)["ports"] = []any{
			map[string]any{"containerPort": int64(6379), "name": "gcs-server"},
			map[string]any{"containerPort": int64(8265), "name": "dashboard"},
			map[string]any{"containerPort": int64(10001), "name": "client"},
		}
		applied := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "ray.io/v1", "kind": "RayJob",
			"metadata": map[string]any{"name": "kubectl-ray", "namespace": ns},
			"spec": map[string]any{
				"submissionMode":           "InteractiveMode",
				"entrypoint":               `python3 -c "print('kubectl-ray-ran')"`,
				"ttlSecondsAfterFinished":  int64(5),
				"shutdownAfterJobFinishes": true,
				"jobId":                    submissionID,
				"rayClusterSpec": map[string]any{
					"rayVersion":    "2.46.0",
					"headGroupSpec": map[string]any{"template": map[string]any{"spec": head}},
					"workerGroupSpecs": []any{map[string]any{
						"groupName": "default-group", "replicas": int64(0),
						"template": map[string]any{"spec": podSpec("ray-worker", "100m", "128Mi")},
					}},
				},
			},
		}}
		Expect(k8s.Patch(ctx, applied, client.Apply, client.FieldOwner("ray-kubectl-plugin"))).To(Succeed())
		job := &rayv1.RayJob{ObjectMeta: metav1.ObjectMeta{Name: "kubectl-ray", Namespace: ns}}

		// What the plugin waits for before it submits: the cluster's name,
		// then a ready cluster. The RayJob has its jobId already, so it
		// passes Waiting at once and looks for that job until it appears.
		var cluster string
		Eventually(ctx, func(g Gomega) {
			cluster = pointCurrentCluster(g, ctx, job)
			rc := &rayv1.RayCluster{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster}, rc)).To(Succeed())
			g.Expect(rc.Status.State).To(Equal(rayv1.Ready))
		}).WithTimeout(3 * time.Minute).Should(Succeed())
		Expect(job.Status.JobDeploymentStatus).To(BeElementOf(rayv1.JobDeploymentStatusInitializing, rayv1.JobDeploymentStatusWaiting, rayv1.JobDeploymentStatusRunning),
			"before the submission: %+v", job.Status)

		head0 := &corev1.Pod{}
		Eventually(ctx, func(g Gomega) { *head0 = podOf(g, ctx, ns, cluster, "head") }).Should(Succeed())
		dash, err := dashboard.New(dashboard.Config{URL: fmt.Sprintf("http://%s:8265", head0.Status.PodIP)})
		Expect(err).NotTo(HaveOccurred())
		id, err := dash.SubmitJob(ctx, dashboard.JobRequest{Entrypoint: job.Spec.Entrypoint, SubmissionID: submissionID})
		Expect(err).NotTo(HaveOccurred())
		Expect(id).To(Equal(submissionID))
		// Read while the cluster is there (it goes 5 s after the end).
		Eventually(ctx, func(g Gomega) {
			logs, err := dash.JobLogs(ctx, submissionID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(logs).To(ContainSubstring("kubectl-ray-ran"))
		}).WithTimeout(2 * time.Minute).Should(Succeed())

		Eventually(ctx, func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
			g.Expect(job.Status.JobDeploymentStatus).To(Equal(rayv1.JobDeploymentStatusComplete), "status: %+v", job.Status)
		}).WithTimeout(3 * time.Minute).Should(Succeed())
		Expect(job.Status.JobStatus).To(Equal(rayv1.JobStatusSucceeded))
		Expect(job.Status.JobId).To(Equal(submissionID))
		// --ttl-seconds-after-finished: the cluster goes after 5 s.
		Eventually(ctx, func(g Gomega) {
			err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster}, &rayv1.RayCluster{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "cluster %s: %v", cluster, err)
		}).WithTimeout(time.Minute).Should(Succeed())
	})

	// Deletion policies in real containers (RayJobDeletionPolicy, on by
	// default): deletionRules that first delete the workers when the job
	// succeeds and the whole cluster 15 s later, and the legacy
	// onSuccess/onFailure pair whose onFailure deletes the RayJob itself.
	It("deletes the workers then the cluster by deletionRules, and itself by onFailure", func(ctx SpecContext) {
		requireRealNode(ctx)
		ns := newNamespace(ctx, "rayjob-deletion")
		withWorker := realRayCluster(ns).Spec
		withWorker.HeadGroupSpec.Template.Spec.Containers[0].Resources = smallResources("200m", "256Mi")
		withWorker.WorkerGroupSpecs[0].Template.Spec.Containers[0].Resources = smallResources("100m", "128Mi")
		succeeded, failed := rayv1.JobStatusSucceeded, rayv1.JobStatusFailed
		rules := &rayv1.RayJob{
			ObjectMeta: metav1.ObjectMeta{Name: "rules", Namespace: ns},
			Spec: rayv1.RayJobSpec{
				Entrypoint: `python3 -c "print('rules-ran')"`, SubmissionMode: rayv1.HTTPMode, RayClusterSpec: &withWorker,
				DeletionStrategy: &rayv1.DeletionStrategy{DeletionRules: []rayv1.DeletionRule{
					{Policy: rayv1.DeleteWorkers, Condition: rayv1.DeletionCondition{JobStatus: &succeeded}},
					{Policy: rayv1.DeleteCluster, Condition: rayv1.DeletionCondition{JobStatus: &succeeded, TTLSeconds: 15}},
					{Policy: rayv1.DeleteSelf, Condition: rayv1.DeletionCondition{JobStatus: &failed}},
				}},
			},
		}
		headOnly := headOnlyRayCluster(ns)
		legacy := &rayv1.RayJob{
			ObjectMeta: metav1.ObjectMeta{Name: "legacy", Namespace: ns},
			Spec: rayv1.RayJobSpec{
				Entrypoint: `python3 -c "import sys; sys.exit(1)"`, SubmissionMode: rayv1.HTTPMode, RayClusterSpec: &headOnly,
				DeletionStrategy: &rayv1.DeletionStrategy{
					OnSuccess: &rayv1.DeletionPolicy{Policy: ptr.To(rayv1.DeleteCluster)},
					OnFailure: &rayv1.DeletionPolicy{Policy: ptr.To(rayv1.DeleteSelf)},
				},
			},
		}
		createStrict(ctx, rules)
		createStrict(ctx, legacy)

		var cluster string
		sawWorkersGone := false
		Eventually(ctx, func(g Gomega) {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(legacy), legacy); err == nil && legacy.Status.JobDeploymentStatus != rayv1.JobDeploymentStatusFailed {
				pointCurrentCluster(g, ctx, legacy)
			}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(rules), rules)).To(Succeed())
			if rules.Status.JobDeploymentStatus != rayv1.JobDeploymentStatusComplete {
				cluster = pointCurrentCluster(g, ctx, rules)
			}
			g.Expect(rules.Status.JobDeploymentStatus).To(Equal(rayv1.JobDeploymentStatusComplete), "rules: %+v", rules.Status)
			// DeleteWorkers: the head stays, the workers go.
			g.Expect(listPods(g, ctx, ns, map[string]string{rayv1.RayClusterLabelKey: cluster, rayv1.RayNodeTypeLabelKey: "worker"})).To(BeEmpty())
			g.Expect(listPods(g, ctx, ns, map[string]string{rayv1.RayClusterLabelKey: cluster, rayv1.RayNodeTypeLabelKey: "head"})).To(HaveLen(1))
			sawWorkersGone = true
		}).WithTimeout(4 * time.Minute).Should(Succeed())
		Expect(sawWorkersGone).To(BeTrue())
		rc := &rayv1.RayCluster{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster}, rc)).To(Succeed())
		Expect(rc.Spec.WorkerGroupSpecs[0].Suspend).To(HaveValue(BeTrue()), "the workers' group is suspended")

		// DeleteCluster 15 s after the end; the RayJob stays.
		Eventually(ctx, func(g Gomega) {
			err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster}, &rayv1.RayCluster{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "cluster %s: %v", cluster, err)
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(rules), rules)).To(Succeed())

		// onFailure DeleteSelf: the failed RayJob is gone, and its cluster
		// with it.
		Eventually(ctx, func(g Gomega) {
			err := k8s.Get(ctx, client.ObjectKeyFromObject(legacy), &rayv1.RayJob{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "legacy: %v", err)
		}).WithTimeout(4 * time.Minute).Should(Succeed())
	})
})
