//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/ray/dashboard"
)

// pointServiceClusters points the dashboard URL of each of the
// RayService's clusters whose head has an IP at that head (the manager runs
// outside the cluster: see pointDashboard), and returns the clusters'
// names by role.
func pointServiceClusters(g Gomega, ctx context.Context, svc *rayv1.RayService) (active, pending string) {
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(svc), svc)).To(Succeed())
	active, pending = svc.Status.ActiveServiceStatus.RayClusterName, svc.Status.PendingServiceStatus.RayClusterName
	for _, name := range []string{active, pending} {
		if name == "" {
			continue
		}
		rc := &rayv1.RayCluster{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: svc.Namespace, Name: name}, rc); err != nil {
			continue
		}
		if rc.Annotations[rayv1.AnnotationRayDashboardURL] != "" {
			continue
		}
		heads := listPods(g, ctx, svc.Namespace, map[string]string{rayv1.RayClusterLabelKey: name, rayv1.RayNodeTypeLabelKey: "head"})
		if len(heads) != 1 || heads[0].Status.PodIP == "" {
			continue
		}
		patch := client.MergeFrom(rc.DeepCopy())
		metav1.SetMetaDataAnnotation(&rc.ObjectMeta, rayv1.AnnotationRayDashboardURL, fmt.Sprintf("http://%s:8265", heads[0].Status.PodIP))
		g.Expect(k8s.Patch(ctx, rc, patch)).To(Succeed())
	}
	return active, pending
}

// readyServeEndpoints counts the ready Pods in the Serve Service's
// EndpointSlices (written by the real EndpointSlice controller), and which
// clusters they belong to.
func readyServeEndpoints(ctx context.Context, ns, service string) (int, map[string]bool, error) {
	slices := &discoveryv1.EndpointSliceList{}
	if err := k8s.List(ctx, slices, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: service}); err != nil {
		return 0, nil, err
	}
	pods := map[types.UID]string{}
	for _, s := range slices.Items {
		for _, ep := range s.Endpoints {
			if ptr.Deref(ep.Conditions.Ready, false) && ep.TargetRef != nil {
				pods[ep.TargetRef.UID] = ep.TargetRef.Name
			}
		}
	}
	clusters := map[string]bool{}
	for _, name := range pods {
		p := &corev1.Pod{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err == nil {
			clusters[p.Labels[rayv1.RayClusterLabelKey]] = true
		}
	}
	return len(pods), clusters, nil
}

// endpointWatch samples the Serve Service's ready endpoints every
// interval and keeps the longest stretch with none, after the first
// sample with some.
type endpointWatch struct {
	mu          sync.Mutex
	samples     int
	seen        bool
	zeroSince   time.Time
	longestZero time.Duration
	clusters    map[string]bool
}

