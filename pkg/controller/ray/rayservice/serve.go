package rayservice

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/dashboards"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	"github.com/gantry-dev/gantry/pkg/ray/dashboard"
)

// reconcileServe applies the Serve config to cluster when it may differ
// from the one running there, and reads the applications' status. ready
// means every application runs (and there is at least one): the cluster
// may take traffic.
func (r *Reconciler) reconcileServe(ctx context.Context, s *scope, cluster *rayv1.RayCluster) (bool, map[string]rayv1.AppStatus, error) {
	svc := s.Object
	if !meta.IsStatusConditionTrue(cluster.Status.Conditions, string(rayv1.HeadPodReady)) {
		// The dashboard is not up yet; nothing to ask it.
		return false, nil, nil
	}
	dash, err := r.dashboardOf(ctx, cluster)
	if err != nil {
		return false, nil, err
	}
	details, err := dash.ServeDetails(ctx)
	if err != nil {
		return false, nil, fmt.Errorf("failed to get Serve application statuses from the dashboard of RayCluster %s/%s: %w", cluster.Namespace, cluster.Name, err)
	}
	ready := len(details.Applications) > 0
	apps := make(map[string]rayv1.AppStatus, len(details.Applications))
	for name, app := range details.Applications {
		if name == "" {
			name = rayv1.DefaultServeAppName
		}
		st := rayv1.AppStatus{Status: app.Status, Message: app.Message, Deployments: make(map[string]rayv1.ServeDeploymentStatus, len(app.Deployments))}
		if app.Status != rayv1.ApplicationStatusRunning {
			ready = false
		}
		for dname, d := range app.Deployments {
			st.Deployments[dname] = rayv1.ServeDeploymentStatus{Status: d.Status, Message: d.Message}
		}
		apps[name] = st
	}

	cached := r.serveConfigs.get(keyOf(svc), cluster.Name)
	// Apply when nothing was applied by this manager, when the cluster runs
	// no application (its head restarted without GCS fault tolerance), or
	// when the config changed.
	if cached != "" && len(apps) > 0 && cached == svc.Spec.ServeConfigV2 {
		return ready, apps, nil
	}
	config, err := yaml.YAMLToJSON([]byte(svc.Spec.ServeConfigV2))
	if err == nil && string(config) == "null" {
		config = []byte("{}")
	}
	if err == nil {
		err = dash.UpdateServeApplications(ctx, config)
	}
	if err != nil {
		r.recorder.Warning(svc, string(rayv1.FailedToUpdateServeApplications), "Failed to update serve applications to the RayCluster %s/%s: %v", cluster.Namespace, cluster.Name, err)
		return false, apps, err
	}
	r.serveConfigs.set(keyOf(svc), cluster.Name, svc.Spec.ServeConfigV2)
	s.Events.Add(string(rayv1.UpdatedServeApplications), "Updated serve applications to the RayCluster %s/%s", cluster.Namespace, cluster.Name)
	return ready, apps, nil
}

// dashboardOf is the client of cluster's dashboard through its head
// Service, as the RayJob controller reaches it.
func (r *Reconciler) dashboardOf(ctx context.Context, cluster *rayv1.RayCluster) (*dashboard.Client, error) {
	name := cluster.Status.Head.ServiceName
	if name == "" {
		name = podspec.HeadServiceName(cluster)
	}
	head := &corev1.Service{}
	if err := r.client.Get(ctx, types.NamespacedName{Namespace: cluster.Namespace, Name: name}, head); err != nil {
		return nil, fmt.Errorf("reading the head Service of RayCluster %s/%s: %w", cluster.Namespace, cluster.Name, err)
	}
	address, err := dashboards.Address(head, r.cfg.Build.ClusterDomain)
	if err != nil {
		return nil, err
	}
	return r.dashboards.For(ctx, cluster, address)
}

