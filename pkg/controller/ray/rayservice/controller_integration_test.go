package rayservice_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/cmd/manager/app"
	"github.com/gantry-dev/gantry/pkg/controller/ray"
	"github.com/gantry-dev/gantry/pkg/framework/builder"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
	"github.com/gantry-dev/gantry/pkg/ray/dashboard"
	"github.com/gantry-dev/gantry/pkg/ray/dashboard/standin"
	"github.com/gantry-dev/gantry/test/testenv"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

var (
	k8s client.Client
	// dashURL is the stand-in dashboard every test's clusters point at
	// (gantry.dev/ray-dashboard-url); proxyURL a Serve proxy whose health
	// check answers proxyHealthy.
	dashURL, proxyURL string
	dash              *dashboard.Client
	proxyHealthy      atomic.Bool
)

// TestMain runs one API server, one stand-in Ray dashboard, a stand-in
// Serve proxy and one Gantry manager with the Ray family under the real
// manager wiring. There is no kubelet and no EndpointSlice controller:
// tests move Pods to Ready and write the Serve Service's EndpointSlice.
func TestMain(m *testing.M) {
	env, err := testenv.StartE(testenv.Options{AddToScheme: ray.Integration().AddToScheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	jobs := standin.NewJobs("127.0.0.1:6379", nil)
	srv := httptest.NewServer(standin.NewDashboard(jobs, "", "").Handler())
	dashURL = srv.URL
	if dash, err = dashboard.New(dashboard.Config{URL: srv.URL}); err != nil {
		panic(err)
	}
	proxyHealthy.Store(true)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != rayv1.RayServeProxyHealthPath || !proxyHealthy.Load() {
			http.Error(w, "unhealthy", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("success"))
	}))
	proxyURL = proxy.URL
	reg := &workload.Registry{}
	reg.MustRegister(ray.Integration())
	opts, err := app.ParseFlags([]string{"--metrics-bind-address=0", "--health-probe-bind-address=0", "--webhook-port=0",
		"--feature-gates=RayDashboardURLOverride=true"}, reg)
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx, env.Config, opts, reg) }()
	k8s = env.Client
	code := m.Run()
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
	}
	srv.Close()
	proxy.Close()
	jobs.Shutdown()
	_ = env.Stop()
	os.Exit(code)
}

const timeout = 30 * time.Second

const serveConfig = `applications:
  - name: fruit_app
    import_path: fruit.deployment_graph
    route_prefix: /fruit
    deployments:
      - name: MangoStand
      - name: FruitMarket
  - name: math_app
    import_path: conditional_dag.serve_dag
    route_prefix: /calc
    deployments:
      - name: Adder
`

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "rs-"}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// makeService is a RayService with one worker group whose clusters'
// dashboard and Serve proxy are the stand-ins.
func makeService(name, ns string) *rayv1.RayService {
	spec := raytesting.MakeRayCluster("x", ns).
		HeadPort("gcs-server", 6379).HeadPort("dashboard", 8265).HeadPort("client", 10001).HeadPort("serve", 8000).
		WorkerGroup("small", 1).Obj().Spec
	return &rayv1.RayService{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: map[string]string{
			rayv1.AnnotationRayDashboardURL:  dashURL,
			rayv1.AnnotationRayServeProxyURL: proxyURL,
		}},
		Spec: rayv1.RayServiceSpec{ServeConfigV2: serveConfig, RayClusterSpec: spec, RayClusterDeletionDelaySeconds: ptr.To[int32](0)},
	}
}

func get(g Gomega, svc *rayv1.RayService) *rayv1.RayService {
	out := &rayv1.RayService{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(svc), out)).To(Succeed())
	return out
}

