package loginset_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/sshd"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/loginset"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	"github.com/gantry-dev/gantry/test/testenv"
	"github.com/gantry-dev/gantry/test/testenv/managertest"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

func makeLoginSet(name, ns, controller, sssdSecret string) *slinkyv1beta1.LoginSet {
	return &slinkyv1beta1.LoginSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: slinkyv1beta1.LoginSetSpec{
			ControllerRef: corev1.LocalObjectReference{Name: controller},
			SssdConfRef:   corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: sssdSecret}, Key: "sssd.conf"},
		},
	}
}

// TestLoginSetIntegration drives a LoginSet through a real kube-apiserver:
// missing references reported, the objects built once they resolve, host
// keys generated once and never replaced, a change of what the daemons
// read rolling the pods, status and the scale subresource following the
// Deployment, events on transitions only, and no write once converged.
func TestLoginSetIntegration(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	env := testenv.Start(t, testenv.Options{AddToScheme: []func(*runtime.Scheme) error{slinkyv1beta1.AddToScheme}})
	managertest.Start(t, env, func(mgr ctrl.Manager) error {
		if err := slurm.Integration().SetupIndexes(context.Background(), mgr.GetFieldIndexer()); err != nil {
			return err
		}
		r, err := loginset.New(mgr, loginset.Options{})
		if err != nil {
			return err
		}
		return r.SetupWithManager(mgr)
	})
	ctx := context.Background()
	c := env.Client
	const ns = "loginset-it"
	key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())

	readyOf := func(g Gomega, name string) *metav1.Condition {
		l := &slinkyv1beta1.LoginSet{}
		g.Expect(c.Get(ctx, key(name), l)).To(Succeed())
		return meta.FindStatusCondition(l.Status.Conditions, loginset.ConditionReady)
	}
	reasons := func(g Gomega, name string) []string {
		list := &eventsv1.EventList{}
		g.Expect(c.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		var out []string
		for _, e := range list.Items {
			if e.Regarding.Name == name && e.Regarding.Kind == slinkyv1beta1.LoginSetKind {
				out = append(out, e.Reason)
			}
		}
		return out
	}
	deployment := func(g Gomega) *appsv1.Deployment {
		d := &appsv1.Deployment{}
		g.Expect(c.Get(ctx, key("login"), d)).To(Succeed())
		return d
	}
	annotation := func(name string) func(g Gomega) string {
		return func(g Gomega) string { return deployment(g).Spec.Template.Annotations[name] }
	}

	g.Expect(c.Create(ctx, makeLoginSet("login", ns, "slurm", "sssd"))).To(Succeed())
	stored := &slinkyv1beta1.LoginSet{}
	g.Expect(c.Get(ctx, key("login"), stored)).To(Succeed())
	g.Expect(stored.Spec.Replicas).To(HaveValue(Equal(int32(1))), "the CRD defaults replicas to 1")
	noSssd := makeLoginSet("no-sssd", ns, "slurm", "")
	noSssd.Spec.SssdConfRef = corev1.SecretKeySelector{}
	g.Expect(c.Create(ctx, noSssd)).NotTo(Succeed(), "the CRD requires sssdConfRef")

	t.Run("a missing Controller is reported once", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) *metav1.Condition { return readyOf(g, "login") }).WithTimeout(30 * time.Second).
			Should(And(Not(BeNil()), HaveField("Status", metav1.ConditionFalse), HaveField("Reason", loginset.ReasonControllerNotFound)))
		g.Eventually(func(g Gomega) []string { return reasons(g, "login") }).WithTimeout(30 * time.Second).
			Should(ContainElement(loginset.ReasonControllerNotFound))
		// Reconciling again while nothing changed records nothing.
		recorder := events.NewFakeRecorder(10)
		r := loginset.NewReconcilerForTest(c, c, recorder)
		for range 3 {
			_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key("login")})
			g.Expect(err).NotTo(HaveOccurred())
		}
		g.Expect(recorder.Events).To(BeEmpty())
	})

	g.Expect(c.Create(ctx, slinkytesting.MakeSecret("keys", ns, map[string]string{"slurm.key": "k1", "jwt.key": "j1"}).Obj())).To(Succeed())
	g.Expect(c.Create(ctx, slinkytesting.MakeController("slurm", ns).Keys("keys").Obj())).To(Succeed())

	hostKeys := &corev1.Secret{}
	t.Run("without sssd.conf the keys, config and Service exist but no pods", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) *metav1.Condition { return readyOf(g, "login") }).WithTimeout(30 * time.Second).
			Should(And(HaveField("Reason", loginset.ReasonReferenceNotFound), HaveField("Message", ContainSubstring("sssd"))))
		g.Expect(c.Get(ctx, key("login-ssh-host-keys"), hostKeys)).To(Succeed())
		g.Expect(hostKeys.Immutable).To(HaveValue(BeTrue()))
		g.Expect(hostKeys.Data).To(HaveLen(6))
		for _, f := range loginset.HostKeyFiles {
			g.Expect(hostKeys.Data).To(HaveKeyWithValue(f, Not(BeEmpty())))
		}
		cm := &corev1.ConfigMap{}
		g.Expect(c.Get(ctx, key("login-ssh-config"), cm)).To(Succeed())
		g.Expect(cm.Data).To(HaveKeyWithValue(sshd.ConfigFile, ContainSubstring("UsePAM yes")))
		svc := &corev1.Service{}
		g.Expect(c.Get(ctx, key("login"), svc)).To(Succeed())
		g.Expect(svc.Spec.Ports).To(ConsistOf(And(HaveField("Name", "login"), HaveField("Port", int32(22)))))
		g.Expect(c.Get(ctx, key("login"), &appsv1.Deployment{})).NotTo(Succeed())
		g.Eventually(func(g Gomega) []string { return reasons(g, "login") }).
			Should(ContainElements(loginset.ReasonHostKeysGenerated, loginset.ReasonReferenceNotFound, "Created"))
	})

	sssd := slinkytesting.MakeSecret("sssd", ns, map[string]string{"sssd.conf": loginset.DefaultSssdConf}).Obj()
	g.Expect(c.Create(ctx, sssd)).To(Succeed())

	t.Run("the sssd.conf Secret appearing creates the Deployment", func(t *testing.T) {
		g := NewWithT(t)
		d := &appsv1.Deployment{}
		g.Eventually(func() error { return c.Get(ctx, key("login"), d) }).WithTimeout(30 * time.Second).Should(Succeed())
		for _, a := range []string{slinky.AnnotationSlurmKeyHash, loginset.AnnotationSshdConfHash, loginset.AnnotationSssdConfHash, loginset.AnnotationSshHostKeysHash} {
			g.Expect(d.Spec.Template.Annotations).To(HaveKeyWithValue(a, Not(BeEmpty())))
		}
		g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal(loginset.DefaultLoginImage))
		l := &slinkyv1beta1.LoginSet{}
		g.Expect(c.Get(ctx, key("login"), l)).To(Succeed())
		g.Expect(l.Status.Selector).To(Equal("app.kubernetes.io/instance=login,app.kubernetes.io/name=login"))
		g.Eventually(func(g Gomega) *metav1.Condition { return readyOf(g, "login") }).WithTimeout(30 * time.Second).
			Should(HaveField("Reason", loginset.ReasonDeploymentUnavailable))
	})

	t.Run("host keys are kept across reconcilers", func(t *testing.T) {
		g := NewWithT(t)
		hash := deployment(g).Spec.Template.Annotations[loginset.AnnotationSshHostKeysHash]
		// A new reconciler, as after a manager restart.
		r := loginset.NewReconcilerForTest(c, c, nil)
		_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key("login")})
		g.Expect(err).NotTo(HaveOccurred())
		now := &corev1.Secret{}
		g.Expect(c.Get(ctx, key("login-ssh-host-keys"), now)).To(Succeed())
		g.Expect(now.UID).To(Equal(hostKeys.UID))
		g.Expect(now.Data).To(Equal(hostKeys.Data))
		g.Expect(deployment(g).Spec.Template.Annotations[loginset.AnnotationSshHostKeysHash]).To(Equal(hash))
	})

	t.Run("a change of sssd.conf, sshd config or slurm key rolls the pods", func(t *testing.T) {
		g := NewWithT(t)
		for _, tc := range []struct {
			annotation string
			change     func() error
		}{
			{loginset.AnnotationSssdConfHash, func() error {
				s := &corev1.Secret{}
				if err := c.Get(ctx, key("sssd"), s); err != nil {
					return err
				}
				s.Data["sssd.conf"] = []byte(loginset.DefaultSssdConf + "\n[ssh]\n")
				return c.Update(ctx, s)
			}},
			{loginset.AnnotationSshdConfHash, func() error {
				l := &slinkyv1beta1.LoginSet{}
				if err := c.Get(ctx, key("login"), l); err != nil {
					return err
				}
				l.Spec.RootSshAuthorizedKeys = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl admin"
				return c.Update(ctx, l)
			}},
			{slinky.AnnotationSlurmKeyHash, func() error {
				s := &corev1.Secret{}
				if err := c.Get(ctx, key("keys"), s); err != nil {
					return err
				}
				s.Data["slurm.key"] = []byte("k2")
				return c.Update(ctx, s)
			}},
		} {
			old := annotation(tc.annotation)(g)
			g.Expect(tc.change()).To(Succeed())
			g.Eventually(annotation(tc.annotation)).WithTimeout(30*time.Second).Should(And(Not(BeEmpty()), Not(Equal(old))), tc.annotation)
		}
		cm := &corev1.ConfigMap{}
		g.Expect(c.Get(ctx, key("login-ssh-config"), cm)).To(Succeed())
		g.Expect(cm.Data[loginset.AuthorizedKeysFile]).To(ContainSubstring("admin"))
	})

	t.Run("status and the scale subresource follow the Deployment", func(t *testing.T) {
		g := NewWithT(t)
		l := &slinkyv1beta1.LoginSet{}
		g.Expect(c.Get(ctx, key("login"), l)).To(Succeed())
		scale := &autoscalingv1.Scale{}
		g.Expect(c.SubResource("scale").Get(ctx, l, scale)).To(Succeed())
		g.Expect(scale.Status.Selector).To(Equal("app.kubernetes.io/instance=login,app.kubernetes.io/name=login"))
		scale.Spec.Replicas = 2
		g.Expect(c.SubResource("scale").Update(ctx, l, client.WithSubResourceBody(scale))).To(Succeed())
		g.Eventually(func(g Gomega) int32 { return *deployment(g).Spec.Replicas }).WithTimeout(30 * time.Second).Should(Equal(int32(2)))

		g.Eventually(func() error {
			d := &appsv1.Deployment{}
			if err := c.Get(ctx, key("login"), d); err != nil {
				return err
			}
			d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}
			return c.Status().Update(ctx, d)
		}).WithTimeout(30 * time.Second).Should(Succeed())
		g.Eventually(func(g Gomega) *metav1.Condition { return readyOf(g, "login") }).WithTimeout(30 * time.Second).
			Should(And(HaveField("Status", metav1.ConditionTrue), HaveField("Reason", loginset.ReasonDeploymentAvailable),
				HaveField("Message", "2/2 login pods available")))
		g.Expect(c.Get(ctx, key("login"), l)).To(Succeed())
		g.Expect(l.Status.Replicas).To(Equal(int32(2)))
		g.Expect(l.Status.ReadyReplicas).To(Equal(int32(2)))
		g.Expect(c.SubResource("scale").Get(ctx, l, scale)).To(Succeed())
		g.Expect(scale.Status.Replicas).To(Equal(int32(2)))
		g.Eventually(func(g Gomega) []string { return reasons(g, "login") }).Should(ContainElement(loginset.ReasonDeploymentAvailable))
	})

	t.Run("a converged reconcile writes nothing", func(t *testing.T) {
		g := NewWithT(t)
		live, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
		g.Expect(err).NotTo(HaveOccurred())
		writes := &testenv.WriteCounter{}
		r := loginset.NewReconcilerForTest(writes.Client(live), env.Client, nil)
		req := ctrl.Request{NamespacedName: key("login")}
		g.Eventually(func() int64 {
			before := writes.Total()
			_, err := r.Reconcile(ctx, req)
			g.Expect(err).NotTo(HaveOccurred())
			return writes.Total() - before
		}).WithTimeout(30 * time.Second).Should(BeZero())
	})

	t.Run("a host keys Secret lacking keys is reported and left alone", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(c.Create(ctx, slinkytesting.MakeSecret("partial-ssh-host-keys", ns, map[string]string{"ssh_host_rsa_key": "mine"}).Obj())).To(Succeed())
		g.Expect(c.Create(ctx, makeLoginSet("partial", ns, "slurm", "sssd"))).To(Succeed())
		g.Eventually(func(g Gomega) *metav1.Condition { return readyOf(g, "partial") }).WithTimeout(30 * time.Second).
			Should(And(Not(BeNil()), HaveField("Reason", loginset.ReasonHostKeysInvalid), HaveField("Message", ContainSubstring("ssh_host_ed25519_key"))))
		s := &corev1.Secret{}
		g.Expect(c.Get(ctx, key("partial-ssh-host-keys"), s)).To(Succeed())
		g.Expect(s.Data).To(HaveLen(1))
		g.Eventually(func(g Gomega) []string { return reasons(g, "partial") }).Should(ContainElement(loginset.ReasonHostKeysInvalid))
		g.Expect(c.Get(ctx, key("partial"), &appsv1.Deployment{})).NotTo(Succeed())
	})
}
