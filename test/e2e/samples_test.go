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
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	trainerv1alpha1 "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/slurm"
)

// sampleRun is how one group of samples is applied and what a user sees
// at the end: `kubectl apply -f` of every file, in order, as the samples'
// comments say, then the documented end state.
type sampleRun struct {
	files []string
	// setup prepares what the samples assume of the cluster, not of
	// themselves (e.g. nodes with TPUs).
	setup func(ctx SpecContext, ns string)
	// edit, when set, changes each object of the files before it is
	// applied (through kubectl's stdin): a cluster-scoped sample gets a
	// name of the spec's own, so specs running in parallel, and the
	// objects the chart installs, are left alone.
	edit  func(ctx SpecContext, ns string, obj *unstructured.Unstructured)
	check func(g Gomega, ctx context.Context, ns string)
}

// ownClusterRuntime renames the sample ClusterTrainingRuntime (named as
// the chart's torch-distributed) to one of the spec's own, deleted when the
// spec ends, and points the TrainJob samples at it.
func ownClusterRuntime(ctx SpecContext, ns string, obj *unstructured.Unstructured) {
	name := "torch-distributed-" + ns
	switch obj.GetKind() {
	case trainerv1alpha1.ClusterTrainingRuntimeKind:
		obj.SetName(name)
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, obj.DeepCopy()))).To(Succeed())
		})
	case trainerv1alpha1.TrainJobKind:
		Expect(unstructured.SetNestedField(obj.Object, name, "spec", "runtimeRef", "name")).To(Succeed())
	}
}

// trainJobCompleteIn checks that the TrainJob of a sample file completed.
func trainJobCompleteIn(file string) func(g Gomega, ctx context.Context, ns string) {
	return func(g Gomega, ctx context.Context, ns string) {
		tj := loadSample[trainerv1alpha1.TrainJob](file)
		got := &trainerv1alpha1.TrainJob{}
		g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: tj.Name}, got)).To(Succeed())
		g.Expect(conditionTrue(got.Status.Conditions, trainerv1alpha1.TrainJobComplete)).To(BeTrue(), "%v", got.Status.Conditions)
	}
}

// rayClusterReadyWith checks the sample's RayCluster reached Ready with
// every worker it asks for.
func rayClusterReadyWith(file string) func(g Gomega, ctx context.Context, ns string) {
	return func(g Gomega, ctx context.Context, ns string) {
		rc := loadSample[rayv1.RayCluster](file)
		rc.Namespace = ns
		var workers int32
		for _, wg := range rc.Spec.WorkerGroupSpecs {
			// Omitted replicas start at minReplicas (the autoscaler's groups).
			replicas := max(ptr.Deref(wg.Replicas, 0), ptr.Deref(wg.MinReplicas, 0))
			workers += replicas * max(wg.NumOfHosts, 1)
		}
		expectClusterReady(g, ctx, rc, workers)
		expectClusterPodsReady(g, ctx, rc, int(workers))
	}
}