// readyPods marks the Pods of cluster Running and Ready, as a kubelet
// would, and waits for the cluster to see its head ready.
func readyPods(t *testing.T, ns, cluster string) {
	t.Helper()
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		var pods corev1.PodList
		g.Expect(k8s.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels{rayv1.RayClusterLabelKey: cluster})).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(2))
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Status.Phase == corev1.PodRunning {
				continue
			}
			p.Status.Phase = corev1.PodRunning
			p.Status.PodIP = fmt.Sprintf("10.0.0.%d", i+2)
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
			g.Expect(k8s.Status().Update(context.Background(), p)).To(Succeed())
		}
	}, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) {
		rc := &rayv1.RayCluster{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: cluster}, rc)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(rc.Status.Conditions, string(rayv1.HeadPodReady))).To(BeTrue())
	}, timeout).Should(Succeed())
}

// serveEndpoints writes the Serve Service's EndpointSlice with the ready
// Pods of cluster that carry ray.io/serve=true, as the EndpointSlice
// controller would; it returns how many.
func serveEndpoints(t *testing.T, svc *rayv1.RayService, cluster string) int {
	t.Helper()
	ctx := context.Background()
	var pods corev1.PodList
	if err := k8s.List(ctx, &pods, client.InNamespace(svc.Namespace), client.MatchingLabels{
		rayv1.RayClusterLabelKey: cluster, rayv1.RayClusterServingServiceLabelKey: "true",
	}); err != nil {
		t.Fatal(err)
	}
	serveName := svc.Name + "-serve-svc"
	if svc.Spec.ServeService != nil && svc.Spec.ServeService.Name != "" {
		serveName = svc.Spec.ServeService.Name
	}
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: serveName + "-abc", Namespace: svc.Namespace, Labels: map[string]string{
		discoveryv1.LabelServiceName: serveName,
		builder.LabelManagedBy:       builder.ManagedByGantry,
	}}, AddressType: discoveryv1.AddressTypeIPv4}
	for i := range pods.Items {
		p := &pods.Items[i]
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{fmt.Sprintf("10.0.1.%d", i+2)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Name: p.Name, Namespace: p.Namespace, UID: p.UID},
		})
	}
	_ = k8s.Delete(ctx, slice)
	NewWithT(t).Eventually(func() error { return k8s.Create(ctx, slice.DeepCopy()) }, timeout).Should(Succeed())
	return len(pods.Items)
}

func service(g Gomega, ns, name string) *corev1.Service {
	svc := &corev1.Service{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, svc)).To(Succeed())
	return svc
}

func clusterGone(g Gomega, ns, name string) bool {
	rc := &rayv1.RayCluster{}
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, rc)
	if apierrors.IsNotFound(err) {
		return true
	}
	g.Expect(err).NotTo(HaveOccurred())
	return rc.DeletionTimestamp != nil
}

func eventReasons(g Gomega, svc *rayv1.RayService) []string {
	var list eventsv1.EventList
	g.Expect(k8s.List(context.Background(), &list, client.InNamespace(svc.Namespace))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Name == svc.Name && e.Regarding.Kind == rayv1.RayServiceKind {
			out = append(out, e.Reason)
		}
	}
	return out
}

// eventActions lists the RayService's events as "<reason> <action>".
func eventActions(g Gomega, svc *rayv1.RayService) []string {
	var list eventsv1.EventList
	g.Expect(k8s.List(context.Background(), &list, client.InNamespace(svc.Namespace))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Name == svc.Name && e.Regarding.Kind == rayv1.RayServiceKind {
			out = append(out, e.Reason+" "+e.Action)
		}
	}
	return out
}

