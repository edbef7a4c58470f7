// Package dashboards makes the clients of RayClusters' dashboards, the way
// KubeRay's operator reaches them, for the RayJob and RayService
// controllers.
package dashboards

import (
	"context"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	"github.com/gantry-dev/gantry/pkg/ray/dashboard"
)

// ProxyTimeout is the request timeout through the API server's service
// proxy (KubeRay's RayHTTPClientProxyTimeoutSeconds): the extra hop is
// slower than a direct request.
const ProxyTimeout = 30 * time.Second

// Clients makes the client of a RayCluster's dashboard, the way
// KubeRay's operator reaches it: http://<status.dashboardURL>, or through
// the API server's services/proxy (--use-kubernetes-proxy), or, with
// RayDashboardURLOverride, the cluster's gantry.dev/ray-dashboard-url.
type Clients struct {
	// Secrets reads the cluster's auth token Secret (uncached).
	Secrets client.Reader
	// ProxyHost and ProxyTransport are the API server's URL and the
	// manager's authenticated transport, set with --use-kubernetes-proxy.
	ProxyHost      string
	ProxyTransport http.RoundTripper
	// AllowOverride honours rayv1.AnnotationRayDashboardURL.
	AllowOverride bool
	// Timeout of direct requests; dashboard.DefaultTimeout when zero.
	Timeout time.Duration
}

// For returns the client of cluster's dashboard; address is host:port
// (the RayJob's status.dashboardURL).
func (d *Clients) For(ctx context.Context, cluster *rayv1.RayCluster, address string) (*dashboard.Client, error) {
	cfg := dashboard.Config{URL: "http://" + address, HTTPClient: &http.Client{Timeout: d.Timeout}}
	if cfg.HTTPClient.Timeout == 0 {
		cfg.HTTPClient.Timeout = dashboard.DefaultTimeout
	}
	if cluster == nil {
		return dashboard.New(cfg)
	}
	switch {
	case d.AllowOverride && cluster.Annotations[rayv1.AnnotationRayDashboardURL] != "":
		cfg.URL = cluster.Annotations[rayv1.AnnotationRayDashboardURL]
	case d.ProxyHost != "":
		svc := cluster.Status.Head.ServiceName
		if svc == "" {
			svc = podspec.HeadServiceName(cluster)
		}
		cfg.URL = fmt.Sprintf("%s/api/v1/namespaces/%s/services/%s:dashboard/proxy", d.ProxyHost, cluster.Namespace, svc)
		cfg.HTTPClient = &http.Client{Timeout: ProxyTimeout, Transport: d.ProxyTransport}
	}
	if podspec.AuthEnabled(&cluster.Spec) {
		token, err := d.authToken(ctx, cluster)
		if err != nil {
			return nil, err
		}
		cfg.AuthToken = token
	}
	return dashboard.New(cfg)
}

func (d *Clients) authToken(ctx context.Context, cluster *rayv1.RayCluster) (string, error) {
	if d.Secrets == nil {
		return "", fmt.Errorf("RayCluster %s/%s uses token auth, and no Secret reader is configured", cluster.Namespace, cluster.Name)
	}
	key := types.NamespacedName{Namespace: cluster.Namespace, Name: podspec.AuthSecretName(cluster)}
	secret := &corev1.Secret{}
	if err := d.Secrets.Get(ctx, key, secret); err != nil {
		return "", fmt.Errorf("reading the auth token Secret %s: %w", key, err)
	}
	token, ok := secret.Data[podspec.AuthTokenSecretKey]
	if !ok {
		return "", fmt.Errorf("the auth token Secret %s has no key %q", key, podspec.AuthTokenSecretKey)
	}
	return string(token), nil
}

// Address is host:port of cluster's dashboard through its head
// Service, as KubeRay's FetchHeadServiceURL builds it: the Service's port
// named "dashboard".
func Address(svc *corev1.Service, clusterDomain string) (string, error) {
	for _, p := range svc.Spec.Ports {
		if p.Name == podspec.DashboardPortName {
			return fmt.Sprintf("%s.%s.svc.%s:%d", svc.Name, svc.Namespace, clusterDomain, p.Port), nil
		}
	}
	return "", fmt.Errorf("the head Service %s/%s has no port named %q", svc.Namespace, svc.Name, podspec.DashboardPortName)
}
