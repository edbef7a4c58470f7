package slurm_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/cmd/manager/app"
	"github.com/gantry-dev/gantry/pkg/controller/slurm"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/nodeset"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
	"github.com/gantry-dev/gantry/test/testenv"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

// TestSlurmWorkloadWiring runs the "slurm" integration as the manager does
// and checks what ties the three reconcilers together: a RestApi makes its
// Controller's Slurm client available, and the Controller's NodeSets notice
// at once — here by reporting that the (not running) slurmrestd cannot be
// reached, while still creating their pods.
func TestSlurmWorkloadWiring(t *testing.T) {
	g := NewWithT(t)
	env := testenv.Start(t, testenv.Options{AddToScheme: slurm.Integration().AddToScheme})
	reg := &workload.Registry{}
	reg.MustRegister(slurm.Integration())
	opts, err := app.ParseFlags([]string{"--metrics-bind-address=0", "--health-probe-bind-address=0", "--webhook-port=0",
		"--feature-gates=" + string(slurm.SlurmrestdURLOverride) + "=true"}, reg)
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx, env.Config, opts, reg) }()
	t.Cleanup(func() { cancel(); <-done })

	c := env.Client
	ns := "slurm"
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	g.Expect(c.Create(ctx, slinkytesting.MakeSecret("keys", ns, map[string]string{"slurm.key": "s3cret-slurm", "jwt.key": "s3cret-jwt"}).Obj())).To(Succeed())
	g.Expect(c.Create(ctx, slinkytesting.MakeController("slurm", ns).Keys("keys").Obj())).To(Succeed())
	ns1 := slinkytesting.MakeNodeSet("cpu", ns, "slurm").Obj()
	ns1.Spec.Replicas = ptr.To[int32](2)
	g.Expect(c.Create(ctx, ns1)).To(Succeed())

	nodeSet := func(g Gomega) *slinkyv1beta1.NodeSet {
		n := &slinkyv1beta1.NodeSet{}
		g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "cpu"}, n)).To(Succeed())
		return n
	}
	// Without a RestApi, Kubernetes state alone drives the pods.
	g.Eventually(func(g Gomega) {
		var pods corev1.PodList
		g.Expect(c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/managed-by": "gantry"})).To(Succeed())
		names := []string{}
		for _, p := range pods.Items {
			names = append(names, p.Name)
		}
		g.Expect(names).To(ContainElements("cpu-0", "cpu-1"))
		g.Expect(meta.FindStatusCondition(nodeSet(g).Status.Conditions, nodeset.ConditionSlurmReachable)).To(BeNil())
		g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "slurm-controller"}, &appsv1.StatefulSet{})).To(Succeed())
	}, 30*time.Second).Should(Succeed())

	// The RestApi publishes a client; the NodeSet now talks to slurmrestd.
	g.Expect(c.Create(ctx, slinkytesting.MakeRestApi("slurm", ns, "slurm").Obj())).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "slurm-restapi"}, &appsv1.Deployment{})).To(Succeed())
		cond := meta.FindStatusCondition(nodeSet(g).Status.Conditions, nodeset.ConditionSlurmReachable)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(cond.Message).To(ContainSubstring("slurm-restapi." + ns + ".svc:6820"))
	}, 60*time.Second).Should(Succeed())

	// Pointing the RestApi at a slurmrestd this process can reach (as `make
	// run` does for a manager outside the cluster) reaches the NodeSet through
	// the RestApi watch, well before its 30 s Slurm poll.
	restd := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var file string
		switch req.URL.Path {
		case "/slurm/v0.0.44/nodes", "/slurm/v0.0.44/nodes/":
			file = "nodes.json"
		case "/slurm/v0.0.44/jobs", "/slurm/v0.0.44/jobs/":
			file = "jobs.json"
		default:
			http.NotFound(w, req)
			return
		}
		http.ServeFile(w, req, filepath.Join("..", "..", "slurm", "testdata", file))
	}))
	t.Cleanup(restd.Close)
	ra := &slinkyv1beta1.RestApi{}
	g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "slurm"}, ra)).To(Succeed())
	// A merge patch without a resourceVersion: the reconciler may write the
	// RestApi's status between this test's read and write.
	base := ra.DeepCopy()
	ra.Annotations = map[string]string{slinkyv1beta1.AnnotationSlurmrestdURL: restd.URL}
	g.Expect(c.Patch(ctx, ra, client.MergeFrom(base))).To(Succeed())
	g.Eventually(func(g Gomega) {
		cond := meta.FindStatusCondition(nodeSet(g).Status.Conditions, nodeset.ConditionSlurmReachable)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(metav1.ConditionTrue), cond.Message)
	}, 20*time.Second).Should(Succeed())
}