// startService creates svc and brings its first cluster to serving: it
// returns the RayService once Ready, and the cluster's name.
func startService(t *testing.T, svc *rayv1.RayService) (*rayv1.RayService, string) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(k8s.Create(context.Background(), svc)).To(Succeed())
	var cluster string
	g.Eventually(func(g Gomega) {
		cluster = get(g, svc).Status.PendingServiceStatus.RayClusterName
		g.Expect(cluster).To(HavePrefix(svc.Name + "-"))
	}, timeout).Should(Succeed())
	readyPods(t, svc.Namespace, cluster)
	g.Eventually(func(g Gomega) {
		got := get(g, svc)
		g.Expect(got.Status.ActiveServiceStatus.RayClusterName).To(Equal(cluster), "status %+v", got.Status)
	}, timeout).Should(Succeed())
	// The head's Serve proxy is healthy: both Pods are in the Serve
	// Service's selection.
	g.Expect(serveEndpoints(t, svc, cluster)).To(Equal(2))
	var out *rayv1.RayService
	g.Eventually(func(g Gomega) {
		out = get(g, svc)
		g.Expect(meta.IsStatusConditionTrue(out.Status.Conditions, string(rayv1.RayServiceReady))).To(BeTrue(), "conditions %+v", out.Status.Conditions)
	}, timeout).Should(Succeed())
	return out, cluster
}

func TestRayServiceServesOnItsFirstCluster(t *testing.T) {
	ns := newNamespace(t)
	svc, cluster := startService(t, makeService("fruit", ns))
	g := NewWithT(t)
	st := svc.Status
	g.Expect(st.ServiceStatus).To(Equal(rayv1.Running))
	g.Expect(st.NumServeEndpoints).To(BeEquivalentTo(2))
	g.Expect(st.PendingServiceStatus.RayClusterName).To(BeEmpty())
	g.Expect(st.ObservedGeneration).To(Equal(svc.Generation))
	g.Expect(st.LastUpdateTime).NotTo(BeNil())
	g.Expect(meta.FindStatusCondition(st.Conditions, string(rayv1.UpgradeInProgress))).To(HaveField("Reason", string(rayv1.NoPendingCluster)))
	apps := st.ActiveServiceStatus.Applications
	g.Expect(apps).To(HaveKey("fruit_app"))
	g.Expect(apps).To(HaveKey("math_app"))
	g.Expect(apps["fruit_app"].Status).To(Equal(rayv1.ApplicationStatusRunning))
	g.Expect(apps["fruit_app"].Deployments).To(HaveKeyWithValue("MangoStand", rayv1.ServeDeploymentStatus{Status: rayv1.DeploymentStatusHealthy}))
	g.Expect(svc.Finalizers).To(ContainElement(rayv1.RayServiceFinalizer))

	rc := &rayv1.RayCluster{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: cluster}, rc)).To(Succeed())
	g.Expect(metav1.IsControlledBy(rc, svc)).To(BeTrue())
	g.Expect(rc.Labels).To(HaveKeyWithValue(rayv1.RayOriginatedFromCRNameLabelKey, "fruit"))
	g.Expect(rc.Labels).To(HaveKeyWithValue(rayv1.RayOriginatedFromCRDLabelKey, "RayService"))
	g.Expect(rc.Annotations).To(HaveKey(rayv1.HashWithoutReplicasAndWorkersToDeleteKey))
	g.Expect(rc.Annotations).To(HaveKeyWithValue(rayv1.NumWorkerGroupsKey, "1"))

	// The Serve applications reached the dashboard.
	details, err := dash.ServeDetails(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(details.Applications).To(HaveKey("fruit_app"))

	head := service(g, ns, "fruit-head-svc")
	g.Expect(head.Spec.Selector).To(HaveKeyWithValue(rayv1.RayClusterLabelKey, cluster))
	g.Expect(metav1.IsControlledBy(head, svc)).To(BeTrue())
	serve := service(g, ns, "fruit-serve-svc")
	g.Expect(serve.Spec.Selector).To(Equal(map[string]string{rayv1.RayClusterLabelKey: cluster, rayv1.RayClusterServingServiceLabelKey: "true"}))
	g.Expect(serve.Spec.Ports).To(ConsistOf(HaveField("Name", "serve")))
	g.Expect(serve.Labels).To(HaveKeyWithValue(rayv1.RayClusterServingServiceLabelKey, "fruit-serve"))

	// The head joins the Serve Service once its proxy answers.
	var pods corev1.PodList
	g.Expect(k8s.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels{rayv1.RayClusterLabelKey: cluster, rayv1.RayNodeTypeLabelKey: "head"})).To(Succeed())
	g.Expect(pods.Items).To(HaveLen(1))
	g.Expect(pods.Items[0].Labels).To(HaveKeyWithValue(rayv1.RayClusterServingServiceLabelKey, "true"))
	g.Eventually(func(g Gomega) {
		g.Expect(eventReasons(g, svc)).To(ContainElements(string(rayv1.CreatedRayCluster), string(rayv1.UpdatedServeApplications), string(rayv1.CreatedService)))
		// KubeRay's action for each (rayservice_controller.go:1486, :2056, :1979, :2115).
		g.Expect(eventActions(g, svc)).To(ContainElements("CreatedRayCluster Create", "UpdatedServeApplications Update",
			"CreatedService Create", "UpdatedHeadPodServeLabel Update"))
	}, timeout).Should(Succeed())
}

