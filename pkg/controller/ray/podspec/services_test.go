package podspec

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

func svcPort(name string, port int32) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: port, Protocol: corev1.ProtocolTCP, AppProtocol: ptr.To("tcp")}
}

var defaultHeadPorts = []corev1.ServicePort{
	svcPort("client", 10001),
	svcPort("dashboard", 8265),
	svcPort("gcs-server", 6379),
	svcPort("metrics", 8080),
	svcPort("serve", 8000),
}

func TestBuildHeadService(t *testing.T) {
	tests := []struct {
		name          string
		cluster       *rayv1.RayCluster
		opts          func(*BuildOptions)
		wantName      string
		wantType      corev1.ServiceType
		wantClusterIP string
		wantPorts     []corev1.ServicePort
	}{
		{
			name:          "default: headless with KubeRay's ports sorted by name",
			cluster:       raytesting.MakeRayCluster("rc", "default").Obj(),
			wantName:      "rc-head-svc",
			wantClusterIP: corev1.ClusterIPNone,
			wantPorts:     defaultHeadPorts,
		},
		{
			name:      "cluster IP when configured",
			cluster:   raytesting.MakeRayCluster("rc", "default").Obj(),
			opts:      func(o *BuildOptions) { o.HeadClusterIPService = true },
			wantName:  "rc-head-svc",
			wantPorts: defaultHeadPorts,
		},
		{
			name:      "a LoadBalancer is never headless",
			cluster:   raytesting.MakeRayCluster("rc", "default").ServiceType(corev1.ServiceTypeLoadBalancer).Obj(),
			wantName:  "rc-head-svc",
			wantType:  corev1.ServiceTypeLoadBalancer,
			wantPorts: defaultHeadPorts,
		},
		{
			// KubeRay v1.6.2 getServicePorts: declared container ports
			// replace the defaults entirely; only metrics is added.
			name: "container ports replace the defaults, unnamed ones are named, metrics is added",
			cluster: raytesting.MakeRayCluster("rc", "default").
				HeadPort("gcs-server", 6380).
				HeadPort("my-dashboard", 8265).
				HeadPort("", 9999).
				Obj(),
			wantName:      "rc-head-svc",
			wantClusterIP: corev1.ClusterIPNone,
			wantPorts: []corev1.ServicePort{
				svcPort("9999-port", 9999),
				svcPort("gcs-server", 6380),
				svcPort("metrics", 8080),
				svcPort("my-dashboard", 8265),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := DefaultBuildOptions()
			if tc.opts != nil {
				tc.opts(&opts)
			}
			svc := BuildHeadService(tc.cluster, opts)
			if svc.Name != tc.wantName || svc.Namespace != tc.cluster.Namespace {
				t.Errorf("name = %s/%s, want %s/%s", svc.Namespace, svc.Name, tc.cluster.Namespace, tc.wantName)
			}
			if svc.Kind != "Service" || svc.APIVersion != "v1" {
				t.Errorf("TypeMeta = %+v; server-side apply needs it", svc.TypeMeta)
			}
			if svc.Spec.Type != tc.wantType || svc.Spec.ClusterIP != tc.wantClusterIP {
				t.Errorf("type %q clusterIP %q, want %q %q", svc.Spec.Type, svc.Spec.ClusterIP, tc.wantType, tc.wantClusterIP)
			}
			if svc.Spec.PublishNotReadyAddresses != (tc.wantClusterIP == corev1.ClusterIPNone) {
				t.Errorf("publishNotReadyAddresses = %v", svc.Spec.PublishNotReadyAddresses)
			}
			if diff := cmp.Diff(tc.wantPorts, svc.Spec.Ports); diff != "" {
				t.Errorf("ports (-want +got):\n%s", diff)
			}
			wantSelector := map[string]string{
				"ray.io/cluster": "rc", "ray.io/node-type": "head", "ray.io/identifier": "rc-head",
				"app.kubernetes.io/name": "kuberay", "app.kubernetes.io/created-by": "kuberay-operator",
			}
			if diff := cmp.Diff(wantSelector, svc.Spec.Selector); diff != "" {
				t.Errorf("selector (-want +got):\n%s", diff)
			}
			if svc.Labels["app.kubernetes.io/managed-by"] != "gantry" || svc.Labels["ray.io/node-type"] != "head" {
				t.Errorf("labels = %v", svc.Labels)
			}
			if len(svc.OwnerReferences) != 1 || svc.OwnerReferences[0].Name != "rc" {
				t.Errorf("owner references = %+v", svc.OwnerReferences)
			}
		})
	}
}

