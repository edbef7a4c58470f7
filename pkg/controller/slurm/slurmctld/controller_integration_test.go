package slurmctld_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slurmctld"
	"github.com/gantry-dev/gantry/pkg/framework/builder"
	"github.com/gantry-dev/gantry/test/testenv"
	"github.com/gantry-dev/gantry/test/testenv/managertest"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

// startManager runs the Controller reconciler the way the Gantry manager
// does: Services and Pods are cached only when labelled managed-by=gantry.
func startManager(t *testing.T, env *testenv.Env) {
	t.Helper()
	managertest.Start(t, env, func(mgr ctrl.Manager) error {
		if err := slurm.Integration().SetupIndexes(context.Background(), mgr.GetFieldIndexer()); err != nil {
			return err
		}
		r, err := slurmctld.New(mgr, slurmctld.Options{})
		if err != nil {
			return err
		}
		return r.SetupWithManager(mgr)
	})
}

func TestControllerIntegration(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	env := testenv.Start(t, testenv.Options{AddToScheme: []func(*runtime.Scheme) error{slinkyv1beta1.AddToScheme}})
	startManager(t, env)
	ctx := context.Background()
	c := env.Client
	const ns = "slurm-it"

	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	secret := slinkytesting.MakeSecret("keys", ns, map[string]string{"slurm.key": "slurm-key-1", "jwt.key": "jwt-key-1"}).Obj()
	g.Expect(c.Create(ctx, secret)).To(Succeed())
	// A user's ConfigMap carries no Gantry label: the manager's cache holds
	// only its metadata, and the reconciler reads its content past it.
	site := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "site-conf", Namespace: ns},
		Data: map[string]string{"gres.conf": "Name=gpu Count=1"}}
	g.Expect(c.Create(ctx, site)).To(Succeed())
	g.Expect(c.Create(ctx, slinkytesting.MakeController("slurm", ns).Keys("keys").Image("slurmctld:25.11").
		ExtraConf("MaxJobCount=5000").ConfigFiles("site-conf").Obj())).To(Succeed())

	key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
	get := func(obj client.Object, name string) func() error {
		return func() error { return c.Get(ctx, key(name), obj) }
	}

	t.Run("services", func(t *testing.T) {
		g := NewWithT(t)
		headless, client := &corev1.Service{}, &corev1.Service{}
		g.Eventually(get(headless, "slurm-controller-internal")).WithTimeout(30 * time.Second).Should(Succeed())
		g.Expect(headless.Spec.ClusterIP).To(Equal(corev1.ClusterIPNone))
		g.Expect(headless.Spec.Ports).To(ConsistOf(HaveField("Port", int32(6817))))
		g.Eventually(get(client, "slurm-controller")).WithTimeout(30 * time.Second).Should(Succeed())
		g.Expect(client.Spec.ClusterIP).NotTo(Or(BeEmpty(), Equal(corev1.ClusterIPNone)))
		g.Expect(client.Labels).To(HaveKeyWithValue(builder.LabelManagedBy, builder.ManagedByGantry))
	})

	cm := &corev1.ConfigMap{}
	t.Run("slurm.conf", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(get(cm, "slurm-config")).WithTimeout(30 * time.Second).Should(Succeed())
		conf := cm.Data["slurm.conf"]
		for _, line := range []string{
			"ClusterName=slurm-it_slurm",
			"SlurmctldHost=slurm-controller-0(slurm-controller-0.slurm-controller-internal.slurm-it)",
			"SlurmctldPort=6817", "SlurmdPort=6818",
			"AuthType=auth/slurm", "CredType=cred/slurm", "AuthAltTypes=auth/jwt",
			"AuthAltParameters=jwt_key=/etc/slurm/jwt.key",
			"SlurmctldParameters=enable_configless,reconfig_on_restart",
			"StateSaveLocation=/var/spool/slurmctld/slurm-it_slurm",
			"MaxNodeCount=1024", "MaxJobCount=5000",
		} {
			g.Expect(strings.Split(conf, "\n")).To(ContainElement(line))
		}
		g.Expect(cm.Data).To(HaveKey("cgroup.conf"))
		// site-conf supplies gres.conf, so the default one is left out.
		g.Expect(cm.Data).NotTo(HaveKey("gres.conf"))
	})

	sts := &appsv1.StatefulSet{}
	t.Run("statefulset", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(get(sts, "slurm-controller")).WithTimeout(30 * time.Second).Should(Succeed())
		g.Expect(sts.Spec.ServiceName).To(Equal("slurm-controller-internal"))
		pod := sts.Spec.Template
		g.Expect(pod.Labels).To(HaveKeyWithValue(builder.LabelManagedBy, builder.ManagedByGantry))
		for _, a := range []string{slinky.AnnotationSlurmConfigHash, slinky.AnnotationSlurmKeyHash, slinky.AnnotationJwtKeyHash} {
			g.Expect(pod.Annotations).To(HaveKeyWithValue(a, Not(BeEmpty())))
		}
		var etc *corev1.Volume
		for i := range pod.Spec.Volumes {
			if pod.Spec.Volumes[i].Name == slinky.SlurmEtcVolume {
				etc = &pod.Spec.Volumes[i]
			}
		}
		g.Expect(etc).NotTo(BeNil())
		g.Expect(etc.Projected.Sources).To(ContainElements(
			HaveField("Secret.Items", ConsistOf(corev1.KeyToPath{Key: "slurm.key", Path: "slurm.key"})),
			HaveField("Secret.Items", ConsistOf(corev1.KeyToPath{Key: "jwt.key", Path: "jwt.key"})),
		))
		g.Expect(sts.Spec.VolumeClaimTemplates).To(ConsistOf(HaveField("Name", "statesave")))
	})

	readyCondition := func() *metav1.Condition {
		obj := &slinkyv1beta1.Controller{}
		if err := c.Get(ctx, key("slurm"), obj); err != nil {
			return nil
		}
		return meta.FindStatusCondition(obj.Status.Conditions, slurmctld.ConditionReady)
	}
	t.Run("status while no pod runs", func(t *testing.T) {
		NewWithT(t).Eventually(readyCondition).WithTimeout(30 * time.Second).
			Should(And(Not(BeNil()), HaveField("Status", metav1.ConditionFalse), HaveField("Reason", slurmctld.ReasonStatefulSetNotReady)))
	})

	podAnnotation := func(name string) func() string {
		return func() string {
			live := &appsv1.StatefulSet{}
			if err := c.Get(ctx, key("slurm-controller"), live); err != nil {
				return ""
			}
			return live.Spec.Template.Annotations[name]
		}
	}

	t.Run("a new slurm key rolls the pod", func(t *testing.T) {
		g := NewWithT(t)
		old := podAnnotation(slinky.AnnotationSlurmKeyHash)()
		g.Expect(c.Get(ctx, key("keys"), secret)).To(Succeed())
		secret.Data["slurm.key"] = []byte("slurm-key-2")
		g.Expect(c.Update(ctx, secret)).To(Succeed())
		g.Eventually(podAnnotation(slinky.AnnotationSlurmKeyHash)).WithTimeout(30 * time.Second).
			Should(And(Not(BeEmpty()), Not(Equal(old))))
	})

	t.Run("a referenced ConfigMap's new content rolls the pod", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(podAnnotation(slinky.AnnotationSlurmConfigHash)).WithTimeout(30 * time.Second).Should(Not(BeEmpty()))
		old := podAnnotation(slinky.AnnotationSlurmConfigHash)()
		g.Expect(c.Get(ctx, key("site-conf"), site)).To(Succeed())
		site.Data["gres.conf"] = "Name=gpu Count=2"
		g.Expect(c.Update(ctx, site)).To(Succeed())
		g.Eventually(podAnnotation(slinky.AnnotationSlurmConfigHash)).WithTimeout(30 * time.Second).
			Should(And(Not(BeEmpty()), Not(Equal(old))))
	})

	t.Run("a NodeSet with a partition is added to slurm.conf", func(t *testing.T) {
		g := NewWithT(t)
		oldHash := podAnnotation(slinky.AnnotationSlurmConfigHash)()
		g.Expect(c.Create(ctx, slinkytesting.MakeNodeSet("gpu", ns, "slurm").Partition("MaxTime=UNLIMITED").Obj())).To(Succeed())
		g.Eventually(func() []string {
			if err := c.Get(ctx, key("slurm-config"), cm); err != nil {
				return nil
			}
			return strings.Split(cm.Data["slurm.conf"], "\n")
		}).WithTimeout(30 * time.Second).Should(ContainElements("NodeSet=gpu Feature=gpu", "PartitionName=gpu Nodes=gpu MaxTime=UNLIMITED"))
		g.Eventually(podAnnotation(slinky.AnnotationSlurmConfigHash)).WithTimeout(30 * time.Second).Should(Not(Equal(oldHash)))
	})

	t.Run("a converged reconcile writes nothing", func(t *testing.T) {
		g := NewWithT(t)
		live, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
		g.Expect(err).NotTo(HaveOccurred())
		writes := &testenv.WriteCounter{}
		r := slurmctld.NewReconcilerForTest(writes.Client(live), env.Client, nil)
		req := ctrl.Request{NamespacedName: key("slurm")}
		// The manager may still be finishing its own reconcile; once the
		// state has converged a reconcile must make no write at all.
		g.Eventually(func() int64 {
			before := writes.Total()
			_, err := r.Reconcile(ctx, req)
			g.Expect(err).NotTo(HaveOccurred())
			return writes.Total() - before
		}).WithTimeout(30 * time.Second).Should(BeZero())
		before := writes.Total()
		_, err = r.Reconcile(ctx, req)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(writes.Total() - before).To(BeZero())
	})

	t.Run("status follows the StatefulSet", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(c.Get(ctx, key("slurm-controller"), sts)).To(Succeed())
		sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: sts.Generation, Replicas: 1, ReadyReplicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1}
		g.Expect(c.Status().Update(ctx, sts)).To(Succeed())
		g.Eventually(readyCondition).WithTimeout(30 * time.Second).
			Should(And(Not(BeNil()), HaveField("Status", metav1.ConditionTrue), HaveField("Reason", slurmctld.ReasonStatefulSetReady)))
	})
}
