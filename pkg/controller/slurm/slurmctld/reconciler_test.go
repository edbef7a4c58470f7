package slurmctld

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/slurmmetrics"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

type fakeEnv struct {
	client   client.Client
	writes   *atomic.Int32
	recorder *events.FakeRecorder
	r        *Reconciler
}

func newFakeEnv(t *testing.T, objs ...client.Object) *fakeEnv {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := slinkyv1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	writes := &atomic.Int32{}
	count := func() { writes.Add(1) }
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithStatusSubresource(&slinkyv1beta1.Controller{}).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
				count()
				return c.Create(ctx, o, opts...)
			},
			Update: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.UpdateOption) error {
				count()
				return c.Update(ctx, o, opts...)
			},
			Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
				count()
				return c.Patch(ctx, o, p, opts...)
			},
			Apply: func(ctx context.Context, c client.WithWatch, o runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
				count()
				return c.Apply(ctx, o, opts...)
			},
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				count()
				return c.SubResource(sub).Patch(ctx, o, patch, opts...)
			},
		}).Build()
	rec := events.NewFakeRecorder(100)
	return &fakeEnv{client: c, writes: writes, recorder: rec, r: newReconciler(c, c, rec)}
}

func (e *fakeEnv) reconcile(t *testing.T, name, ns string) {
	t.Helper()
	if _, err := e.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: name}}); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
}

func (e *fakeEnv) events() []string {
	var out []string
	for {
		select {
		case ev := <-e.recorder.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

func keysSecret() *corev1.Secret {
	return slinkytesting.MakeSecret("keys", "ns", map[string]string{"slurm.key": "s1", "jwt.key": "j1"}).Obj()
}

func TestReconcileCreatesAndConverges(t *testing.T) {
	env := newFakeEnv(t, slinkytesting.MakeController("slurm", "ns").Keys("keys").Obj(), keysSecret(),
		slinkytesting.MakeNodeSet("gpu", "other", "slurm").ControllerNamespace("ns").Partition("").Obj(),
		slinkytesting.MakeNodeSet("foreign", "ns", "another").Obj())
	env.reconcile(t, "slurm", "ns")

	for _, obj := range []client.Object{
		&corev1.Service{ObjectMeta: meta1("slurm-controller")},
		&corev1.Service{ObjectMeta: meta1("slurm-controller-internal")},
		&corev1.ConfigMap{ObjectMeta: meta1("slurm-config")},
		&appsv1.StatefulSet{ObjectMeta: meta1("slurm-controller")},
	} {
		if err := env.client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Errorf("%T %s: %v", obj, obj.GetName(), err)
		}
	}
	cm := &corev1.ConfigMap{}
	_ = env.client.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "slurm-config"}, cm)
	conf := cm.Data["slurm.conf"]
	if !strings.Contains(conf, "NodeSet=gpu Feature=gpu\nPartitionName=gpu Nodes=gpu\n") || strings.Contains(conf, "foreign") {
		t.Errorf("slurm.conf must list exactly the NodeSets referencing this Controller, from any namespace:\n%s", conf)
	}
	evs := env.events()
	if len(evs) != 1 || !strings.HasPrefix(evs[0], "Normal Created Created Service slurm-controller-internal, Service slurm-controller, ConfigMap slurm-config, StatefulSet slurm-controller") {
		t.Errorf("events = %q", evs)
	}
	c := &slinkyv1beta1.Controller{}
	_ = env.client.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "slurm"}, c)
	if cond := meta.FindStatusCondition(c.Status.Conditions, ConditionReady); cond == nil || cond.Reason != ReasonStatefulSetNotReady {
		t.Errorf("Ready condition = %+v", cond)
	}

	before := env.writes.Load()
	env.reconcile(t, "slurm", "ns")
	if got := env.writes.Load() - before; got != 0 {
		t.Errorf("a reconcile with nothing changed made %d writes", got)
	}
	if evs := env.events(); len(evs) != 0 {
		t.Errorf("a reconcile with nothing changed recorded events %q", evs)
	}
}