func TestRayServiceUpgradesToANewClusterAndSwitchesTheServices(t *testing.T) {
	ns := newNamespace(t)
	svc, old := startService(t, makeService("upg", ns))
	g := NewWithT(t)

	// A changed Ray container: a new cluster (NewCluster is the default).
	g.Eventually(func(g Gomega) {
		cur := get(g, svc)
		cur.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "VERSION", Value: "2"}}
		g.Expect(k8s.Update(context.Background(), cur)).To(Succeed())
	}, timeout).Should(Succeed())
	var next string
	g.Eventually(func(g Gomega) {
		cur := get(g, svc)
		next = cur.Status.PendingServiceStatus.RayClusterName
		g.Expect(next).NotTo(BeEmpty())
		g.Expect(next).NotTo(Equal(old))
		g.Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, string(rayv1.UpgradeInProgress))).To(BeTrue())
	}, timeout).Should(Succeed())
	// Until the new cluster serves, traffic stays on the old one.
	g.Consistently(func(g Gomega) {
		g.Expect(service(g, ns, "upg-serve-svc").Spec.Selector).To(HaveKeyWithValue(rayv1.RayClusterLabelKey, old))
		g.Expect(meta.IsStatusConditionTrue(get(g, svc).Status.Conditions, string(rayv1.RayServiceReady))).To(BeTrue())
	}, 2*time.Second).Should(Succeed())

	readyPods(t, ns, next)
	g.Eventually(func(g Gomega) {
		g.Expect(service(g, ns, "upg-serve-svc").Spec.Selector).To(HaveKeyWithValue(rayv1.RayClusterLabelKey, next))
		g.Expect(service(g, ns, "upg-head-svc").Spec.Selector).To(HaveKeyWithValue(rayv1.RayClusterLabelKey, next))
		cur := get(g, svc)
		g.Expect(cur.Status.ActiveServiceStatus.RayClusterName).To(Equal(next))
		g.Expect(cur.Status.PendingServiceStatus.RayClusterName).To(BeEmpty())
		g.Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, string(rayv1.UpgradeInProgress))).To(BeFalse())
	}, timeout).Should(Succeed())
	// rayClusterDeletionDelaySeconds is 0: the old cluster goes.
	g.Eventually(func(g Gomega) { g.Expect(clusterGone(g, ns, old)).To(BeTrue()) }, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(eventActions(g, svc)).To(ContainElements("UpdatedService Update", "DeletedRayCluster Delete"))
	}, timeout).Should(Succeed())
}