func TestHeadServiceSelectsTheHeadPod(t *testing.T) {
	// KubeRay lets a template label override ray.io/identifier on the Pod;
	// the Service must follow, or it selects nothing.
	cluster := raytesting.MakeRayCluster("rc", "default").HeadTemplateLabel(rayv1.RayIDLabelKey, "custom").Obj()
	pod := BuildHeadPod(cluster, DefaultBuildOptions())
	svc := BuildHeadService(cluster, DefaultBuildOptions())
	for k, v := range svc.Spec.Selector {
		if pod.Labels[k] != v {
			t.Errorf("selector %s=%s does not match the head Pod's %q", k, v, pod.Labels[k])
		}
	}
}

func TestBuildHeadServiceWithUserService(t *testing.T) {
	user := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:            "my-head",
			Namespace:       "elsewhere",
			ResourceVersion: "12",
			Labels:          map[string]string{"team": "ml", "ray.io/cluster": "spoofed"},
			Annotations:     map[string]string{"keep": "me", "shared": "user"},
		},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "wrong"},
			Ports: []corev1.ServicePort{
				{Name: "dashboard", Port: 1},
				{Name: "extra", Port: 7000},
				{Port: 7001},
			},
		},
	}
	cluster := raytesting.MakeRayCluster("rc", "ns").
		ServiceType(corev1.ServiceTypeNodePort).
		HeadService(user).
		HeadServiceAnnotation("shared", "operator").
		Obj()
	svc := BuildHeadService(cluster, DefaultBuildOptions())

	if svc.Name != "my-head" || svc.Namespace != "ns" || svc.ResourceVersion != "" {
		t.Errorf("metadata = %s/%s rv %q, want ns/my-head without resourceVersion", svc.Namespace, svc.Name, svc.ResourceVersion)
	}
	if svc.Spec.Type != corev1.ServiceTypeNodePort {
		t.Errorf("type = %q, want the headGroupSpec's NodePort", svc.Spec.Type)
	}
	if svc.Spec.Selector["app"] != "" || svc.Spec.Selector["ray.io/node-type"] != "head" {
		t.Errorf("selector = %v, want the operator's", svc.Spec.Selector)
	}
	wantAnnotations := map[string]string{"keep": "me", "shared": "operator"}
	if diff := cmp.Diff(wantAnnotations, svc.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	if svc.Labels["team"] != "ml" || svc.Labels["ray.io/cluster"] != "rc" || svc.Labels["app.kubernetes.io/managed-by"] != "gantry" {
		t.Errorf("labels = %v", svc.Labels)
	}
	wantPorts := []corev1.ServicePort{
		svcPort("client", 10001),
		svcPort("dashboard", 8265),
		{Name: "extra", Port: 7000},
		svcPort("gcs-server", 6379),
		svcPort("metrics", 8080),
		svcPort("serve", 8000),
		{Port: 7001},
	}
	if diff := cmp.Diff(wantPorts, svc.Spec.Ports); diff != "" {
		t.Errorf("ports (-want +got):\n%s", diff)
	}
	if got := HeadServiceFQDN(cluster, "cluster.local"); got != "my-head.ns.svc.cluster.local" {
		t.Errorf("FQDN = %q, want the user's Service name", got)
	}
}