func (w *endpointWatch) run(ctx context.Context, ns, service string, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		n, clusters, err := readyServeEndpoints(ctx, ns, service)
		now := time.Now()
		w.mu.Lock()
		if err == nil {
			w.samples++
			for c := range clusters {
				w.clusters[c] = true
			}
			switch {
			case n > 0:
				if w.seen && !w.zeroSince.IsZero() {
					w.longestZero = max(w.longestZero, now.Sub(w.zeroSince))
				}
				w.seen, w.zeroSince = true, time.Time{}
			case w.seen && w.zeroSince.IsZero():
				w.zeroSince = now
			}
		}
		w.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// result is the longest stretch without ready endpoints, an open one
// included, and the number of samples.
func (w *endpointWatch) result() (time.Duration, int, map[string]bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	longest := w.longestZero
	if !w.zeroSince.IsZero() {
		longest = max(longest, time.Since(w.zeroSince))
	}
	return longest, w.samples, w.clusters
}

var _ = Describe("A RayService on the real node", Label(labelRay, labelReal), func() {
	// The whole RayService path in real containers: the stand-in Ray image
	// runs the head's dashboard (the Serve REST API) and a Serve proxy on
	// head and worker. Gantry applies serveConfigV2 to the dashboard,
	// checks the head's proxy at its Pod IP for the ray.io/serve label, the
	// worker's readiness probe checks its proxy, and the real EndpointSlice
	// controller fills the Serve Service. A changed rayClusterConfig then
	// starts a second cluster; the spec samples the Serve Service's ready
	// endpoints every 50 ms from before the change until after the old
	// cluster is gone, and requires that there was never a moment without
	// one (the switch is a selector update once the new cluster serves).
	It("serves, upgrades to a new cluster with no time without ready Serve endpoints, and deletes the old one", func(ctx SpecContext) {
		requireRealNode(ctx)
		// KubeRay's Grafana panel of upgrading RayServices is checked
		// against a real Prometheus scraping the manager, where one can.
		prom, why := prometheusForManager(ctx)
		start := time.Now()
		ns := newNamespace(ctx, "rayservice-real")
		spec := realRayCluster(ns).Spec
		head := &spec.HeadGroupSpec.Template.Spec.Containers[0]
		head.Resources = smallResources("200m", "256Mi")
		head.Ports = append(head.Ports, corev1.ContainerPort{Name: "serve", ContainerPort: 8000})
		spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].Resources = smallResources("100m", "128Mi")
		svc := &rayv1.RayService{
			ObjectMeta: metav1.ObjectMeta{Name: "fruit", Namespace: ns},
			Spec: rayv1.RayServiceSpec{
				ServeConfigV2: `applications:
  - name: fruit_app
    import_path: fruit.deployment_graph
    route_prefix: /fruit
    deployments:
      - name: MangoStand
      - name: FruitMarket
`,
				RayClusterSpec:                 spec,
				RayClusterDeletionDelaySeconds: ptr.To[int32](5),
			},
		}
		createStrict(ctx, svc)

		var first string
		Eventually(ctx, func(g Gomega) {
			first, _ = pointServiceClusters(g, ctx, svc)
			g.Expect(first).NotTo(BeEmpty(), "status: %+v", svc.Status)
			g.Expect(meta.IsStatusConditionTrue(svc.Status.Conditions, string(rayv1.RayServiceReady))).To(BeTrue(), "conditions: %+v", svc.Status.Conditions)
			g.Expect(svc.Status.NumServeEndpoints).To(BeEquivalentTo(2), "head and worker serve")
		}).WithTimeout(4 * time.Minute).Should(Succeed())
		Expect(svc.Status.ServiceStatus).To(Equal(rayv1.Running))
		Expect(svc.Status.ActiveServiceStatus.Applications).To(HaveKeyWithValue("fruit_app", HaveField("Status", rayv1.ApplicationStatusRunning)))
		// The applications reached the head's dashboard.
		headPod := podOf(Default, ctx, ns, first, "head")
		Expect(headPod.Labels).To(HaveKeyWithValue(rayv1.RayClusterServingServiceLabelKey, "true"))
		d, err := dashboard.New(dashboard.Config{URL: fmt.Sprintf("http://%s:8265", headPod.Status.PodIP)})
		Expect(err).NotTo(HaveOccurred())
		details, err := d.ServeDetails(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(details.Applications).To(HaveKey("fruit_app"))

		watchCtx, stopWatch := context.WithCancel(ctx)
		watch := &endpointWatch{clusters: map[string]bool{}}
		watched := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(watched)
			watch.run(watchCtx, ns, "fruit-serve-svc", 50*time.Millisecond)
		}()
		Eventually(ctx, func() bool { _, n, _ := watch.result(); return n > 0 }).Should(BeTrue())

		update(ctx, svc, func(s *rayv1.RayService) {
			c := &s.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0]
			c.Env = append(c.Env, corev1.EnvVar{Name: "SERVE_VERSION", Value: "2"})
		})
		var second string
		Eventually(ctx, func(g Gomega) {
			active, pending := pointServiceClusters(g, ctx, svc)
			switch {
			case pending != "":
				second = pending
			case active != "" && active != first:
				second = active
			}
			g.Expect(second).NotTo(BeEmpty())
			g.Expect(active).To(Equal(second), "status: %+v", svc.Status)
			g.Expect(pending).To(BeEmpty())
			g.Expect(meta.IsStatusConditionTrue(svc.Status.Conditions, string(rayv1.UpgradeInProgress))).To(BeFalse())
			n, clusters, err := readyServeEndpoints(ctx, ns, "fruit-serve-svc")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(n).To(Equal(2))
			g.Expect(clusters).To(Equal(map[string]bool{second: true}))
		}).WithTimeout(4 * time.Minute).Should(Succeed())
		Expect(second).NotTo(Equal(first))
		for _, name := range []string{"fruit-head-svc", "fruit-serve-svc"} {
			s := &corev1.Service{}
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s)).To(Succeed())
			Expect(s.Spec.Selector).To(HaveKeyWithValue(rayv1.RayClusterLabelKey, second), name)
		}
		// rayClusterDeletionDelaySeconds: the old cluster goes after 5 s.
		Eventually(ctx, func(g Gomega) {
			err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: first}, &rayv1.RayCluster{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "cluster %s: %v", first, err)
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		stopWatch()
		<-watched

		longest, samples, clusters := watch.result()
		GinkgoWriter.Printf("Serve endpoints sampled %d times during the upgrade; longest time without a ready one: %s\n", samples, longest)
		Expect(clusters).To(HaveKey(first), "the samples saw the old cluster serve")
		Expect(clusters).To(HaveKey(second), "the samples saw the new cluster serve")
		Expect(longest).To(BeZero(), "the Serve Service had no ready endpoint for %s during the upgrade", longest)

		if prom == nil {
			GinkgoWriter.Printf("KubeRay's UpgradeInProgress panel not checked: %s\n", why)
			return
		}
		panels := kubeRayPanels("kuberay_service_condition_upgrade_in_progress")
		Expect(panels).To(HaveLen(1))
		prom.expectPanelsHaveData(ctx, panels, ns, start)
	})
})
