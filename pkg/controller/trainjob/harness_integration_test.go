package trainjob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/framework/features"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
	"github.com/gantry-dev/gantry/test/testenv"
	"github.com/gantry-dev/gantry/test/testenv/managertest"
)

// One control plane and one manager serve every integration test; each
// test works in its own namespace, and the reconciler's client counts
// writes and injects faults per namespace.

const pokeAnnotation = "test.gantry.dev/poke"

type harness struct {
	env    *testenv.Env
	c      client.Client
	writes *testenv.WriteCounter
	// pastCache counts the reconciler's reads past the cache.
	pastCache *readCounter
	faults    *faultInjector
	seen      *reconcileObserver
	metrics   *Metrics
	reg       *prometheus.Registry
	// mgr is the running manager, for tests that add a controller.
	mgr ctrl.Manager
}

var (
	sharedOnce    sync.Once
	shared        *harness
	sharedErr     error
	stopManager   context.CancelFunc
	stopSharedEnv func() error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if stopManager != nil {
		stopManager()
	}
	if stopSharedEnv != nil {
		if err := stopSharedEnv(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the test control plane:", err)
		}
	}
	os.Exit(code)
}

// startHarness starts the control plane and the controller on first use,
// so unit tests in this package do not pay for it.
func startHarness(t *testing.T) *harness {
	t.Helper()
	sharedOnce.Do(func() { shared, sharedErr = newHarness() })
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return shared
}

// harnessRuntimeGrace stands for RuntimeNotFoundGrace in the harness: long
// enough for a test to see a job wait, short enough to see it fail.
const harnessRuntimeGrace = 8 * time.Second

func newHarness() (*harness, error) {
	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	env, err := testenv.StartE(testenv.Options{AddToScheme: []func(*apiruntime.Scheme) error{trainer.AddToScheme, jobsetv1alpha2.AddToScheme, apiextensionsv1.AddToScheme}})
	if err != nil {
		return nil, err
	}
	stopSharedEnv = env.Stop
	mgr, err := managertest.New(env, Integration())
	if err != nil {
		return nil, err
	}
	h := &harness{
		env: env, c: env.Client,
		writes:    &testenv.WriteCounter{},
		pastCache: &readCounter{Reader: mgr.GetAPIReader(), gets: map[string]int{}},
		faults:    &faultInjector{jobSetApplyFailures: map[string]*atomic.Int32{}},
		seen:      &reconcileObserver{pokes: map[string]string{}},
		reg:       prometheus.NewRegistry(),
		mgr:       mgr,
	}
	c := h.writes.Client(interceptor.NewClient(noWatchClient{mgr.GetClient()}, h.faultFuncs()))
	progress := false
	// Elastic PyTorch is on (TestElasticJobIsResizedInPlace); it changes
	// nothing for jobs on other runtimes.
	gates := features.New()
	if err := gates.Register(Name, FeatureGates()); err != nil {
		return nil, err
	}
	if err := gates.Set(string(ElasticPyTorch) + "=true"); err != nil {
		return nil, err
	}
	r, err := New(mgr, Options{
		Options:              workload.Options{MaxConcurrentReconciles: 2, Registerer: h.reg, Features: gates.Reader()},
		ProgressConditions:   &progress,
		RuntimeNotFoundGrace: harnessRuntimeGrace,
		Client:               c,
		APIReader:            h.pastCache,
	})
	if err != nil {
		return nil, err
	}
	h.metrics = r.metrics
	if err := setupRuntimeIndex(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return nil, err
	}
	h.seen.cache = mgr.GetClient()
	h.seen.inner = r
	if err := r.setupWithManager(mgr, h.seen); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopManager = cancel
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager stopped:", err)
		}
	}()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return nil, errors.New("the manager's cache did not sync")
	}
	return h, nil
}

// noWatchClient adapts the manager's client to the interceptor's WithWatch.
type noWatchClient struct{ client.Client }