func TestBuildHeadlessService(t *testing.T) {
	cluster := raytesting.MakeRayCluster("rc", "ns").MultiHostWorkerGroup("tpu", 1, 2).Obj()
	if !NeedsHeadlessService(cluster) || NeedsHeadlessService(raytesting.MakeRayCluster("x", "default").WorkerGroup("cpu", 3).Obj()) {
		t.Errorf("NeedsHeadlessService must be true exactly when a group has numOfHosts > 1")
	}
	svc := BuildHeadlessService(cluster)
	if svc.Name != "rc-headless" || svc.Namespace != "ns" {
		t.Errorf("name = %s/%s", svc.Namespace, svc.Name)
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || svc.Spec.Type != corev1.ServiceTypeClusterIP || !svc.Spec.PublishNotReadyAddresses {
		t.Errorf("spec = %+v, want a headless ClusterIP Service publishing not-ready Pods", svc.Spec)
	}
	wantSelector := map[string]string{"ray.io/cluster": "rc", "ray.io/node-type": "worker"}
	if diff := cmp.Diff(wantSelector, svc.Spec.Selector); diff != "" {
		t.Errorf("selector (-want +got):\n%s", diff)
	}
	if svc.Labels[rayv1.RayClusterHeadlessServiceLabelKey] != "rc" || len(svc.OwnerReferences) != 1 {
		t.Errorf("labels %v owners %v", svc.Labels, svc.OwnerReferences)
	}
}

func TestBuildServeService(t *testing.T) {
	tests := []struct {
		name     string
		cluster  *rayv1.RayCluster
		wantPort int32
		wantErr  error
	}{
		{name: "default serve port", cluster: raytesting.MakeRayCluster("rc", "default").Obj(), wantPort: 8000},
		{name: "user serve port", cluster: raytesting.MakeRayCluster("rc", "default").HeadPort("serve", 9000).Obj(), wantPort: 9000},
		{name: "port 8000 used by another name", cluster: raytesting.MakeRayCluster("rc", "default").HeadPort("http", 8000).Obj(), wantErr: ErrNoServePort},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svc, err := BuildServeService(tc.cluster)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if svc.Name != "rc-serve-svc" {
				t.Errorf("name = %q", svc.Name)
			}
			wantPorts := []corev1.ServicePort{{Name: "serve", Port: tc.wantPort, Protocol: corev1.ProtocolTCP}}
			if diff := cmp.Diff(wantPorts, svc.Spec.Ports); diff != "" {
				t.Errorf("ports (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(map[string]string{"ray.io/cluster": "rc"}, svc.Spec.Selector); diff != "" {
				t.Errorf("selector (-want +got):\n%s", diff)
			}
			wantLabels := map[string]string{
				rayv1.RayOriginatedFromCRNameLabelKey:  "rc",
				rayv1.RayOriginatedFromCRDLabelKey:     "RayCluster",
				rayv1.RayClusterServingServiceLabelKey: "rc-serve",
				"app.kubernetes.io/managed-by":         "gantry",
			}
			if diff := cmp.Diff(wantLabels, svc.Labels); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
		})
	}
	if ServeServiceEnabled(raytesting.MakeRayCluster("rc", "default").Obj()) ||
		!ServeServiceEnabled(raytesting.MakeRayCluster("rc", "default").Annotation(rayv1.EnableServeServiceKey, "true").Obj()) {
		t.Errorf("ServeServiceEnabled must follow the %s annotation", rayv1.EnableServeServiceKey)
	}
}

// TestHeadServicePortsAreTheContainersPlusMetrics follows KubeRay v1.6.2's
// getServicePorts (common/service.go): the head container's ports (an
// unnamed one as "<port>-port"), or KubeRay's five defaults when the
// container declares none, plus metrics:8080 when no port is named
// metrics. Defaults are not mixed into declared ports.
func TestHeadServicePortsAreTheContainersPlusMetrics(t *testing.T) {
	tests := []struct {
		name      string
		cluster   *rayv1.RayCluster
		wantPorts []corev1.ServicePort
	}{
		{
			name:      "no container ports: KubeRay's defaults",
			cluster:   raytesting.MakeRayCluster("rc", "default").Obj(),
			wantPorts: defaultHeadPorts,
		},
		{
			name: "declared ports only, plus metrics",
			cluster: raytesting.MakeRayCluster("rc", "default").
				HeadPort("gcs-server", 6380).
				HeadPort("dashboard", 8265).
				HeadPort("", 9999).
				Obj(),
			wantPorts: []corev1.ServicePort{
				svcPort("9999-port", 9999),
				svcPort("dashboard", 8265),
				svcPort("gcs-server", 6380),
				svcPort("metrics", 8080),
			},
		},
		{
			name: "a declared metrics port is kept",
			cluster: raytesting.MakeRayCluster("rc", "default").
				HeadPort("gcs-server", 6379).
				HeadPort("metrics", 9090).
				Obj(),
			wantPorts: []corev1.ServicePort{
				svcPort("gcs-server", 6379),
				svcPort("metrics", 9090),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svc := BuildHeadService(tc.cluster, DefaultBuildOptions())
			if diff := cmp.Diff(tc.wantPorts, svc.Spec.Ports); diff != "" {
				t.Errorf("ports (-want +got):\n%s", diff)
			}
		})
	}
}

