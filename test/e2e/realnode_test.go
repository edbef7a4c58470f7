//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	trainerv1alpha1 "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

// labelReal marks specs that run real containers on the real node
// (hack/realnode.sh): a kubelet, containerd and runc, images from
// bin/images (hack/test-images.sh). It is not a workload label; such a spec
// carries one of those too.
const labelReal = "real"

const (
	// realNodeLabel and its taint are what hack/realnode.sh puts on the node.
	realNodeLabel = "gantry.dev/real-node"
	// testBaseImage is Debian with bash, wget, python3-torch, Open MPI
	// with mpi4py, sshd set up like the MPI operator's images (mpiuser,
	// port 2222), the MPI pi example and the Ray stand-in as
	// /usr/local/bin/ray (hack/test-images.sh).
	testBaseImage = "gantry.local/testbase:1"
)

// requireRealNode returns the real node, Ready. Without one the spec skips
// and says why, except where GANTRY_REAL_NODE=true (CI) promised one: there
// it fails.
func requireRealNode(ctx context.Context) *corev1.Node {
	GinkgoHelper()
	nodes := &corev1.NodeList{}
	Expect(k8s.List(ctx, nodes, client.MatchingLabels{realNodeLabel: "true"})).To(Succeed())
	for i := range nodes.Items {
		if nodeReady(&nodes.Items[i]) {
			return &nodes.Items[i]
		}
	}
	why := "no Ready node labelled " + realNodeLabel + "=true (hack/realnode.sh starts one where this machine can: root, containerd, runc)"
	if os.Getenv("GANTRY_REAL_NODE") == "true" {
		Fail(why + ", but GANTRY_REAL_NODE=true promised one")
	}
	Skip(why)
	return nil
}

// onRealNode steers a pod template to the real node.
func onRealNode(spec *corev1.PodSpec) {
	if spec.NodeSelector == nil {
		spec.NodeSelector = map[string]string{}
	}
	spec.NodeSelector[realNodeLabel] = "true"
	spec.Tolerations = append(spec.Tolerations, corev1.Toleration{
		Key: realNodeLabel, Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule,
	})
}

func smallResources(cpu, memory string) corev1.ResourceRequirements {
	l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
	return corev1.ResourceRequirements{Requests: l, Limits: l}
}

// realRayCluster is a RayCluster of one head and one worker on the real
// node, running the Ray stand-in from the test base image.
func realRayCluster(ns string) *rayv1.RayCluster {
	head := corev1.PodSpec{Containers: []corev1.Container{{
		Name: "ray-head", Image: testBaseImage, ImagePullPolicy: corev1.PullNever,
		Resources: smallResources("500m", "512Mi"),
		Ports: []corev1.ContainerPort{
			{Name: "gcs-server", ContainerPort: 6379}, {Name: "dashboard", ContainerPort: 8265}, {Name: "client", ContainerPort: 10001},
		},
	}}}
	worker := corev1.PodSpec{Containers: []corev1.Container{{
		Name: "ray-worker", Image: testBaseImage, ImagePullPolicy: corev1.PullNever,
		Resources: smallResources("250m", "256Mi"),
		// Ray's raylet gives up on a lost GCS after this long (60 s by
		// default); the stand-in does the same.
		Env: []corev1.EnvVar{{Name: "RAY_gcs_rpc_server_reconnect_timeout_s", Value: "5"}},
	}}}
	onRealNode(&head)
	onRealNode(&worker)
	return &rayv1.RayCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "real", Namespace: ns},
		Spec: rayv1.RayClusterSpec{
			HeadGroupSpec: rayv1.HeadGroupSpec{RayStartParams: map[string]string{}, Template: corev1.PodTemplateSpec{Spec: head}},
			WorkerGroupSpecs: []rayv1.WorkerGroupSpec{{
				GroupName: "workers", Replicas: ptr.To(int32(1)), RayStartParams: map[string]string{},
				Template: corev1.PodTemplateSpec{Spec: worker},
			}},
		},
	}
}

func podOf(g Gomega, ctx context.Context, ns, cluster, nodeType string) corev1.Pod {
	pods := listPods(g, ctx, ns, map[string]string{rayv1.RayClusterLabelKey: cluster, rayv1.RayNodeTypeLabelKey: nodeType})
	g.Expect(pods).To(HaveLen(1), "%s pods of %s", nodeType, cluster)
	return pods[0]
}