func (noWatchClient) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("watch is not supported")
}

// faultInjector fails the next N JobSet applies in a namespace with a
// server timeout, the kind of error a retry fixes.
type faultInjector struct {
	mu                  sync.Mutex
	jobSetApplyFailures map[string]*atomic.Int32
}

func (f *faultInjector) failJobSetApplies(ns string, n int32) *atomic.Int32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := &atomic.Int32{}
	c.Store(n)
	f.jobSetApplyFailures[ns] = c
	return c
}

func (f *faultInjector) shouldFail(ns string) bool {
	f.mu.Lock()
	c := f.jobSetApplyFailures[ns]
	f.mu.Unlock()
	if c == nil {
		return false
	}
	for {
		n := c.Load()
		if n <= 0 {
			return false
		}
		if c.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

type applyTarget interface {
	GetNamespace() string
	GetName() string
	GetKind() string
}

// faultFuncs fail JobSet applies as failJobSetApplies asked; the write
// counter wraps them, so a failed apply is not counted.
func (h *harness) faultFuncs() interceptor.Funcs {
	return interceptor.Funcs{
		Apply: func(ctx context.Context, c client.WithWatch, obj apiruntime.ApplyConfiguration, opts ...client.ApplyOption) error {
			target, ok := obj.(applyTarget)
			if !ok {
				return fmt.Errorf("test interceptor: unexpected apply configuration %T", obj)
			}
			if target.GetKind() == "JobSet" && h.faults.shouldFail(target.GetNamespace()) {
				return apierrors.NewTimeoutError("injected by the test", 1)
			}
			return c.Apply(ctx, obj, opts...)
		},
	}
}

// reconcileObserver records, per TrainJob, the poke annotation the cache
// held when a reconcile started, once that reconcile has finished. Since the
// cache only moves forward, a recorded poke proves a full reconcile ran on
// a state at least that new.
type reconcileObserver struct {
	inner reconcile.Reconciler
	cache client.Reader
	mu    sync.Mutex
	pokes map[string]string
}

func (o *reconcileObserver) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	poke := ""
	tj := &trainer.TrainJob{}
	if err := o.cache.Get(ctx, req.NamespacedName, tj); err == nil {
		poke = tj.Annotations[pokeAnnotation]
	}
	res, err := o.inner.Reconcile(ctx, req)
	o.mu.Lock()
	o.pokes[req.String()] = poke
	o.mu.Unlock()
	return res, err
}

func (o *reconcileObserver) lastPoke(key string) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.pokes[key]
}

var pokeSeq atomic.Int64

// forceReconcile touches the TrainJob and waits until a reconcile that saw
// the touch has finished.
func (h *harness) forceReconcile(t *testing.T, tj *trainer.TrainJob) {
	t.Helper()
	g := gomega.NewWithT(t)
	value := strconv.FormatInt(pokeSeq.Add(1), 10)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, pokeAnnotation, value)
	g.Expect(h.c.Patch(context.Background(), tj.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(patch)))).To(gomega.Succeed())
	key := client.ObjectKeyFromObject(tj).String()
	g.Eventually(func() string { return h.seen.lastPoke(key) }).WithTimeout(20 * time.Second).Should(gomega.Equal(value))
}

// newNamespace creates a namespace for one test.
func (h *harness) newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tj-"}}
	if err := h.c.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func (h *harness) create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, obj := range objs {
		if err := h.c.Create(context.Background(), obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
}

func (h *harness) trainJob(g gomega.Gomega, ns, name string) *trainer.TrainJob {
	tj := &trainer.TrainJob{}
	g.Expect(h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, tj)).To(gomega.Succeed())
	return tj
}