func TestRayServiceUpdatesInPlaceWhenOnlyWorkerGroupsAreAdded(t *testing.T) {
	ns := newNamespace(t)
	svc, cluster := startService(t, makeService("grow", ns))
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		cur := get(g, svc)
		extra := raytesting.MakeRayCluster("x", ns).WorkerGroup("big", 2).Obj().Spec.WorkerGroupSpecs[0]
		cur.Spec.RayClusterSpec.WorkerGroupSpecs = append(cur.Spec.RayClusterSpec.WorkerGroupSpecs, extra)
		g.Expect(k8s.Update(context.Background(), cur)).To(Succeed())
	}, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) {
		rc := &rayv1.RayCluster{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: cluster}, rc)).To(Succeed())
		g.Expect(rc.Spec.WorkerGroupSpecs).To(HaveLen(2))
		g.Expect(rc.Annotations).To(HaveKeyWithValue(rayv1.NumWorkerGroupsKey, "2"))
	}, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(get(g, svc).Status.PendingServiceStatus.RayClusterName).To(BeEmpty())
	}, 2*time.Second).Should(Succeed())
}

func TestRayServiceUpgradeStrategyNoneKeepsTheCluster(t *testing.T) {
	ns := newNamespace(t)
	rs := makeService("none", ns)
	rs.Spec.UpgradeStrategy = &rayv1.RayServiceUpgradeStrategy{Type: ptr.To(rayv1.RayServiceUpgradeNone)}
	svc, cluster := startService(t, rs)
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		cur := get(g, svc)
		cur.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "VERSION", Value: "2"}}
		g.Expect(k8s.Update(context.Background(), cur)).To(Succeed())
	}, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) {
		cur := get(g, svc)
		g.Expect(cur.Status.PendingServiceStatus.RayClusterName).To(BeEmpty())
		g.Expect(cur.Status.ActiveServiceStatus.RayClusterName).To(Equal(cluster))
	}, 3*time.Second).Should(Succeed())
}

func TestRayServiceHeadLeavesTheServeServiceWhenItsProxyFailsOrIsExcluded(t *testing.T) {
	ns := newNamespace(t)
	rs := makeService("excl", ns)
	rs.Spec.ExcludeHeadPodFromServeSvc = true
	g := NewWithT(t)
	g.Expect(k8s.Create(context.Background(), rs)).To(Succeed())
	var cluster string
	g.Eventually(func(g Gomega) {
		cluster = get(g, rs).Status.PendingServiceStatus.RayClusterName
		g.Expect(cluster).NotTo(BeEmpty())
	}, timeout).Should(Succeed())
	readyPods(t, ns, cluster)
	g.Eventually(func(g Gomega) {
		var pods corev1.PodList
		g.Expect(k8s.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels{rayv1.RayClusterLabelKey: cluster})).To(Succeed())
		for _, p := range pods.Items {
			want := "true"
			if p.Labels[rayv1.RayNodeTypeLabelKey] == "head" {
				want = "false"
			}
			g.Expect(p.Labels).To(HaveKeyWithValue(rayv1.RayClusterServingServiceLabelKey, want), "Pod %s", p.Name)
		}
		g.Expect(get(g, rs).Status.ActiveServiceStatus.RayClusterName).To(Equal(cluster))
	}, timeout).Should(Succeed())
	// Only the worker is selected.
	g.Expect(serveEndpoints(t, rs, cluster)).To(Equal(1))
	g.Eventually(func(g Gomega) { g.Expect(get(g, rs).Status.NumServeEndpoints).To(BeEquivalentTo(1)) }, timeout).Should(Succeed())
}

func TestRayServiceDeletionDeletesItsClusters(t *testing.T) {
	ns := newNamespace(t)
	svc, cluster := startService(t, makeService("bye", ns))
	g := NewWithT(t)
	g.Expect(k8s.Delete(context.Background(), svc)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(clusterGone(g, ns, cluster)).To(BeTrue())
	}, timeout).Should(Succeed())
	// The cluster has no finalizer of its own, so it goes at once (envtest
	// has no garbage collector for its Pods, which do not matter here); the
	// RayService's finalizer is then removed.
	g.Eventually(func(g Gomega) {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(svc), &rayv1.RayService{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "RayService still there: %v", err)
	}, timeout).Should(Succeed())
}

