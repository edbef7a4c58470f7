package slurmctld_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slurmctld"
	"github.com/gantry-dev/gantry/test/testenv"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

// TestServiceMonitor: spec.metrics.serviceMonitor is not a field that does
// nothing. Without the Prometheus Operator's CRD the Controller still comes
// up and a Warning says why no ServiceMonitor exists; once the CRD is
// installed (no restart) the ServiceMonitor scrapes slurmctld's Service on
// the user's endpoints, owned by the Controller, and it goes when the user
// turns it off.
func TestServiceMonitor(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	env := testenv.Start(t, testenv.Options{AddToScheme: []func(*runtime.Scheme) error{slinkyv1beta1.AddToScheme, apiextensionsv1.AddToScheme}})
	startManager(t, env)
	ctx := context.Background()
	c := env.Client
	const ns = "slurm-sm"
	key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }

	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	g.Expect(c.Create(ctx, slinkytesting.MakeSecret("keys", ns, map[string]string{"slurm.key": "k1", "jwt.key": "k2"}).Obj())).To(Succeed())
	ctl := slinkytesting.MakeController("slurm", ns).Keys("keys").Obj()
	ctl.Spec.Metrics = slinkyv1beta1.Metrics{Enabled: true, ServiceMonitor: slinkyv1beta1.ServiceMonitor{
		Enabled:  true,
		Metadata: slinkyv1beta1.Metadata{Labels: map[string]string{"release": "prometheus"}},
		Interval: "30s",
		Endpoints: []slinkyv1beta1.MetricEndpoint{
			{Path: "/metrics/jobs"},
			{Path: "/metrics/nodes", Interval: "10s", ScrapeTimeout: "5s"},
		},
	}}
	g.Expect(c.Create(ctx, ctl)).To(Succeed())

	monitorCondition := func(g Gomega) *metav1.Condition {
		cur := &slinkyv1beta1.Controller{}
		g.Expect(c.Get(ctx, key("slurm"), cur)).To(Succeed())
		return meta.FindStatusCondition(cur.Status.Conditions, slurmctld.ConditionServiceMonitor)
	}
	serviceMonitor := func() (*unstructured.Unstructured, error) {
		sm := &unstructured.Unstructured{}
		sm.SetGroupVersionKind(slurmctld.ServiceMonitorGVK)
		// Named as Slinky names it: as the StatefulSet.
		return sm, c.Get(ctx, key("slurm-controller"), sm)
	}

	t.Run("without the CRD the Controller comes up and says why there is none", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func() error { return c.Get(ctx, key("slurm-controller"), &appsv1.StatefulSet{}) }).
			WithTimeout(30 * time.Second).Should(Succeed())
		g.Eventually(func(g Gomega) []string {
			list := &eventsv1.EventList{}
			g.Expect(c.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			var notes []string
			for _, e := range list.Items {
				if e.Regarding.Name == "slurm" && e.Reason == slurmctld.ReasonServiceMonitorUnavailable && e.Type == corev1.EventTypeWarning {
					notes = append(notes, e.Note)
				}
			}
			return notes
		}).WithTimeout(30 * time.Second).Should(ContainElement(ContainSubstring("ServiceMonitor CRD")))
		g.Eventually(func(g Gomega) *metav1.Condition { return monitorCondition(g) }).WithTimeout(30 * time.Second).
			Should(And(Not(BeNil()), HaveField("Status", metav1.ConditionFalse), HaveField("Reason", slurmctld.ReasonServiceMonitorUnavailable)))
	})

	crd := testenv.MinimalCRD(slurmctld.ServiceMonitorGVK)
	g.Expect(c.Create(ctx, crd)).To(Succeed())
	t.Cleanup(func() { _ = c.Delete(context.Background(), crd) })

	// As Gantry 0.1 left it: named as the Controller, controlled by it.
	cur := &slinkyv1beta1.Controller{}
	g.Expect(c.Get(ctx, key("slurm"), cur)).To(Succeed())
	old := slurmctld.BuildServiceMonitor(cur)
	old.SetName("slurm")
	g.Eventually(func() error { return c.Create(ctx, old) }).WithTimeout(30 * time.Second).Should(Succeed())

	touch := func(g Gomega, mutate func(*slinkyv1beta1.Controller)) {
		cur := &slinkyv1beta1.Controller{}
		g.Expect(c.Get(ctx, key("slurm"), cur)).To(Succeed())
		mutate(cur)
		g.Expect(c.Update(ctx, cur)).To(Succeed())
	}

	t.Run("once the CRD is installed the ServiceMonitor scrapes slurmctld", func(t *testing.T) {
		g := NewWithT(t)
		// The CRD's arrival sends no event to the Controller; a user's edit does.
		g.Eventually(func(g Gomega) {
			touch(g, func(cur *slinkyv1beta1.Controller) {
				if cur.Annotations == nil {
					cur.Annotations = map[string]string{}
				}
				cur.Annotations["touched"] = time.Now().Format(time.RFC3339Nano)
			})
			_, err := serviceMonitor()
			g.Expect(err).NotTo(HaveOccurred())
		}).WithTimeout(60 * time.Second).WithPolling(2 * time.Second).Should(Succeed())
		sm, err := serviceMonitor()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(sm.GetLabels()).To(HaveKeyWithValue("release", "prometheus"))
		g.Expect(sm.GetOwnerReferences()).To(ConsistOf(And(HaveField("Kind", slinkyv1beta1.ControllerKind), HaveField("Controller", HaveValue(BeTrue())))))
		spec := sm.Object["spec"].(map[string]any)
		g.Expect(spec["namespaceSelector"]).To(Equal(map[string]any{"matchNames": []any{ns}}))
		svc := &corev1.Service{}
		g.Expect(c.Get(ctx, key("slurm-controller"), svc)).To(Succeed())
		matchLabels := spec["selector"].(map[string]any)["matchLabels"].(map[string]any)
		for k, v := range matchLabels {
			g.Expect(svc.Labels).To(HaveKeyWithValue(k, v), "the ServiceMonitor selects slurmctld's Service")
		}
		g.Expect(svc.Spec.Ports).To(ContainElement(HaveField("Name", "slurmctld")))
		g.Expect(spec["endpoints"]).To(Equal([]any{
			map[string]any{"path": "/metrics/jobs", "port": "slurmctld", "scheme": "http", "interval": "30s"},
			map[string]any{"path": "/metrics/nodes", "port": "slurmctld", "scheme": "http", "interval": "10s", "scrapeTimeout": "5s"},
		}))
		g.Eventually(func(g Gomega) *metav1.Condition { return monitorCondition(g) }).WithTimeout(30 * time.Second).
			Should(And(Not(BeNil()), HaveField("Status", metav1.ConditionTrue), HaveField("Reason", slurmctld.ReasonServiceMonitorSynced)))
	})

	t.Run("the one an older Gantry named as the Controller goes", func(t *testing.T) {
		g := NewWithT(t)
		// Any reconcile once the CRD is served deletes it; the edits of the
		// subtest before brought some.
		g.Eventually(func() error { return c.Get(ctx, key("slurm"), old) }).WithTimeout(30*time.Second).
			Should(Satisfy(apierrors.IsNotFound), "the ServiceMonitor Gantry 0.1 named as the Controller")
		_, err := serviceMonitor()
		g.Expect(err).NotTo(HaveOccurred())
	})

	t.Run("turning it off deletes it", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			touch(g, func(cur *slinkyv1beta1.Controller) { cur.Spec.Metrics.ServiceMonitor.Enabled = false })
		}).Should(Succeed())
		g.Eventually(func() bool {
			_, err := serviceMonitor()
			return client.IgnoreNotFound(err) == nil && err != nil
		}).WithTimeout(30 * time.Second).Should(BeTrue())
	})
}