func TestReconcileKeyChangeRollsPod(t *testing.T) {
	env := newFakeEnv(t, slinkytesting.MakeController("slurm", "ns").Keys("keys").Obj(), keysSecret())
	env.reconcile(t, "slurm", "ns")
	hashes := func() map[string]string {
		sts := &appsv1.StatefulSet{}
		if err := env.client.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "slurm-controller"}, sts); err != nil {
			t.Fatal(err)
		}
		return sts.Spec.Template.Annotations
	}
	old := hashes()
	env.events()

	secret := keysSecret()
	secret.Data["jwt.key"] = []byte("j2")
	secret.Data["unrelated"] = []byte("x")
	if err := env.client.Update(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	env.reconcile(t, "slurm", "ns")
	now := hashes()
	if now[slinky.AnnotationJwtKeyHash] == old[slinky.AnnotationJwtKeyHash] {
		t.Error("a new jwt key did not change the pod template")
	}
	if now[slinky.AnnotationSlurmKeyHash] != old[slinky.AnnotationSlurmKeyHash] {
		t.Error("the slurm key hash changed although the slurm key did not")
	}
	if evs := env.events(); len(evs) != 1 || !strings.Contains(evs[0], "Updated StatefulSet slurm-controller") {
		t.Errorf("events = %q", evs)
	}
}

func TestReconcileMissingSecretIsAUserError(t *testing.T) {
	env := newFakeEnv(t, slinkytesting.MakeController("slurm", "ns").Keys("absent").Obj())
	env.reconcile(t, "slurm", "ns") // no error: nothing to retry until the Secret appears

	c := &slinkyv1beta1.Controller{}
	_ = env.client.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "slurm"}, c)
	cond := meta.FindStatusCondition(c.Status.Conditions, ConditionReady)
	if cond == nil || cond.Reason != ReasonReferenceNotFound || !strings.Contains(cond.Message, "absent") {
		t.Errorf("Ready condition = %+v", cond)
	}
	var warned bool
	for _, ev := range env.events() {
		warned = warned || strings.HasPrefix(ev, "Warning SyncStepFailed step StatefulSet: Secret ns/absent not found")
	}
	if !warned {
		t.Error("no Warning event names the missing Secret")
	}
	if err := env.client.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "slurm-controller"}, &appsv1.StatefulSet{}); err == nil {
		t.Error("a StatefulSet was created without its keys")
	}
}

func TestReconcileExternalOnlyWritesConfig(t *testing.T) {
	env := newFakeEnv(t, slinkytesting.MakeController("slurm", "ns").External("ctld.example", 6817).Obj())
	env.reconcile(t, "slurm", "ns")
	if err := env.client.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "slurm-config"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("ConfigMap: %v", err)
	}
	for _, name := range []string{"slurm-controller", "slurm-controller-internal"} {
		if err := env.client.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, &corev1.Service{}); err == nil {
			t.Errorf("Service %s created for an external slurmctld", name)
		}
	}
}

func TestReconcileGoneControllerIsNoOp(t *testing.T) {
	env := newFakeEnv(t)
	env.reconcile(t, "gone", "ns")
	if env.writes.Load() != 0 {
		t.Error("reconciling a deleted Controller wrote something")
	}
}

func meta1(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: "ns", Name: name} }

