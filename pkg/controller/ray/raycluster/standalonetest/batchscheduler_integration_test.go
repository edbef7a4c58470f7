// Package standalonetest holds RayCluster tests that each need a manager of
// their own, against a real API server: one per --batch-scheduler (chosen
// per manager), and one started only after the objects it must find exist
// (adoption). Tests run one at a time.
package standalonetest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	"github.com/gantry-dev/gantry/pkg/controller/ray/raycluster"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
	"github.com/gantry-dev/gantry/test/testenv"
	"github.com/gantry-dev/gantry/test/testenv/managertest"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	var err error
	env, err = testenv.StartE(testenv.Options{AddToScheme: append(raycluster.Integration().AddToScheme, apiextensionsv1.AddToScheme)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.DPanicLevel)))
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

const timeout = 30 * time.Second

// startManager runs a manager with the raycluster integration only, set up
// as the Gantry manager sets it up, with the given batch scheduler, until
// the test ends. Its requests are counted by writes. Each test has its own
// manager, and tests run one after another.
func startManager(t *testing.T, writes *testenv.WriteCounter, scheduler string) {
	t.Helper()
	counted := *env
	counted.Config = writes.Wrap(env.Config)
	managertest.Start(t, &counted, func(mgr ctrl.Manager) error {
		flags := raycluster.NewFlags()
		flags.BatchScheduler = scheduler
		return raycluster.IntegrationWith(flags).SetupWithManager(context.Background(), mgr, workload.Options{
			Registerer: prometheus.NewRegistry(),
		})
	})
}

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "gang-"}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func installCRD(t *testing.T, gvk schema.GroupVersionKind) {
	t.Helper()
	g := NewWithT(t)
	crd := testenv.MinimalCRD(gvk)
	g.Expect(env.Client.Create(context.Background(), crd)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), crd) })
	g.Eventually(func(g Gomega) {
		cur := &apiextensionsv1.CustomResourceDefinition{}
		g.Expect(env.Client.Get(context.Background(), types.NamespacedName{Name: crd.Name}, cur)).To(Succeed())
		established := false
		for _, c := range cur.Status.Conditions {
			established = established || (c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue)
		}
		g.Expect(established).To(BeTrue())
	}, timeout).Should(Succeed())
}

func cluster(ns, name string, replicas int32) *rayv1.RayCluster {
	rc := raytesting.MakeRayCluster(name, ns).
		HeadLimits(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}).
		WorkerGroup("cpu", replicas).
		WorkerLimits("cpu", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("2Gi")}).
		Obj()
	rc.UID = ""
	return rc
}

func podsOf(g Gomega, rc *rayv1.RayCluster) []corev1.Pod {
	list := &corev1.PodList{}
	g.Expect(env.Client.List(context.Background(), list, client.InNamespace(rc.Namespace), client.MatchingLabels{rayv1.RayClusterLabelKey: rc.Name})).To(Succeed())
	return list.Items
}

func podGroup(g Gomega, gvk schema.GroupVersionKind, ns, name string) *unstructured.Unstructured {
	pg := &unstructured.Unstructured{}
	pg.SetGroupVersionKind(gvk)
	g.Expect(env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, pg)).To(Succeed())
	return pg
}

func warnings(g Gomega, rc *rayv1.RayCluster) []string {
	list := &corev1.EventList{}
	g.Expect(env.Client.List(context.Background(), list, client.InNamespace(rc.Namespace))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == rc.Name && e.Type == corev1.EventTypeWarning {
			out = append(out, e.Reason+": "+e.Message)
		}
	}
	return out
}

