package restapi_test

import (
	"context"
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
	"github.com/gantry-dev/gantry/pkg/controller/slurm/restapi"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slurmctld"
	"github.com/gantry-dev/gantry/pkg/framework/builder"
	"github.com/gantry-dev/gantry/test/testenv"
	"github.com/gantry-dev/gantry/test/testenv/managertest"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

func TestRestApiIntegration(t *testing.T) {
	g := NewWithT(t)
	env := testenv.Start(t, testenv.Options{AddToScheme: []func(*runtime.Scheme) error{slinkyv1beta1.AddToScheme}})
	managertest.Start(t, env, func(mgr ctrl.Manager) error {
		if err := slurm.Integration().SetupIndexes(context.Background(), mgr.GetFieldIndexer()); err != nil {
			return err
		}
		ra, err := restapi.New(mgr, restapi.Options{})
		if err != nil {
			return err
		}
		if err := ra.SetupWithManager(mgr); err != nil {
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
	const ns = "restapi-it"
	key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	g.Expect(c.Create(ctx, slinkytesting.MakeRestApi("slurm", ns, "slurm").Obj())).To(Succeed())

	readyCondition := func() *metav1.Condition {
		ra := &slinkyv1beta1.RestApi{}
		if err := c.Get(ctx, key("slurm"), ra); err != nil {
			return nil
		}
		return meta.FindStatusCondition(ra.Status.Conditions, restapi.ConditionReady)
	}

	t.Run("a missing Controller is reported, not retried hot", func(t *testing.T) {
		NewWithT(t).Eventually(readyCondition).WithTimeout(30 * time.Second).
			Should(And(Not(BeNil()), HaveField("Reason", restapi.ReasonControllerNotFound)))
	})

	secret := slinkytesting.MakeSecret("keys", ns, map[string]string{"slurm.key": "k1", "jwt.key": "j1"}).Obj()
	g.Expect(c.Create(ctx, secret)).To(Succeed())
	g.Expect(c.Create(ctx, slinkytesting.MakeController("slurm", ns).Keys("keys").Obj())).To(Succeed())

	deploy := &appsv1.Deployment{}
	t.Run("the Controller appearing creates the Deployment and Service", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func() error { return c.Get(ctx, key("slurm-restapi"), deploy) }).WithTimeout(30 * time.Second).Should(Succeed())
		ctr := deploy.Spec.Template.Spec.Containers[0]
		g.Expect(ctr.Env).To(ContainElement(corev1.EnvVar{Name: "SLURM_JWT", Value: "daemon"}))
		g.Expect(ctr.Args).To(ContainElements("rest_auth/jwt", "0.0.0.0:6820"))
		g.Expect(deploy.Spec.Template.Labels).To(HaveKeyWithValue(builder.LabelManagedBy, builder.ManagedByGantry))

		svc := &corev1.Service{}
		g.Eventually(func() error { return c.Get(ctx, key("slurm-restapi"), svc) }).WithTimeout(30 * time.Second).Should(Succeed())
		g.Expect(svc.Spec.Ports).To(ConsistOf(And(HaveField("Port", int32(6820)), HaveField("Name", "slurmrestd"))))
		g.Eventually(readyCondition).WithTimeout(30 * time.Second).Should(HaveField("Reason", restapi.ReasonDeploymentUnavailable))
	})

	t.Run("a new slurm key rolls slurmrestd", func(t *testing.T) {
		g := NewWithT(t)
		old := deploy.Spec.Template.Annotations[slinky.AnnotationSlurmKeyHash]
		g.Expect(old).NotTo(BeEmpty())
		g.Expect(c.Get(ctx, key("keys"), secret)).To(Succeed())
		secret.Data["slurm.key"] = []byte("k2")
		g.Expect(c.Update(ctx, secret)).To(Succeed())
		g.Eventually(func() string {
			live := &appsv1.Deployment{}
			if err := c.Get(ctx, key("slurm-restapi"), live); err != nil {
				return ""
			}
			return live.Spec.Template.Annotations[slinky.AnnotationSlurmKeyHash]
		}).WithTimeout(30 * time.Second).Should(And(Not(BeEmpty()), Not(Equal(old))))
	})

	t.Run("status follows the Deployment", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func() error {
			if err := c.Get(ctx, key("slurm-restapi"), deploy); err != nil {
				return err
			}
			deploy.Status = appsv1.DeploymentStatus{ObservedGeneration: deploy.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
			return c.Status().Update(ctx, deploy)
		}).WithTimeout(30 * time.Second).Should(Succeed())
		g.Eventually(readyCondition).WithTimeout(30 * time.Second).
			Should(And(Not(BeNil()), HaveField("Status", metav1.ConditionTrue), HaveField("Reason", restapi.ReasonDeploymentAvailable)))
	})

	t.Run("a converged reconcile writes nothing", func(t *testing.T) {
		g := NewWithT(t)
		live, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
		g.Expect(err).NotTo(HaveOccurred())
		writes := &testenv.WriteCounter{}
		r := restapi.NewReconcilerForTest(writes.Client(live), env.Client, nil)
		req := ctrl.Request{NamespacedName: key("slurm")}
		// The manager may still be finishing its own reconcile; once the
		// state has converged a reconcile must make no write request at all.
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
}