// TestServeServicePorts follows KubeRay v1.6.2's BuildServeService and
// IsServingPort (common/service.go): every port named "serve" or
// "serve-<something>" (e.g. serve-grpc), sorted by name here so the
// object is stable; no serve port means no Serve Service.
func TestServeServicePorts(t *testing.T) {
	tests := []struct {
		name      string
		cluster   *rayv1.RayCluster
		wantPorts []corev1.ServicePort
		wantErr   error
	}{
		{
			name: "serve and serve-grpc",
			cluster: raytesting.MakeRayCluster("rc", "default").
				HeadPort("gcs-server", 6379).
				HeadPort("serve-grpc", 9000).
				HeadPort("serve", 8000).
				HeadPort("server", 7000).
				Obj(),
			wantPorts: []corev1.ServicePort{
				{Name: "serve", Port: 8000, Protocol: corev1.ProtocolTCP},
				{Name: "serve-grpc", Port: 9000, Protocol: corev1.ProtocolTCP},
			},
		},
		{
			name:      "serve-grpc alone",
			cluster:   raytesting.MakeRayCluster("rc", "default").HeadPort("serve-grpc", 9000).Obj(),
			wantPorts: []corev1.ServicePort{{Name: "serve-grpc", Port: 9000, Protocol: corev1.ProtocolTCP}},
		},
		{
			name:    "declared ports without a serve port",
			cluster: raytesting.MakeRayCluster("rc", "default").HeadPort("gcs-server", 6379).Obj(),
			wantErr: ErrNoServePort,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svc, err := BuildServeService(tc.cluster)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if diff := cmp.Diff(tc.wantPorts, svc.Spec.Ports); diff != "" {
				t.Errorf("ports (-want +got):\n%s", diff)
			}
		})
	}
}

// KubeRay (v1.6.2 and v1.7.0, utils.GenerateHeadServiceName and
// GenerateServeServiceName) never shortens these names, where the Ingress,
// ServiceAccount and Role names go through CheckName: with a cluster name
// of 41 to 53 characters a shortened name would be a second head Service
// after a migration, and clients that build "<cluster>-head-svc" would miss.
func TestServiceNamesAreNeverShortened(t *testing.T) {
	for _, n := range []int{2, 40, 41, 45, maxClusterNameLength} {
		name := "r" + strings.Repeat("c", n-1)
		cluster := raytesting.MakeRayCluster(name, "default").WorkerGroup("cpu", 1).Obj()
		if got, want := HeadServiceName(cluster), name+"-head-svc"; got != want {
			t.Errorf("%d characters: head Service %q, want %q", n, got, want)
		}
		if got, want := ServeServiceName(cluster), name+"-serve-svc"; got != want {
			t.Errorf("%d characters: serve Service %q, want %q", n, got, want)
		}
		if got := len(ServeServiceName(cluster)); got > 63 {
			t.Errorf("%d characters: serve Service name has %d characters", n, got)
		}
		svc, err := BuildServeService(cluster)
		if err != nil || svc.Name != name+"-serve-svc" {
			t.Errorf("%d characters: BuildServeService = %v, %v", n, svc.GetName(), err)
		}
		if head := BuildHeadService(cluster, BuildOptions{}); head.Name != name+"-head-svc" {
			t.Errorf("%d characters: BuildHeadService named it %q", n, head.Name)
		}
		// Workers reach the head, and the Ingress routes, by that name.
		worker := BuildWorkerPod(cluster, &cluster.Spec.WorkerGroupSpecs[0], WorkerReplica{}, DefaultBuildOptions())
		if got := raytesting.EnvValue(t, &worker.Spec.Containers[0], EnvFQRayIP); got != name+"-head-svc.default.svc.cluster.local" {
			t.Errorf("%d characters: worker %s=%q", n, EnvFQRayIP, got)
		}
	}
}

// maxClusterNameLength is validation.MaxRayClusterNameLength, which this
// package cannot import (validation imports it).
const maxClusterNameLength = 53
