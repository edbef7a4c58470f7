package accounting_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/accounting"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slurmctld"
	"github.com/gantry-dev/gantry/test/testenv"
	"github.com/gantry-dev/gantry/test/testenv/managertest"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

// TestAccounting runs the Accounting and Controller reconcilers against a
// real API server: an Accounting gets slurmdbd's Service, config Secret
// and StatefulSet; a new database password reaches slurmdbd.conf and rolls
// the pod; a missing Secret is reported in the condition and one Warning
// event; a Controller's slurm.conf points at slurmdbd once its Accounting
// exists; an external Accounting gets nothing built.
func TestAccounting(t *testing.T) {
	g := newG(t)
	env := testenv.Start(t, testenv.Options{AddToScheme: []func(*runtime.Scheme) error{slinkyv1beta1.AddToScheme}})
	managertest.Start(t, env, func(mgr ctrl.Manager) error {
		if err := slurm.Integration().SetupIndexes(context.Background(), mgr.GetFieldIndexer()); err != nil {
			return err
		}
		acct, err := accounting.New(mgr, accounting.Options{})
		if err != nil {
			return err
		}
		if err := acct.SetupWithManager(mgr); err != nil {
			return err
		}
		ctld, err := slurmctld.New(mgr, slurmctld.Options{})
		if err != nil {
			return err
		}
		return ctld.SetupWithManager(mgr)
	})
	ctx := context.Background()
	c := env.Client
	const ns = "accounting"
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	g.Expect(c.Create(ctx, slinkytesting.MakeSecret("keys", ns, map[string]string{"slurm.key": "sk", "jwt.key": "jk"}).Obj())).To(Succeed())
	g.Expect(c.Create(ctx, slinkytesting.MakeSecret("db-pass", ns, map[string]string{"password": "first#pw"}).Obj())).To(Succeed())

	ready := func(g Gomega, name string) *metav1.Condition {
		a := &slinkyv1beta1.Accounting{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, a)).To(Succeed())
		return meta.FindStatusCondition(a.Status.Conditions, accounting.ConditionReady)
	}
	conf := func(g Gomega, name string) string {
		s := &corev1.Secret{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: slinky.AccountingName(name)}, s)).To(Succeed())
		return string(s.Data[accounting.SlurmdbdConfFile])
	}
	events := func(g Gomega, name, reason string) []eventsv1.Event {
		list := &eventsv1.EventList{}
		g.Expect(c.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		var out []eventsv1.Event
		for _, e := range list.Items {
			if e.Regarding.Name == name && e.Reason == reason {
				out = append(out, e)
			}
		}
		return out
	}

	t.Run("slurmdbd's Service, config and StatefulSet, then Ready", func(t *testing.T) {
		g := newG(t)
		a := slinkytesting.MakeAccounting("db", ns).Keys("keys").Storage("mariadb", 0, "slurm", "db-pass", "password").Obj()
		g.Expect(c.Create(ctx, a)).To(Succeed())

		g.Eventually(func(g Gomega) {
			svc := &corev1.Service{}
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db-accounting"}, svc)).To(Succeed())
			g.Expect(svc.Spec.Ports).To(ConsistOf(HaveField("Port", int32(6819))))
			g.Expect(svc.Spec.Selector).To(HaveKeyWithValue("app.kubernetes.io/name", "slurmdbd"))
			g.Expect(conf(g, "db")).To(And(ContainSubstring("DbdHost=db-accounting-0\n"),
				ContainSubstring("StorageHost=mariadb\nStoragePort=3306\nStorageUser=slurm\nStorageLoc=slurm_acct_db\nStoragePass=first\\#pw\n")))
		}).Should(Succeed())

		sts := &appsv1.StatefulSet{}
		g.Eventually(func() error {
			return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db-accounting"}, sts)
		}).Should(Succeed())
		g.Expect(sts.Spec.ServiceName).To(Equal("db-accounting"))
		g.Expect(sts.Spec.Replicas).To(HaveValue(Equal(int32(1))))
		g.Expect(sts.Spec.Template.Spec.Containers).To(ConsistOf(And(
			HaveField("Name", "slurmdbd"), HaveField("Image", slinky.DefaultImages().Slurmdbd))))
		g.Expect(sts.Spec.Template.Annotations).To(HaveKey(accounting.AnnotationSlurmdbdConfHash))
		g.Expect(metav1.IsControlledBy(sts, a)).To(BeTrue())
		g.Eventually(func(g Gomega) *metav1.Condition { return ready(g, "db") }).Should(And(Not(BeNil()),
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", accounting.ReasonStatefulSetNotReady)))

		// There is no kubelet: play the StatefulSet controller's part.
		sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: sts.Generation, Replicas: 1, ReadyReplicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1}
		g.Expect(c.Status().Update(ctx, sts)).To(Succeed())
		g.Eventually(func(g Gomega) *metav1.Condition { return ready(g, "db") }).Should(And(Not(BeNil()),
			HaveField("Status", metav1.ConditionTrue), HaveField("Message", "1/1 slurmdbd pods ready")))
		g.Eventually(func(g Gomega) []eventsv1.Event { return events(g, "db", accounting.ReasonStatefulSetReady) }).Should(HaveLen(1))
	})

	t.Run("a new database password rewrites slurmdbd.conf and rolls slurmdbd", func(t *testing.T) {
		g := newG(t)
		sts := &appsv1.StatefulSet{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db-accounting"}, sts)).To(Succeed())
		before := sts.Spec.Template.Annotations[accounting.AnnotationSlurmdbdConfHash]
		pass := &corev1.Secret{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db-pass"}, pass)).To(Succeed())
		pass.Data["password"] = []byte("second")
		g.Expect(c.Update(ctx, pass)).To(Succeed())
		g.Eventually(func(g Gomega) string { return conf(g, "db") }).Should(ContainSubstring("StoragePass=second\n"))
		g.Eventually(func(g Gomega) string {
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db-accounting"}, sts)).To(Succeed())
			return sts.Spec.Template.Annotations[accounting.AnnotationSlurmdbdConfHash]
		}).ShouldNot(Equal(before))
	})

	t.Run("a missing Secret is reported once, and the Accounting proceeds when it appears", func(t *testing.T) {
		g := newG(t)
		a := slinkytesting.MakeAccounting("nopass", ns).Keys("keys").Storage("mariadb", 0, "slurm", "later", "password").Obj()
		g.Expect(c.Create(ctx, a)).To(Succeed())
		g.Eventually(func(g Gomega) *metav1.Condition { return ready(g, "nopass") }).Should(And(Not(BeNil()),
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", accounting.ReasonReferenceNotFound),
			HaveField("Message", ContainSubstring("later"))))
		g.Eventually(func(g Gomega) []eventsv1.Event { return events(g, "nopass", accounting.ReasonReferenceNotFound) }).Should(HaveLen(1))
		// Reconciles that find the same state (a label edit) send no event.
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(a), a)).To(Succeed())
		a.Labels = map[string]string{"touched": "yes"}
		g.Expect(c.Update(ctx, a)).To(Succeed())
		g.Consistently(func(g Gomega) {
			evs := events(g, "nopass", accounting.ReasonReferenceNotFound)
			g.Expect(evs).To(HaveLen(1))
			g.Expect(evs[0].Series).To(BeNil())
		}).WithTimeout(3 * time.Second).Should(Succeed())
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nopass-accounting"}, &appsv1.StatefulSet{})).NotTo(Succeed())

		g.Expect(c.Create(ctx, slinkytesting.MakeSecret("later", ns, map[string]string{"password": "pw"}).Obj())).To(Succeed())
		g.Eventually(func() error {
			return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nopass-accounting"}, &appsv1.StatefulSet{})
		}).Should(Succeed())
		g.Eventually(func(g Gomega) *metav1.Condition { return ready(g, "nopass") }).Should(HaveField("Reason", accounting.ReasonStatefulSetNotReady))
	})

	t.Run("a Controller's slurm.conf points at slurmdbd once its Accounting exists", func(t *testing.T) {
		g := newG(t)
		ctl := slinkytesting.MakeController("slurm", ns).Keys("keys").Accounting("late").Persistence(false).Obj()
		g.Expect(c.Create(ctx, ctl)).To(Succeed())
		slurmConf := func(g Gomega) string {
			cm := &corev1.ConfigMap{}
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: slinky.ControllerConfigMapName("slurm")}, cm)).To(Succeed())
			return cm.Data[slinky.SlurmConfFile]
		}
		g.Eventually(slurmConf).Should(ContainSubstring("AccountingStorageType=accounting_storage/none\n"))

		g.Expect(c.Create(ctx, slinkytesting.MakeAccounting("late", ns).Keys("keys").Storage("mariadb", 0, "slurm", "db-pass", "password").Obj())).To(Succeed())
		g.Eventually(slurmConf).Should(ContainSubstring(
			"AccountingStorageType=accounting_storage/slurmdbd\nAccountingStorageHost=late-accounting\nAccountingStoragePort=6819\n"))
	})

	t.Run("an external slurmdbd gets nothing built", func(t *testing.T) {
		g := newG(t)
		g.Expect(c.Create(ctx, slinkytesting.MakeAccounting("ext", ns).External("dbd.example.com", 6819).Obj())).To(Succeed())
		g.Eventually(func(g Gomega) *metav1.Condition { return ready(g, "ext") }).Should(And(Not(BeNil()),
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", accounting.ReasonExternal),
			HaveField("Message", "slurmdbd runs outside Kubernetes at dbd.example.com:6819")))
		g.Consistently(func() bool {
			err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "ext-accounting"}, &corev1.Service{})
			return err != nil && strings.Contains(err.Error(), "not found")
		}).WithTimeout(2 * time.Second).Should(BeTrue())
	})
}

func newG(t *testing.T) *WithT {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	return g
}