// suspend sets spec.suspend and waits for the RayService to be
// Suspended: no active cluster, its cluster and its Serve Service
// (serveName) gone.
func suspend(t *testing.T, svc *rayv1.RayService, cluster, serveName string) {
	t.Helper()
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		cur := get(g, svc)
		cur.Spec.Suspend = true
		g.Expect(k8s.Update(context.Background(), cur)).To(Succeed())
	}, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) {
		cur := get(g, svc)
		g.Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, string(rayv1.RayServiceSuspended))).To(BeTrue(), "conditions %+v", cur.Status.Conditions)
		g.Expect(cur.Status.ActiveServiceStatus.RayClusterName).To(BeEmpty())
		g.Expect(clusterGone(g, svc.Namespace, cluster)).To(BeTrue())
		err := k8s.Get(context.Background(), client.ObjectKey{Namespace: svc.Namespace, Name: serveName}, &corev1.Service{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Serve Service %s: %v", serveName, err)
	}, timeout).Should(Succeed())
}

func TestRayServiceSuspendDeletesWhatItOwnsAndResumes(t *testing.T) {
	ns := newNamespace(t)
	svc, cluster := startService(t, makeService("nap", ns))
	suspend(t, svc, cluster, "nap-serve-svc")

	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		cur := get(g, svc)
		cur.Spec.Suspend = false
		g.Expect(k8s.Update(context.Background(), cur)).To(Succeed())
	}, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) {
		cur := get(g, svc)
		g.Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, string(rayv1.RayServiceSuspended))).To(BeFalse())
		g.Expect(cur.Status.PendingServiceStatus.RayClusterName).NotTo(BeEmpty())
		g.Expect(cur.Status.PendingServiceStatus.RayClusterName).NotTo(Equal(cluster))
	}, timeout).Should(Succeed())
}

// spec.serveService names the Serve Service (KubeRay's
// ray-service.custom-serve-service.yaml): its endpoints make the
// RayService Ready, and suspending deletes it.
func TestRayServiceWithACustomServeServiceNameServesAndSuspends(t *testing.T) {
	ns := newNamespace(t)
	in := makeService("named", ns)
	in.Spec.ServeService = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "custom-serve"}}
	svc, cluster := startService(t, in)
	g := NewWithT(t)
	g.Expect(svc.Status.NumServeEndpoints).To(BeEquivalentTo(2))
	serve := service(g, ns, "custom-serve")
	g.Expect(serve.Spec.Selector).To(HaveKeyWithValue(rayv1.RayClusterLabelKey, cluster))
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "named-serve-svc"}, &corev1.Service{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no Service under the default name: %v", err)

	suspend(t, svc, cluster, "custom-serve")
}

// invalidate gives the RayService a spec its reconcile refuses and no
// webhook is there to refuse first: a head Service name
// (rayClusterConfig's, which KubeRay's ValidateRayServiceSpec forbids).
func invalidate(t *testing.T, svc *rayv1.RayService) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		cur := get(g, svc)
		cur.Spec.RayClusterSpec.HeadGroupSpec.HeadService = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "mine"}}
		g.Expect(k8s.Update(context.Background(), cur)).To(Succeed())
	}, timeout).Should(Succeed())
}

// validationFailed waits for Ready=False (ValidationFailed) and KubeRay's
// Warning.
func validationFailed(t *testing.T, svc *rayv1.RayService) *rayv1.RayService {
	t.Helper()
	var out *rayv1.RayService
	NewWithT(t).Eventually(func(g Gomega) {
		out = get(g, svc)
		ready := meta.FindStatusCondition(out.Status.Conditions, string(rayv1.RayServiceReady))
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(string(rayv1.RayServiceValidationFailed)))
		g.Expect(ready.Message).To(ContainSubstring("headService"))
		g.Expect(eventReasons(g, svc)).To(ContainElement(string(rayv1.InvalidRayServiceSpec)))
	}, timeout).Should(Succeed())
	return out
}