// updateHeadServeLabel sets the head Pod's ray.io/serve label: "true"
// when its Serve proxy answers its health check, "false" when it does not
// or spec.excludeHeadPodFromServeSvc is set. Workers keep "true" (their
// readiness probe checks the proxy). The Serve Service selects on it.
func (r *Reconciler) updateHeadServeLabel(ctx context.Context, s *scope, cluster *rayv1.RayCluster) error {
	if cluster == nil {
		return nil
	}
	svc := s.Object
	pods := &corev1.PodList{}
	if err := r.client.List(ctx, pods, client.InNamespace(cluster.Namespace), client.MatchingLabels{
		rayv1.RayClusterLabelKey:  cluster.Name,
		rayv1.RayNodeTypeLabelKey: string(rayv1.HeadNode),
	}); err != nil {
		return err
	}
	if len(pods.Items) == 0 {
		// The RayCluster controller has not created it yet.
		return nil
	}
	head := &pods.Items[0]
	want := rayv1.EnableRayClusterServingServiceFalse
	if !svc.Spec.ExcludeHeadPodFromServeSvc {
		want = strconv.FormatBool(r.proxyHealthy(ctx, cluster, head))
	}
	if head.Labels[rayv1.RayClusterServingServiceLabelKey] == want {
		return nil
	}
	patch := client.MergeFrom(head.DeepCopy())
	if head.Labels == nil {
		head.Labels = map[string]string{}
	}
	head.Labels[rayv1.RayClusterServingServiceLabelKey] = want
	if err := r.client.Patch(ctx, head, patch); err != nil {
		r.recorder.Warning(svc, string(rayv1.FailedToUpdateHeadPodServeLabel), "Failed to update the serve label to %q for the Head Pod %s/%s: %v", want, head.Namespace, head.Name, err)
		return err
	}
	s.Events.Add(string(rayv1.UpdatedHeadPodServeLabel), "Updated the serve label to %q for the Head Pod %s/%s", want, head.Namespace, head.Name)
	return nil
}

// proxyHealthy asks the head's Serve proxy for /-/healthz on the serving
// port: at the Pod's IP, through the API server's pods/proxy
// (--use-kubernetes-proxy), or at the cluster's gantry.dev/ray-serve-proxy-url
// (RayDashboardURLOverride).
func (r *Reconciler) proxyHealthy(ctx context.Context, cluster *rayv1.RayCluster, head *corev1.Pod) bool {
	port := int32(podspec.DefaultServingPort)
	if len(head.Spec.Containers) > 0 {
		for _, p := range head.Spec.Containers[0].Ports {
			if p.Name == podspec.ServingPortName {
				port = p.ContainerPort
			}
		}
	}
	d := r.dashboards
	hc := &http.Client{Timeout: r.cfg.ProxyHealthTimeout}
	var base string
	switch {
	case d.AllowOverride && cluster.Annotations[rayv1.AnnotationRayServeProxyURL] != "":
		base = cluster.Annotations[rayv1.AnnotationRayServeProxyURL]
	case d.ProxyHost != "":
		base = fmt.Sprintf("%s/api/v1/namespaces/%s/pods/%s:%d/proxy", d.ProxyHost, head.Namespace, head.Name, port)
		hc.Transport = d.ProxyTransport
	case head.Status.PodIP != "":
		base = fmt.Sprintf("http://%s:%d", head.Status.PodIP, port)
	default:
		return false
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+rayv1.RayServeProxyHealthPath, nil)
	if err != nil {
		return false
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	return resp.StatusCode == http.StatusOK
}

// serveConfigCache remembers the Serve config last applied to each
// cluster of each RayService (the dashboard does not tell which config it
// runs), as KubeRay's ServeConfigs; after a restart every cluster gets its
// config once more, which Serve takes as a no-op.
type serveConfigCache struct {
	mu      sync.Mutex
	applied map[types.NamespacedName]map[string]string
}

func newServeConfigCache() *serveConfigCache {
	return &serveConfigCache{applied: map[types.NamespacedName]map[string]string{}}
}

func (c *serveConfigCache) get(key types.NamespacedName, cluster string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.applied[key][cluster]
}

func (c *serveConfigCache) set(key types.NamespacedName, cluster, config string) {
	if config == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.applied[key] == nil {
		c.applied[key] = map[string]string{}
	}
	c.applied[key][cluster] = config
}

// prune forgets the clusters that are neither active nor pending.
func (c *serveConfigCache) prune(key types.NamespacedName, keep ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for cluster := range c.applied[key] {
		found := false
		for _, k := range keep {
			found = found || (k != "" && k == cluster)
		}
		if !found {
			delete(c.applied[key], cluster)
		}
	}
}

func (c *serveConfigCache) forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.applied, key)
}