// TestServiceMonitorUnavailableWarnsOnce: on a cluster without the
// ServiceMonitor CRD, a Controller asking for one says so in its
// ServiceMonitorReady condition; the Warning is recorded once, not on every
// reconcile, and the condition goes away when the ServiceMonitor is no
// longer asked for.
func TestServiceMonitorUnavailableWarnsOnce(t *testing.T) {
	ctl := slinkytesting.MakeController("slurm", "ns").Keys("keys").Obj()
	ctl.Spec.Metrics.Enabled = true
	ctl.Spec.Metrics.ServiceMonitor.Enabled = true
	env := newFakeEnv(t, ctl, keysSecret())
	for range 3 {
		env.reconcile(t, "slurm", "ns")
	}
	var warnings []string
	for _, e := range env.events() {
		if strings.Contains(e, ReasonServiceMonitorUnavailable) {
			warnings = append(warnings, e)
		}
	}
	if len(warnings) != 1 {
		t.Fatalf("three reconciles recorded %d %s events, want 1: %q", len(warnings), ReasonServiceMonitorUnavailable, warnings)
	}
	cur := &slinkyv1beta1.Controller{}
	if err := env.client.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "slurm"}, cur); err != nil {
		t.Fatal(err)
	}
	cond := meta.FindStatusCondition(cur.Status.Conditions, ConditionServiceMonitor)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != ReasonServiceMonitorUnavailable {
		t.Fatalf("ServiceMonitorReady is %+v, want False/%s", cond, ReasonServiceMonitorUnavailable)
	}

	cur.Spec.Metrics.ServiceMonitor.Enabled = false
	if err := env.client.Update(context.Background(), cur); err != nil {
		t.Fatal(err)
	}
	env.reconcile(t, "slurm", "ns")
	if err := env.client.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "slurm"}, cur); err != nil {
		t.Fatal(err)
	}
	if cond := meta.FindStatusCondition(cur.Status.Conditions, ConditionServiceMonitor); cond != nil {
		t.Fatalf("ServiceMonitorReady is %+v on a Controller that asks for no ServiceMonitor", cond)
	}
}

// TestDeletedControllerDropsItsMetrics: once a Controller is gone, its
// slurmrestd request series go too; another Controller's stay.
func TestDeletedControllerDropsItsMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := slurmmetrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.Observer("ns", "gone")("GET nodes", 200, time.Millisecond, nil)
	m.Observer("ns", "kept")("GET nodes", 200, time.Millisecond, nil)
	env := newFakeEnv(t)
	env.r.metrics = m
	env.reconcile(t, "gone", "ns")

	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var controllers []string
	for _, f := range families {
		if f.GetName() != "gantry_slurm_restapi_requests_total" {
			continue
		}
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "name" {
					controllers = append(controllers, l.GetValue())
				}
			}
		}
	}
	if len(controllers) != 1 || controllers[0] != "kept" {
		t.Errorf("request series left for Controllers %v, want only kept", controllers)
	}
}

// countingMapper counts the RESTMapping lookups of a kind: with the
// manager's lazy mapper, each miss is a discovery request.
type countingMapper struct {
	meta.RESTMapper
	lookups atomic.Int32
}

func (m *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if gk == ServiceMonitorGVK.GroupKind() {
		m.lookups.Add(1)
	}
	return m.RESTMapper.RESTMapping(gk, versions...)
}

type mapperClient struct {
	client.Client
	mapper meta.RESTMapper
}

func (c mapperClient) RESTMapper() meta.RESTMapper { return c.mapper }

// TestMissingServiceMonitorCRDIsNotLookedUpEveryReconcile: a Controller
// that asks for no ServiceMonitor looks for the CRD once a minute at most,
// not on every reconcile (each look is a discovery request, and the
// Controller is reconciled whenever one of its NodeSets' status moves). One
// that asks for a ServiceMonitor looks every time, so that installing the
// CRD takes effect at its next reconcile.
func TestMissingServiceMonitorCRDIsNotLookedUpEveryReconcile(t *testing.T) {
	for _, wants := range []bool{false, true} {
		t.Run(fmt.Sprintf("wants a ServiceMonitor: %v", wants), func(t *testing.T) {
			ctl := slinkytesting.MakeController("slurm", "ns").Keys("keys").Obj()
			ctl.Spec.Metrics.Enabled = wants
			ctl.Spec.Metrics.ServiceMonitor.Enabled = wants
			env := newFakeEnv(t, ctl, keysSecret())
			mapper := &countingMapper{RESTMapper: env.client.RESTMapper()}
			env.r.Client = mapperClient{Client: env.r.Client, mapper: mapper}
			for range 3 {
				env.reconcile(t, "slurm", "ns")
			}
			want := int32(1)
			if wants {
				want = 3
			}
			if got := mapper.lookups.Load(); got != want {
				t.Errorf("three reconciles looked up the ServiceMonitor kind %d times, want %d", got, want)
			}
		})
	}
}