// sampleRuns covers every file in config/samples; a file with no run fails
// the spec below, so a new sample cannot go untested.
var sampleRuns = map[string]sampleRun{
	"minimal RayCluster": {files: []string{"ray_v1_raycluster_minimal.yaml"}, check: rayClusterReadyWith("ray_v1_raycluster_minimal.yaml")},
	"autoscaling RayCluster": {files: []string{"ray_v1_raycluster_autoscaler.yaml"},
		check: rayClusterReadyWith("ray_v1_raycluster_autoscaler.yaml")},
	"RayCluster with GCS fault tolerance and its Redis": {files: []string{"ray_v1_raycluster_gcs_ft.yaml"},
		check: rayClusterReadyWith("ray_v1_raycluster_gcs_ft.yaml")},
	"RayCluster with a dashboard Ingress": {files: []string{"ray_v1_raycluster_ingress.yaml"},
		check: func(g Gomega, ctx context.Context, ns string) {
			rayClusterReadyWith("ray_v1_raycluster_ingress.yaml")(g, ctx, ns)
			ingresses := &networkingv1.IngressList{}
			g.Expect(k8s.List(ctx, ingresses, client.InNamespace(ns))).To(Succeed())
			g.Expect(ingresses.Items).To(HaveLen(1))
		}},
	"RayCluster with token auth": {files: []string{"ray_v1_raycluster_auth.yaml"}, check: rayClusterReadyWith("ray_v1_raycluster_auth.yaml")},
	"multi-host TPU RayCluster": {files: []string{"ray_v1_raycluster_tpu_multihost.yaml"},
		setup: tpuNodes, check: rayClusterReadyWith("ray_v1_raycluster_tpu_multihost.yaml")},
	"RayJob":     {files: []string{"ray_v1_rayjob.yaml"}, setup: requireKwokRay, check: rayJobSucceeded("rayjob-sample")},
	"RayService": {files: []string{"ray_v1_rayservice.yaml"}, setup: requireKwokRay, check: rayServiceServing("rayservice-sample")},
	"Slurm Controller, RestApi and NodeSet": {
		files: []string{"slinky_v1beta1_controller.yaml", "slinky_v1beta1_restapi.yaml", "slinky_v1beta1_nodeset.yaml"},
		check: func(g Gomega, ctx context.Context, ns string) {
			c := &slinkyv1beta1.Controller{}
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "slurm"}, c)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(c.Status.Conditions, "Ready")).To(BeTrue(), "Controller: %v", c.Status.Conditions)
			r := &slinkyv1beta1.RestApi{}
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "slurm"}, r)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(r.Status.Conditions, "Ready")).To(BeTrue(), "RestApi: %v", r.Status.Conditions)
			n := &slinkyv1beta1.NodeSet{}
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "slinky"}, n)).To(Succeed())
			g.Expect(n.Status.ReadyReplicas).To(Equal(int32(1)), "NodeSet ready replicas")
			for _, name := range []string{"slurm-auth-slurm", "slurm-auth-jwt"} {
				s := &corev1.Secret{}
				g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, s)).To(Succeed(), "generated key Secret %s", name)
				expectControlledBy(g, s, c)
			}
		}},
	"Slurm Token signed with the Controller's generated key": {
		files: []string{"slinky_v1beta1_controller.yaml", "slinky_v1beta1_token.yaml"},
		check: func(g Gomega, ctx context.Context, ns string) {
			tok := &slinkyv1beta1.Token{}
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "slurm-token"}, tok)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(tok.Status.Conditions, "Ready")).To(BeTrue(), "Token: %v", tok.Status.Conditions)
			key := &corev1.Secret{}
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "slurm-auth-jwt"}, key)).To(Succeed())
			s := &corev1.Secret{}
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "slurm-token-jwt-slurm"}, s)).To(Succeed())
			claims, err := slurm.VerifyToken(key.Data["jwt.key"], string(s.Data["SLURM_JWT"]), time.Now())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(claims.UserName).To(Equal("slurm"))
		}},
	"Slurm Accounting (slurmdbd) of the sample Controller": {
		files: []string{"slinky_v1beta1_controller.yaml", "slinky_v1beta1_accounting.yaml"},
		check: func(g Gomega, ctx context.Context, ns string) {
			acct := &slinkyv1beta1.Accounting{}
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "slurm"}, acct)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(acct.Status.Conditions, "Ready")).To(BeTrue(), "Accounting: %v", acct.Status.Conditions)
			conf := &corev1.Secret{}
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "slurm-accounting"}, conf)).To(Succeed())
			expectControlledBy(g, conf, acct)
			g.Expect(string(conf.Data["slurmdbd.conf"])).To(And(ContainSubstring("DbdHost=slurm-accounting-0"),
				ContainSubstring("StorageHost=mariadb"), ContainSubstring("StoragePass=change-me"), ContainSubstring("PurgeJobAfter=12months")))
			svc := &corev1.Service{}
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "slurm-accounting"}, svc)).To(Succeed())
			g.Expect(svc.Spec.Ports).To(ContainElement(HaveField("Port", int32(6819))))
		}},
	"Slurm LoginSet of the sample Controller": {
		files: []string{"slinky_v1beta1_controller.yaml", "slinky_v1beta1_loginset.yaml"},
		check: func(g Gomega, ctx context.Context, ns string) {
			ls := &slinkyv1beta1.LoginSet{}
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "slurm-login-slinky"}, ls)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(ls.Status.Conditions, "Ready")).To(BeTrue(), "LoginSet: %v", ls.Status.Conditions)
			g.Expect(ls.Status.Replicas).To(Equal(int32(1)))
			keys := &corev1.Secret{}
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "slurm-login-slinky-ssh-host-keys"}, keys)).To(Succeed())
			g.Expect(keys.Immutable).To(HaveValue(BeTrue()))
			expectControlledBy(g, keys, ls)
			svc := &corev1.Service{}
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "slurm-login-slinky"}, svc)).To(Succeed())
			g.Expect(svc.Spec.Ports).To(ContainElement(And(HaveField("Name", "login"), HaveField("Port", int32(22)))))
		}},
	"TrainJob on the shipped torch runtime": {files: []string{"trainer_v1alpha1_trainjob.yaml"},
		check: trainJobCompleteIn("trainer_v1alpha1_trainjob.yaml")},
	"TrainJob on the sample ClusterTrainingRuntime": {
		files: []string{"trainer_v1alpha1_clustertrainingruntime.yaml", "trainer_v1alpha1_trainjob.yaml"},
		edit:  ownClusterRuntime,
		check: trainJobCompleteIn("trainer_v1alpha1_trainjob.yaml")},
	"MPI TrainJob on the sample TrainingRuntime": {
		files: []string{"trainer_v1alpha1_trainingruntime.yaml", "trainer_v1alpha1_trainjob_mpi.yaml"},
		check: func(g Gomega, ctx context.Context, ns string) {
			trainJobCompleteIn("trainer_v1alpha1_trainjob_mpi.yaml")(g, ctx, ns)
			tj := loadSample[trainerv1alpha1.TrainJob]("trainer_v1alpha1_trainjob_mpi.yaml")
			got := &trainerv1alpha1.TrainJob{}
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: tj.Name}, got)).To(Succeed())
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: tj.Name + trainerv1alpha1.MPISSHAuthSecretSuffix}, &corev1.Secret{})).To(Succeed())
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: tj.Name + trainerv1alpha1.MPIHostfileConfigMapSuffix}, &corev1.ConfigMap{})).To(Succeed())
			// spec.trainer replaced the launcher's command, as the sample says.
			js := &jobsetv1alpha2.JobSet{}
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: tj.Name}, js)).To(Succeed())
			var launcher []string
			for _, rj := range js.Spec.ReplicatedJobs {
				if rj.Name == "launcher" {
					for _, c := range rj.Template.Spec.Template.Spec.Containers {
						launcher = append(launcher, strings.Join(append(slices.Clone(c.Command), c.Args...), " "))
					}
				}
			}
			g.Expect(launcher).To(ConsistOf("mpirun -n 2 /home/mpiuser/pi"))
		}},
}