var _ = Describe("A RayCluster on the real node", Label(labelRay, labelReal), Ordered, func() {
	var (
		ns string
		rc *rayv1.RayCluster
	)
	BeforeAll(func(ctx SpecContext) {
		requireRealNode(ctx)
		ns = newNamespace(ctx, "ray-real")
		rc = realRayCluster(ns)
		createStrict(ctx, rc)
	})

	// The kubelet runs Gantry's exec probes (wget of the raylet's and the
	// GCS's health endpoints), and the worker's init container resolves the
	// head Service's DNS name through the cluster DNS and polls its GCS port.
	It("starts the head and the worker, passes the probes and waits for the GCS through the head Service's name", func(ctx SpecContext) {
		Eventually(ctx, func(g Gomega) {
			expectClusterPodsReady(g, ctx, rc, 1)
			expectClusterReady(g, ctx, rc, 1)
		}).Should(Succeed())

		worker := podOf(Default, ctx, ns, rc.Name, "worker")
		Expect(worker.Spec.NodeName).To(HavePrefix("real-"))
		Expect(worker.Spec.InitContainers).NotTo(BeEmpty(), "the worker waits for the GCS in an init container")
		initName := worker.Spec.InitContainers[0].Name
		Expect(worker.Status.InitContainerStatuses).NotTo(BeEmpty())
		Expect(worker.Status.InitContainerStatuses[0].State.Terminated).NotTo(BeNil())
		Expect(worker.Status.InitContainerStatuses[0].State.Terminated.ExitCode).To(BeZero())
		logs, err := kubectl(ctx, "-n", ns, "logs", worker.Name, "-c", initName)
		Expect(err).NotTo(HaveOccurred(), logs)
		Expect(logs).To(ContainSubstring("GCS is ready."))

		// The same check from inside the worker, by the head Service's name
		// (retried like the init container's: one try may meet a busy node).
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(rc), rc)).To(Succeed())
		svc := rc.Status.Head.ServiceName
		Expect(svc).NotTo(BeEmpty(), "status.head.serviceName")
		Eventually(ctx, func(g Gomega) {
			out, err := kubectl(ctx, "-n", ns, "exec", worker.Name, "-c", "ray-worker", "--",
				"ray", "health-check", "--address", fmt.Sprintf("%s.%s.svc.cluster.local:6379", svc, ns))
			g.Expect(err).NotTo(HaveOccurred(), out)
		}).WithTimeout(time.Minute).Should(Succeed())

		// The probes the kubelet ran are the ones Gantry wrote.
		head := podOf(Default, ctx, ns, rc.Name, "head")
		probe := head.Spec.Containers[0].ReadinessProbe
		Expect(probe).NotTo(BeNil())
		Expect(probe.Exec).NotTo(BeNil())
		Expect(strings.Join(probe.Exec.Command, " ")).To(ContainSubstring("gcs_healthz"))
	})

	// Without GCS fault tolerance a lost head takes the cluster's state
	// with it: Gantry makes a new head, and the worker's raylet gives up on
	// the old GCS, exits, and its container restarts and joins the new one.
	It("replaces a deleted head, and the worker restarts and rejoins", func(ctx SpecContext) {
		oldHead := podOf(Default, ctx, ns, rc.Name, "head")
		oldWorker := podOf(Default, ctx, ns, rc.Name, "worker")
		Expect(k8s.Delete(ctx, &oldHead)).To(Succeed())

		Eventually(ctx, func(g Gomega) {
			head := podOf(g, ctx, ns, rc.Name, "head")
			g.Expect(head.UID).NotTo(Equal(oldHead.UID), "a new head")
			worker := podOf(g, ctx, ns, rc.Name, "worker")
			g.Expect(worker.UID).To(Equal(oldWorker.UID), "the same worker Pod")
			g.Expect(worker.Status.ContainerStatuses).NotTo(BeEmpty())
			g.Expect(worker.Status.ContainerStatuses[0].RestartCount).To(BeNumerically(">", 0), "the worker's container restarted")
			expectClusterPodsReady(g, ctx, rc, 1)
			expectClusterReady(g, ctx, rc, 1)
		}).Should(Succeed())
	})
})

// ddpExample is the README's real-node TrainJob: two nodes train a tiny
// model with DistributedDataParallel over gloo on the shipped
// torch-distributed runtime, each rank printing its first and last loss.
const ddpExample = "docs/examples/realnode-torch-ddp.yaml"

// elasticExample is the elastic PyTorch example: a runtime of 1 to 3 nodes
// and a TrainJob on 2, grown to 3 while it runs.
const elasticExample = "docs/examples/realnode-torch-elastic.yaml"