// eventuallyJobSet waits for the TrainJob's JobSet and returns it.
func (h *harness) eventuallyJobSet(t *testing.T, ns, name string) *jobsetv1alpha2.JobSet {
	t.Helper()
	js := &jobsetv1alpha2.JobSet{}
	gomega.NewWithT(t).Eventually(func() error {
		return h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, js)
	}).WithTimeout(20 * time.Second).Should(gomega.Succeed())
	return js
}

// eventuallyCreated waits until the TrainJob's JobSet exists and its
// status has caught up with it: no Created or Running condition, which
// Trainer's condition set (the default, see ProgressConditions) does not
// have and the Kubeflow SDK would read as "not Running". It returns the
// TrainJob.
func (h *harness) eventuallyCreated(t *testing.T, ns, name string) *trainer.TrainJob {
	t.Helper()
	h.eventuallyJobSet(t, ns, name)
	var tj *trainer.TrainJob
	gomega.NewWithT(t).Eventually(func(g gomega.Gomega) {
		tj = h.trainJob(g, ns, name)
		g.Expect(meta.FindStatusCondition(tj.Status.Conditions, trainer.TrainJobCreated)).To(gomega.BeNil(), "conditions %v", tj.Status.Conditions)
		g.Expect(meta.FindStatusCondition(tj.Status.Conditions, trainer.TrainJobRunning)).To(gomega.BeNil(), "conditions %v", tj.Status.Conditions)
	}).WithTimeout(20 * time.Second).Should(gomega.Succeed())
	return tj
}

// eventuallyCondition waits until the TrainJob has the condition with the
// given status and reason, and returns the TrainJob.
func (h *harness) eventuallyCondition(t *testing.T, ns, name, condType string, status metav1.ConditionStatus, reason string) *trainer.TrainJob {
	t.Helper()
	var tj *trainer.TrainJob
	gomega.NewWithT(t).Eventually(func(g gomega.Gomega) {
		tj = h.trainJob(g, ns, name)
		c := meta.FindStatusCondition(tj.Status.Conditions, condType)
		g.Expect(c).NotTo(gomega.BeNil(), "condition %s in %v", condType, tj.Status.Conditions)
		g.Expect(c.Status).To(gomega.Equal(status), "condition %s", condType)
		g.Expect(c.Reason).To(gomega.Equal(reason), "condition %s", condType)
	}).WithTimeout(20 * time.Second).Should(gomega.Succeed())
	return tj
}

// eventReasons lists the reasons of the events recorded for an object.
func (h *harness) eventReasons(g gomega.Gomega, ns, name string) []string {
	list := &eventsv1.EventList{}
	g.Expect(h.c.List(context.Background(), list, client.InNamespace(ns))).To(gomega.Succeed())
	var reasons []string
	for _, e := range list.Items {
		if e.Regarding.Name == name {
			reasons = append(reasons, e.Reason)
		}
	}
	return reasons
}

// setJobSetStatus plays the JobSet controller, which the test environment lacks.
func (h *harness) setJobSetStatus(t *testing.T, ns, name string, mutate func(*jobsetv1alpha2.JobSetStatus)) {
	t.Helper()
	gomega.NewWithT(t).Eventually(func() error {
		js := &jobsetv1alpha2.JobSet{}
		if err := h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, js); err != nil {
			return err
		}
		mutate(&js.Status)
		return h.c.Status().Update(context.Background(), js)
	}).WithTimeout(10 * time.Second).Should(gomega.Succeed())
}

// readCounter counts Gets through the reader it wraps, per namespace and
// Go type.
type readCounter struct {
	client.Reader
	mu   sync.Mutex
	gets map[string]int
}

func (r *readCounter) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.mu.Lock()
	r.gets[fmt.Sprintf("%s/%T", key.Namespace, obj)]++
	r.mu.Unlock()
	return r.Reader.Get(ctx, key, obj, opts...)
}

// count is how many objects like obj were read in namespace ns.
func (r *readCounter) count(ns string, obj client.Object) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gets[fmt.Sprintf("%s/%T", ns, obj)]
}