// With the webhook off a RayService can be made invalid in the middle of
// an upgrade. KubeRay v1.7.0 (rayservice_controller.go:126-170) cleans up
// the clusters it replaced, then handles the deletion and the finalizer,
// and only then validates: the replaced cluster still goes after its
// delay, and the invalid RayService can still be deleted.
func TestRayServiceWithAnInvalidSpecStillDeletesTheClusterItReplaced(t *testing.T) {
	ns := newNamespace(t)
	in := makeService("broken", ns)
	in.Spec.RayClusterDeletionDelaySeconds = ptr.To[int32](8)
	svc, old := startService(t, in)
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		cur := get(g, svc)
		cur.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "VERSION", Value: "2"}}
		g.Expect(k8s.Update(context.Background(), cur)).To(Succeed())
	}, timeout).Should(Succeed())
	var next string
	g.Eventually(func(g Gomega) {
		next = get(g, svc).Status.PendingServiceStatus.RayClusterName
		g.Expect(next).NotTo(BeEmpty())
		g.Expect(next).NotTo(Equal(old))
	}, timeout).Should(Succeed())
	readyPods(t, ns, next)
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, svc).Status.ActiveServiceStatus.RayClusterName).To(Equal(next))
	}, timeout).Should(Succeed())
	// The old cluster is replaced, to be deleted 8 s from now: the spec
	// turns invalid before that.
	g.Expect(clusterGone(g, ns, old)).To(BeFalse(), "the old cluster went before its deletion delay")
	invalidate(t, svc)
	validationFailed(t, svc)
	g.Eventually(func(g Gomega) { g.Expect(clusterGone(g, ns, old)).To(BeTrue(), "the replaced cluster") }, timeout).Should(Succeed())
	g.Expect(clusterGone(g, ns, next)).To(BeFalse(), "the active cluster stays")
	g.Eventually(func(g Gomega) {
		g.Expect(eventActions(g, svc)).To(ContainElements("DeletedRayCluster Delete", "InvalidRayServiceSpec Validate"))
	}, timeout).Should(Succeed())

	// Deleting the invalid RayService deletes its cluster, then lets go.
	g.Expect(k8s.Delete(context.Background(), svc)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(clusterGone(g, ns, next)).To(BeTrue())
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(svc), &rayv1.RayService{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "RayService still there: %v", err)
	}, timeout).Should(Succeed())
}

// A RayService invalid from the start gets its finalizer before it is
// validated, as in KubeRay (rayservice_controller.go:146-154, then :157),
// creates nothing, and is deleted.
func TestRayServiceInvalidFromTheStartGetsItsFinalizerAndCreatesNothing(t *testing.T) {
	ns := newNamespace(t)
	in := makeService("bad", ns)
	in.Spec.RayClusterSpec.HeadGroupSpec.HeadService = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "mine"}}
	g := NewWithT(t)
	g.Expect(k8s.Create(context.Background(), in)).To(Succeed())
	failed := validationFailed(t, in)
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, in).Finalizers).To(ContainElement(rayv1.RayServiceFinalizer))
	}, timeout).Should(Succeed())
	g.Expect(failed.Status.PendingServiceStatus.RayClusterName).To(BeEmpty())
	var clusters rayv1.RayClusterList
	g.Expect(k8s.List(context.Background(), &clusters, client.InNamespace(ns))).To(Succeed())
	g.Expect(clusters.Items).To(BeEmpty())
	g.Eventually(func(g Gomega) {
		g.Expect(eventActions(g, in)).To(ContainElement("InvalidRayServiceSpec Validate"))
	}, timeout).Should(Succeed())

	g.Expect(k8s.Delete(context.Background(), in)).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(in), &rayv1.RayService{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "RayService still there: %v", err)
	}, timeout).Should(Succeed())
}