// TestVolcano: under --batch-scheduler=volcano a RayCluster waits, with a
// Warning naming the CRD, until Volcano's PodGroup kind is served; then
// its PodGroup ray-<name>-pg (queue from the cluster's label, sized to
// the head and workers) exists and every Pod names it; a scale-up resizes
// it; and the converged cluster costs no writes.
func TestVolcano(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	writes := &testenv.WriteCounter{}
	startManager(t, writes, podspec.BatchSchedulerVolcano)

	rc := cluster(ns, "gang", 2)
	rc.Labels = map[string]string{podspec.VolcanoQueueNameLabelKey: "research", rayv1.RayPriorityClassName: "high"}
	g.Expect(env.Client.Create(context.Background(), rc)).To(Succeed())
	g.Eventually(func(g Gomega) []string { return warnings(g, rc) }, timeout).
		Should(ContainElement(And(ContainSubstring("FailedToSyncPodGroup"), ContainSubstring("scheduling.volcano.sh/v1beta1"))))
	g.Expect(podsOf(g, rc)).To(BeEmpty(), "no Pod before its PodGroup")

	installCRD(t, podspec.VolcanoPodGroupGVK)
	g.Eventually(func(g Gomega) {
		pg := podGroup(g, podspec.VolcanoPodGroupGVK, ns, "ray-gang-pg")
		spec := pg.Object["spec"].(map[string]any)
		g.Expect(spec).To(HaveKeyWithValue("minMember", BeNumerically("==", 3)))
		g.Expect(spec).To(HaveKeyWithValue("minResources", And(HaveKeyWithValue("cpu", "5"), HaveKeyWithValue("memory", "5Gi"))))
		g.Expect(spec).To(HaveKeyWithValue("queue", "research"))
		g.Expect(spec).To(HaveKeyWithValue("priorityClassName", "high"))
		g.Expect(pg.GetOwnerReferences()).To(ContainElement(And(HaveField("Kind", "RayCluster"), HaveField("Controller", HaveValue(BeTrue())))))
	}, 2*timeout).Should(Succeed())
	g.Eventually(func(g Gomega) {
		pods := podsOf(g, rc)
		g.Expect(pods).To(HaveLen(3))
		for _, p := range pods {
			g.Expect(p.Spec.SchedulerName).To(Equal("volcano"))
			g.Expect(p.Annotations).To(HaveKeyWithValue(podspec.VolcanoGroupNameAnnotationKey, "ray-gang-pg"))
			g.Expect(p.Annotations).To(HaveKeyWithValue(podspec.VolcanoTaskSpecAnnotationKey, p.Labels[rayv1.RayNodeGroupLabelKey]))
			g.Expect(p.Labels).To(HaveKeyWithValue(podspec.VolcanoQueueNameLabelKey, "research"))
		}
	}, timeout).Should(Succeed())

	g.Eventually(func() error {
		cur := &rayv1.RayCluster{}
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(rc), cur); err != nil {
			return err
		}
		cur.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](3)
		return env.Client.Update(context.Background(), cur)
	}, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) {
		spec := podGroup(g, podspec.VolcanoPodGroupGVK, ns, "ray-gang-pg").Object["spec"].(map[string]any)
		g.Expect(spec).To(HaveKeyWithValue("minMember", BeNumerically("==", 4)))
		g.Expect(spec).To(HaveKeyWithValue("minResources", HaveKeyWithValue("cpu", "7")))
		g.Expect(podsOf(g, rc)).To(HaveLen(4))
	}, timeout).Should(Succeed())

	// Converged: a reconcile reads the PodGroup and writes nothing.
	g.Expect(writes.WaitQuiet(time.Second, timeout)).To(BeTrue(), "the manager kept writing: %v", writes.ByVerb())
	before := writes.Total()
	g.Eventually(func() error {
		cur := &rayv1.RayCluster{}
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(rc), cur); err != nil {
			return err
		}
		cur.Labels["poke"] = "1"
		return env.Client.Update(context.Background(), cur)
	}, timeout).Should(Succeed())
	g.Consistently(func() int64 { return writes.Total() - before }, 3*time.Second).Should(BeZero(), "writes by verb: %v", writes.ByVerb())
}

// TestSchedulerPlugins: under --batch-scheduler=scheduler-plugins every Pod
// goes to scheduler-plugins-scheduler; a cluster labelled
// ray.io/gang-scheduling-enabled also gets a PodGroup named after it and
// its Pods the pod-group label, and one without the label gets neither.
func TestSchedulerPlugins(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	installCRD(t, podspec.SchedulerPluginsPodGroupGVK)
	startManager(t, &testenv.WriteCounter{}, podspec.BatchSchedulerSchedulerPlugins)

	gang := cluster(ns, "gang", 2)
	gang.Labels = map[string]string{rayv1.RayGangSchedulingEnabled: "true"}
	plain := cluster(ns, "plain", 1)
	g.Expect(env.Client.Create(context.Background(), gang)).To(Succeed())
	g.Expect(env.Client.Create(context.Background(), plain)).To(Succeed())

	g.Eventually(func(g Gomega) {
		spec := podGroup(g, podspec.SchedulerPluginsPodGroupGVK, ns, "gang").Object["spec"].(map[string]any)
		g.Expect(spec).To(HaveKeyWithValue("minMember", BeNumerically("==", 3)))
		g.Expect(spec).To(HaveKeyWithValue("minResources", HaveKeyWithValue("cpu", "5")))
		pods := podsOf(g, gang)
		g.Expect(pods).To(HaveLen(3))
		for _, p := range pods {
			g.Expect(p.Spec.SchedulerName).To(Equal(podspec.SchedulerPluginsSchedulerName))
			g.Expect(p.Labels).To(HaveKeyWithValue(podspec.SchedulerPluginsPodGroupLabelKey, "gang"))
		}
		pods = podsOf(g, plain)
		g.Expect(pods).To(HaveLen(2))
		for _, p := range pods {
			g.Expect(p.Spec.SchedulerName).To(Equal(podspec.SchedulerPluginsSchedulerName))
			g.Expect(p.Labels).NotTo(HaveKey(podspec.SchedulerPluginsPodGroupLabelKey))
		}
	}, timeout).Should(Succeed())
	pg := &unstructured.Unstructured{}
	pg.SetGroupVersionKind(podspec.SchedulerPluginsPodGroupGVK)
	err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "plain"}, pg)
	g.Expect(client.IgnoreNotFound(err)).To(Succeed())
	g.Expect(err).To(HaveOccurred(), "a PodGroup for the cluster without the gang label")
}