// editedSample returns the documents of a sample file after edit, as YAML.
func editedSample(ctx SpecContext, ns, path string, edit func(SpecContext, string, *unstructured.Unstructured)) string {
	GinkgoHelper()
	data, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	var docs []string
	for _, doc := range strings.Split(string(data), "\n---") {
		obj := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal([]byte(doc), &obj.Object)).To(Succeed(), "%s", path)
		if len(obj.Object) == 0 {
			continue
		}
		edit(ctx, ns, obj)
		out, err := yaml.Marshal(obj.Object)
		Expect(err).NotTo(HaveOccurred())
		docs = append(docs, string(out))
	}
	return strings.Join(docs, "---\n")
}

// tpuNodes adds the four TPU hosts the multi-host sample asks for:
// kwok nodes with the GKE labels its nodeSelector names and google.com/tpu.
func tpuNodes(ctx SpecContext, ns string) {
	GinkgoHelper()
	tpu := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("96"), corev1.ResourceMemory: resource.MustParse("512Gi"),
		corev1.ResourcePods: resource.MustParse("110"), "google.com/tpu": resource.MustParse("4"),
	}
	for i := range 4 {
		addKwokNode(ctx, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-tpu-%d", ns, i), Labels: map[string]string{
				"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice", "cloud.google.com/gke-tpu-topology": "4x4",
			}},
			Status: corev1.NodeStatus{Capacity: tpu, Allocatable: tpu},
		})
	}
}