// A RayService KubeRay was serving when Gantry took over: its Serve
// Service's EndpointSlices carry no managed-by label yet (the EndpointSlice
// controller copies it from the Service once Gantry labelled that), so
// Gantry's cache holds none. The RayService stays Ready meanwhile.
func TestRayServiceStaysReadyWhileItsEndpointSlicesAreNotCached(t *testing.T) {
	ns := newNamespace(t)
	svc, _ := startService(t, makeService("moved", ns))
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		var list discoveryv1.EndpointSliceList
		g.Expect(k8s.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
		g.Expect(list.Items).To(HaveLen(1))
		sl := &list.Items[0]
		delete(sl.Labels, builder.LabelManagedBy)
		g.Expect(k8s.Update(context.Background(), sl)).To(Succeed())
	}, timeout).Should(Succeed())
	// A reconcile after the cache lost the slice: any change of the spec's
	// deletion delay reaches calculateStatus without a new cluster.
	g.Eventually(func(g Gomega) {
		cur := get(g, svc)
		cur.Spec.RayClusterDeletionDelaySeconds = ptr.To[int32](1)
		g.Expect(k8s.Update(context.Background(), cur)).To(Succeed())
	}, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) {
		cur := get(g, svc)
		g.Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, string(rayv1.RayServiceReady))).To(BeTrue(), "conditions %+v", cur.Status.Conditions)
		g.Expect(cur.Status.NumServeEndpoints).To(BeEquivalentTo(2))
	}, 5*time.Second).Should(Succeed())
}

// A Service of the RayService's name that the user made is never taken
// over (KubeRay updates it): the RayService reports it and waits.
func TestRayServiceLeavesAUsersServiceOfItsNameAlone(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	user := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "mine-serve-svc", Namespace: ns, Labels: map[string]string{"owner": "user"}},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "mine"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}
	g := NewWithT(t)
	g.Expect(k8s.Create(ctx, user)).To(Succeed())
	rs := makeService("mine", ns)
	g.Expect(k8s.Create(ctx, rs)).To(Succeed())
	var cluster string
	g.Eventually(func(g Gomega) {
		cluster = get(g, rs).Status.PendingServiceStatus.RayClusterName
		g.Expect(cluster).NotTo(BeEmpty())
	}, timeout).Should(Succeed())
	readyPods(t, ns, cluster)
	g.Eventually(func(g Gomega) {
		g.Expect(eventReasons(g, rs)).To(ContainElement(string(rayv1.FailedToUpdateService)))
	}, timeout).Should(Succeed())
	got := &corev1.Service{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(user), got)).To(Succeed())
	g.Expect(got.Spec.Selector).To(Equal(map[string]string{"app": "mine"}))
	g.Expect(got.OwnerReferences).To(BeEmpty())
	g.Expect(get(g, rs).Status.ActiveServiceStatus.RayClusterName).To(BeEmpty())
}

// A changed serveConfigV2 alone is applied to the running cluster: no new
// cluster, the new application reported.
func TestRayServiceAppliesAChangedServeConfigToTheRunningCluster(t *testing.T) {
	ns := newNamespace(t)
	svc, cluster := startService(t, makeService("cfg", ns))
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		cur := get(g, svc)
		cur.Spec.ServeConfigV2 = serveConfig + `  - name: veggie_app
    import_path: veggie.app
    route_prefix: /veggie
    deployments:
      - name: Carrot
`
		g.Expect(k8s.Update(context.Background(), cur)).To(Succeed())
	}, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) {
		cur := get(g, svc)
		g.Expect(cur.Status.ActiveServiceStatus.Applications).To(HaveKey("veggie_app"))
		g.Expect(cur.Status.ActiveServiceStatus.RayClusterName).To(Equal(cluster))
		g.Expect(cur.Status.PendingServiceStatus.RayClusterName).To(BeEmpty())
	}, timeout).Should(Succeed())
	details, err := dash.ServeDetails(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(details.Applications).To(HaveKey("veggie_app"))
}