// onRealNodePatch is a runtime patch that puts the pods of a TrainJob's
// replicated jobs on the real node.
func onRealNodePatch(replicatedJobs ...string) trainerv1alpha1.RuntimePatch {
	var spec corev1.PodSpec
	onRealNode(&spec)
	var patches []trainerv1alpha1.ReplicatedJobPatch
	for _, rj := range replicatedJobs {
		patches = append(patches, trainerv1alpha1.ReplicatedJobPatch{
			Name: rj,
			Template: &trainerv1alpha1.JobTemplatePatch{Spec: &trainerv1alpha1.JobSpecPatch{
				Template: &trainerv1alpha1.PodTemplatePatch{Spec: &trainerv1alpha1.PodSpecPatch{
					NodeSelector: spec.NodeSelector, Tolerations: spec.Tolerations,
				}},
			}},
		})
	}
	return trainerv1alpha1.RuntimePatch{
		Manager: "e2e.gantry.dev/real-node",
		TrainingRuntimeSpec: &trainerv1alpha1.TrainingRuntimeSpecPatch{Template: &trainerv1alpha1.JobSetTemplatePatch{
			Spec: &trainerv1alpha1.JobSetSpecPatch{ReplicatedJobs: patches},
		}},
	}
}

// lossesOf returns the first and last loss a rank printed.
func lossesOf(logs string, rank int) (first, last float64, ok bool) {
	var found int
	for _, line := range strings.Split(logs, "\n") {
		var r, step int
		var loss float64
		i := strings.Index(line, "rank ")
		if i < 0 {
			continue
		}
		if n, _ := fmt.Sscanf(line[i:], "rank %d step %d loss %g", &r, &step, &loss); n != 3 || r != rank {
			continue
		}
		switch step {
		case 0:
			first, found = loss, found+1
		case 29:
			last, found = loss, found+1
		}
	}
	return first, last, found == 2
}