var _ = Describe("Every sample", Label(labelManager), func() {
	It("is applied by a spec below", func() {
		files, err := filepath.Glob(filepath.Join(repoRoot, "config", "samples", "*.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(files).NotTo(BeEmpty())
		var run []string
		for _, r := range sampleRuns {
			run = append(run, r.files...)
		}
		for _, f := range files {
			base := filepath.Base(f)
			Expect(run).To(ContainElement(base), "sample %s is applied by no spec: add it to sampleRuns", base)
		}
	})
})

var _ = Describe("Samples applied with kubectl", func() {
	names := make([]string, 0, len(sampleRuns))
	for name := range sampleRuns {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		r := sampleRuns[name]
		label := labelRay
		switch {
		case strings.HasPrefix(r.files[0], "slinky"):
			label = labelSlurm
		case strings.HasPrefix(r.files[0], "trainer"):
			label = labelTrainJob
		}
		It(fmt.Sprintf("%s reaches its documented end state", name), Label(label), func(ctx SpecContext) {
			requireSimulatedKubelet(ctx)
			ns := newNamespace(ctx, "sample")
			if r.setup != nil {
				r.setup(ctx, ns)
			}
			for _, f := range r.files {
				path := filepath.Join(repoRoot, "config", "samples", f)
				_, err := os.Stat(path)
				Expect(err).NotTo(HaveOccurred())
				if r.edit == nil {
					out, err := kubectl(ctx, "apply", "--namespace", ns, "-f", path)
					Expect(err).NotTo(HaveOccurred(), "kubectl apply -f %s: %s", f, out)
					continue
				}
				edited := editedSample(ctx, ns, path, r.edit)
				out, err := kubectlIn(ctx, edited, "apply", "--namespace", ns, "-f", "-")
				Expect(err).NotTo(HaveOccurred(), "kubectl apply -f %s (edited): %s", f, out)
			}
			Eventually(ctx, func(g Gomega) { r.check(g, ctx, ns) }).Should(Succeed())
		})
	}
})

// A runtime with no framework policy runs the trainer as written (the
// PlainML policy): numNodes pods, each Complete.
var _ = Describe("TrainJob on a runtime without a framework policy", Label(labelTrainJob), func() {
	It("runs numNodes pods to Complete", func(ctx SpecContext) {
		requireSimulatedKubelet(ctx)
		ns := newNamespace(ctx, "plainml")
		data, err := os.ReadFile(filepath.Join(repoRoot, "config", "runtimes", "torch_distributed.yaml"))
		Expect(err).NotTo(HaveOccurred())
		shipped := &trainerv1alpha1.ClusterTrainingRuntime{}
		Expect(yaml.UnmarshalStrict(data, shipped)).To(Succeed())
		rt := &trainerv1alpha1.TrainingRuntime{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plain"}, Spec: *shipped.Spec.DeepCopy()}
		rt.Spec.MLPolicy = &trainerv1alpha1.MLPolicy{NumNodes: ptr.To[int32](2)}
		createStrict(ctx, rt)
		tj := trainJobOn(rt, "plain")
		createStrict(ctx, tj)
		expectTrainJobCondition(ctx, tj, trainerv1alpha1.TrainJobComplete)
		pods := &corev1.PodList{}
		Expect(k8s.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
		var succeeded int
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodSucceeded {
				succeeded++
			}
		}
		Expect(succeeded).To(Equal(2), "one pod per node")
	})
})