var _ = Describe("TrainJobs on the real node", Label(labelTrainJob, labelReal), func() {
	// The shipped torch-distributed runtime, as a user's job sets it: an
	// image and a command (the README's example, docs/examples). Two node
	// pods rendezvous through the PET_* variables and the JobSet's headless
	// Service name, train, and the TrainJob completes.
	It("runs a two-node DistributedDataParallel job on the shipped torch-distributed runtime to Complete", func(ctx SpecContext) {
		requireRealNode(ctx)
		ns := newNamespace(ctx, "torch-real")
		data, err := os.ReadFile(filepath.Join(repoRoot, ddpExample))
		Expect(err).NotTo(HaveOccurred())
		tj := &trainerv1alpha1.TrainJob{}
		Expect(yaml.UnmarshalStrict(data, tj)).To(Succeed())
		tj.Namespace = ns
		Expect(tj.Spec.RuntimeRef.Name).To(Equal("torch-distributed"), "the example runs on the shipped runtime")
		createStrict(ctx, tj)
		expectTrainJobCondition(ctx, tj, trainerv1alpha1.TrainJobComplete)

		pods := listPods(Default, ctx, ns, map[string]string{jobsetv1alpha2.JobSetNameKey: tj.Name})
		Expect(pods).To(HaveLen(2))
		var all strings.Builder
		for _, p := range pods {
			Expect(p.Spec.NodeName).To(HavePrefix("real-"))
			logs, err := kubectl(ctx, "-n", ns, "logs", p.Name)
			Expect(err).NotTo(HaveOccurred(), logs)
			all.WriteString(logs)
		}
		logs := all.String()
		AddReportEntry("training logs", logs)
		for rank := range 2 {
			Expect(logs).To(ContainSubstring(fmt.Sprintf("rank %d of 2:", rank)))
			first, last, ok := lossesOf(logs, rank)
			Expect(ok).To(BeTrue(), "rank %d printed its first and last loss", rank)
			Expect(last).To(BeNumerically("<", first/2), "rank %d's loss went down", rank)
		}
	})

	// Elastic PyTorch (docs/examples/realnode-torch-elastic.yaml): torchrun
	// in elastic mode on 2 of 1..3 nodes, the job grown to 3 nodes while it
	// runs. The two running pods stay (JobSet raises the Job's parallelism
	// in place, the real JobSet webhook accepting Gantry's re-rendered
	// JobSet), a third joins the c10d rendezvous hosted by the first, and
	// the workers restart in a round of 3, which finishes.
	It("grows a running elastic PyTorch job from 2 to 3 nodes in place and completes it", func(ctx SpecContext) {
		requireRealNode(ctx)
		ns := newNamespace(ctx, "torch-elastic")
		data, err := os.ReadFile(filepath.Join(repoRoot, elasticExample))
		Expect(err).NotTo(HaveOccurred())
		docs := strings.Split(string(data), "\n---\n")
		Expect(docs).To(HaveLen(2))
		rt, tj := &trainerv1alpha1.TrainingRuntime{}, &trainerv1alpha1.TrainJob{}
		Expect(yaml.UnmarshalStrict([]byte(docs[0]), rt)).To(Succeed())
		Expect(yaml.UnmarshalStrict([]byte(docs[1]), tj)).To(Succeed())
		rt.Namespace, tj.Namespace = ns, ns
		Expect(rt.Spec.MLPolicy.Torch.ElasticPolicy).NotTo(BeNil(), "the example's runtime is elastic")
		createStrict(ctx, rt)
		createStrict(ctx, tj)

		byJobSet := map[string]string{jobsetv1alpha2.JobSetNameKey: tj.Name}
		logsOf := func(g Gomega, pod corev1.Pod) string {
			out, err := kubectl(ctx, "-n", ns, "logs", pod.Name)
			g.Expect(err).NotTo(HaveOccurred(), out)
			return out
		}
		before := map[string]bool{}
		Eventually(func(g Gomega) {
			pods := listPods(g, ctx, ns, byJobSet)
			g.Expect(pods).To(HaveLen(2))
			for _, p := range pods {
				g.Expect(logsOf(g, p)).To(ContainSubstring("of 2: all_reduce 2"), "pod %s trains in a round of 2", p.Name)
				before[string(p.UID)] = true
			}
		}).WithTimeout(5 * time.Minute).WithPolling(3 * time.Second).Should(Succeed())
		job := &batchv1.Job{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: tj.Name + "-node-0"}, job)).To(Succeed())
		Expect(job.Spec.Parallelism).To(HaveValue(BeEquivalentTo(2)))

		Expect(k8s.Patch(ctx, tj, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"trainer":{"numNodes":3}}}`)))).To(Succeed())

		Eventually(func(g Gomega) {
			resized := &batchv1.Job{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(job), resized)).To(Succeed())
			g.Expect(resized.UID).To(Equal(job.UID), "the same Job, resized in place")
			g.Expect(resized.Spec.Parallelism).To(HaveValue(BeEquivalentTo(3)))
			g.Expect(resized.Spec.Completions).To(HaveValue(BeEquivalentTo(3)))
		}).WithTimeout(time.Minute).Should(Succeed())
		expectTrainJobCondition(ctx, tj, trainerv1alpha1.TrainJobComplete)

		pods := listPods(Default, ctx, ns, byJobSet)
		Expect(pods).To(HaveLen(3))
		var kept int
		var all strings.Builder
		for _, p := range pods {
			Expect(p.Spec.NodeName).To(HavePrefix("real-"))
			if before[string(p.UID)] {
				kept++
			}
			logs := logsOf(Default, p)
			all.WriteString(logs)
			Expect(logs).To(ContainSubstring("of 3: all_reduce 3"), "pod %s trained in the round of 3", p.Name)
			Expect(logs).To(ContainSubstring("nnodes 1:3"))
		}
		AddReportEntry("training logs", all.String())
		Expect(kept).To(Equal(2), "both first pods ran on into the round of 3")
		Eventually(func(g Gomega) {
			var msgs []string
			for _, e := range eventsFor(g, ctx, tj) {
				if e.Reason == "Resized" {
					msgs = append(msgs, e.Message)
				}
			}
			g.Expect(msgs).To(ContainElement(ContainSubstring("from 2 to 3 nodes")))
		}).Should(Succeed())
	})

	// A training script that exits 3 fails its pod with that code, the Job,
	// the JobSet and the TrainJob. A namespaced copy of the shipped runtime
	// with no Job retries and restartPolicy Never makes the failure final at
	// once and keeps the failed pod: under JobSet's default, OnFailure, the
	// kubelet restarts the container in place and the Job controller deletes
	// the pod when its backoff limit is reached.
	It("fails the TrainJob when the training process exits non-zero, with the exit code on the pod", func(ctx SpecContext) {
		requireRealNode(ctx)
		ns := newNamespace(ctx, "torch-real-fail")
		rt := torchRuntimeWithPodAnnotations(ctx, ns, "torch-no-retries", nil, corev1.RestartPolicyNever)
		tj := trainJobOn(rt, "exits-3")
		tj.Spec.Trainer = &trainerv1alpha1.Trainer{
			Image:   ptr.To(testBaseImage),
			Command: []string{"bash", "-c", `echo "node rank $PET_NODE_RANK giving up"; exit 3`},
		}
		tj.Spec.RuntimePatches = []trainerv1alpha1.RuntimePatch{onRealNodePatch("node")}
		createStrict(ctx, tj)

		failed := expectTrainJobCondition(ctx, tj, trainerv1alpha1.TrainJobFailed)
		Expect(failed.Message).NotTo(BeEmpty())
		pods := listPods(Default, ctx, ns, map[string]string{jobsetv1alpha2.JobSetNameKey: tj.Name})
		Expect(pods).NotTo(BeEmpty())
		for _, p := range pods {
			Expect(p.Spec.NodeName).To(HavePrefix("real-"))
			Expect(p.Status.ContainerStatuses).NotTo(BeEmpty())
			term := p.Status.ContainerStatuses[0].State.Terminated
			Expect(term).NotTo(BeNil(), "pod %s terminated", p.Name)
			Expect(term.ExitCode).To(Equal(int32(3)), "pod %s's exit code", p.Name)
		}
		logs, err := kubectl(ctx, "-n", ns, "logs", pods[0].Name)
		Expect(err).NotTo(HaveOccurred(), logs)
		Expect(logs).To(ContainSubstring("node rank 0 giving up"))
	})

	// The shipped mpi-distributed runtime, its image replaced by the local
	// one (a TrainJob sets only the launcher's image): the node pods run
	// sshd as mpiuser with the job's key as host key, and the launcher's
	// mpirun reaches them as mpiuser through the generated hostfile and key
	// and runs the MPI pi example, one rank per node pod; the ranks reduce
	// their shares over MPI.
	It("runs mpirun across two node pods of the shipped mpi-distributed runtime with Gantry's SSH keys and hostfile", func(ctx SpecContext) {
		requireRealNode(ctx)
		ns := newNamespace(ctx, "mpi-real")
		rt := &trainerv1alpha1.TrainingRuntime{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mpi-local"},
			Spec:       shippedRuntimeSpec("mpi_distributed.yaml"),
		}
		for i := range rt.Spec.Template.Spec.ReplicatedJobs {
			pod := &rt.Spec.Template.Spec.ReplicatedJobs[i].Template.Spec.Template.Spec
			pod.Containers[0].Image = testBaseImage
			pod.Containers[0].ImagePullPolicy = corev1.PullNever
		}
		createStrict(ctx, rt)
		tj := trainJobOn(rt, "pi")
		tj.Spec.Trainer = &trainerv1alpha1.Trainer{
			NumNodes: ptr.To[int32](2),
			Image:    ptr.To(testBaseImage),
			Command:  []string{"mpirun", "-n", "2", "python3", "/home/mpiuser/pi.py"},
		}
		tj.Spec.RuntimePatches = []trainerv1alpha1.RuntimePatch{onRealNodePatch("launcher", "node")}
		createStrict(ctx, tj)
		expectTrainJobCondition(ctx, tj, trainerv1alpha1.TrainJobComplete)

		launchers := listPods(Default, ctx, ns, map[string]string{
			jobsetv1alpha2.JobSetNameKey: tj.Name, jobsetv1alpha2.ReplicatedJobNameKey: "launcher",
		})
		Expect(launchers).To(HaveLen(1))
		nodes := listPods(Default, ctx, ns, map[string]string{
			jobsetv1alpha2.JobSetNameKey: tj.Name, jobsetv1alpha2.ReplicatedJobNameKey: "node",
		})
		Expect(nodes).To(HaveLen(2))
		var nodeHosts []string
		for _, p := range append(launchers, nodes...) {
			Expect(p.Spec.NodeName).To(HavePrefix("real-"), "pod %s", p.Name)
		}
		for _, p := range nodes {
			nodeHosts = append(nodeHosts, p.Spec.Hostname)
		}
		slices.Sort(nodeHosts)
		logs, err := kubectl(ctx, "-n", ns, "logs", launchers[0].Name)
		Expect(err).NotTo(HaveOccurred(), logs)
		AddReportEntry("mpirun output", logs)
		Expect(logs).To(ContainSubstring("pi is approximately 3.14159"))
		// The ranks ran in the node pods, not in the launcher.
		Expect(logs).To(ContainSubstring("hosts: " + strings.Join(nodeHosts, " ")))
	})
})
