package raycluster

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	"github.com/gantry-dev/gantry/pkg/controller/ray/validation"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

// TestBuildHeadIngress follows KubeRay v1.7.0's BuildIngressForHeadService
// (common/ingress.go): path "/" of type Prefix unless
// headGroupSpec.ingressOptions names a path, type, host or TLS (v1.6.2 had
// the fixed Exact path "/<cluster>/(.*)", which ingressOptions can still
// ask for); the cluster's annotations except
// kubernetes.io/ingress.class, whose value becomes spec.ingressClassName
// (an API server refuses the two when they differ, and the annotation is
// deprecated).
func TestBuildHeadIngress(t *testing.T) {
	const rewrite = "nginx.ingress.kubernetes.io/rewrite-target"
	tests := []struct {
		name            string
		cluster         *rayv1.RayCluster
		wantPort        int32
		wantClass       *string
		wantAnnotations map[string]string
		// Defaults: path "/", Prefix, every host, no TLS.
		wantPath, wantHost string
		wantPathType       networkingv1.PathType
		wantTLS            []networkingv1.IngressTLS
	}{
		{
			name: "class annotation becomes ingressClassName and is not copied",
			cluster: raytesting.MakeRayCluster("rc", "ns").
				Annotation(IngressClassAnnotationKey, "nginx").
				Annotation(rewrite, "/$1").
				Obj(),
			wantPort:        podspec.DefaultDashboardPort,
			wantClass:       ptr.To("nginx"),
			wantAnnotations: map[string]string{rewrite: "/$1"},
		},
		{
			name:            "no class annotation: no class, other annotations copied",
			cluster:         raytesting.MakeRayCluster("rc", "ns").Annotation(rewrite, "/$1").Obj(),
			wantPort:        podspec.DefaultDashboardPort,
			wantAnnotations: map[string]string{rewrite: "/$1"},
		},
		{
			name:            "the head container's dashboard port",
			cluster:         raytesting.MakeRayCluster("rc", "ns").HeadPort(podspec.DashboardPortName, 8266).Obj(),
			wantPort:        8266,
			wantAnnotations: map[string]string{},
		},
		{
			name: "ingressOptions: host, path, type and TLS",
			cluster: func() *rayv1.RayCluster {
				rc := raytesting.MakeRayCluster("rc", "ns").Obj()
				rc.Spec.HeadGroupSpec.IngressOptions = &rayv1.IngressOptions{
					Host:     ptr.To("ray.example.com"),
					Path:     ptr.To("/rc/(.*)"),
					PathType: ptr.To(rayv1.IngressPathTypeImplementationSpecific),
					TLS:      []networkingv1.IngressTLS{{Hosts: []string{"ray.example.com"}, SecretName: "ray-tls"}},
				}
				return rc
			}(),
			wantPort:        podspec.DefaultDashboardPort,
			wantAnnotations: map[string]string{},
			wantHost:        "ray.example.com",
			wantPath:        "/rc/(.*)",
			wantPathType:    networkingv1.PathTypeImplementationSpecific,
			wantTLS:         []networkingv1.IngressTLS{{Hosts: []string{"ray.example.com"}, SecretName: "ray-tls"}},
		},
		{
			name: "ingressOptions with only a host keep the default path",
			cluster: func() *rayv1.RayCluster {
				rc := raytesting.MakeRayCluster("rc", "ns").Obj()
				rc.Spec.HeadGroupSpec.IngressOptions = &rayv1.IngressOptions{Host: ptr.To("ray.example.com")}
				return rc
			}(),
			wantPort:        podspec.DefaultDashboardPort,
			wantAnnotations: map[string]string{},
			wantHost:        "ray.example.com",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ing := BuildHeadIngress(tc.cluster)
			if ing.Name != "rc-head-ingress" || ing.Namespace != "ns" {
				t.Errorf("name = %s/%s, want ns/rc-head-ingress", ing.Namespace, ing.Name)
			}
			if diff := cmp.Diff(tc.wantClass, ing.Spec.IngressClassName); diff != "" {
				t.Errorf("ingressClassName (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantAnnotations, ing.Annotations, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			if tc.wantPath == "" {
				tc.wantPath = "/"
			}
			if tc.wantPathType == "" {
				tc.wantPathType = networkingv1.PathTypePrefix
			}
			wantRules := []networkingv1.IngressRule{{Host: tc.wantHost, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{
					Path:     tc.wantPath,
					PathType: &tc.wantPathType,
					Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
						Name: "rc-head-svc",
						Port: networkingv1.ServiceBackendPort{Number: tc.wantPort},
					}},
				}},
			}}}}
			if diff := cmp.Diff(wantRules, ing.Spec.Rules); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantTLS, ing.Spec.TLS); diff != "" {
				t.Errorf("tls (-want +got):\n%s", diff)
			}
			if tc.wantClass != nil && tc.cluster.Annotations[IngressClassAnnotationKey] != *tc.wantClass {
				t.Errorf("the builder removed the class annotation from the RayCluster")
			}
		})
	}
}

// TestEmptyAuthOptionsDoNotEnableAuth: KubeRay v1.6.2's utils.IsAuthEnabled
// is AuthOptions != nil && Mode == "token"; an empty mode leaves every Pod
// without Ray's auth settings, and validation does not ask for Ray 2.52.
func TestEmptyAuthOptionsDoNotEnableAuth(t *testing.T) {
	for name, auth := range map[string]*rayv1.AuthOptions{
		"empty":                    {},
		"secretName without mode":  {SecretName: ptr.To("mine")},
		"disabled":                 {Mode: rayv1.AuthModeDisabled},
		"disabled with secretName": {Mode: rayv1.AuthModeDisabled, SecretName: ptr.To("mine")},
	} {
		t.Run(name, func(t *testing.T) {
			w := raytesting.MakeRayCluster("rc", "default").RayVersion("2.40.0").Auth(auth).Autoscaling().WorkerGroup("cpu", 1)
			cluster := w.Obj()
			if err := validation.Validate(cluster, validation.SpecValidationOptions{}); err != nil {
				t.Errorf("Validate = %v, want no error: auth is off", err)
			}
			head := podspec.BuildHeadPod(cluster, podspec.DefaultBuildOptions())
			worker := podspec.BuildWorkerPod(cluster, w.Group("cpu"), podspec.WorkerReplica{}, podspec.DefaultBuildOptions())
			containers := map[string]*corev1.Container{
				"head":       &head.Spec.Containers[0],
				"autoscaler": &head.Spec.Containers[podspec.ContainerIndex(head.Spec.Containers, podspec.AutoscalerContainerName)],
				"worker":     &worker.Spec.Containers[0],
				"wait-gcs":   &worker.Spec.InitContainers[podspec.ContainerIndex(worker.Spec.InitContainers, podspec.WaitGCSReadyContainerName)],
			}
			for cname, c := range containers {
				for _, env := range []string{podspec.EnvRayAuthMode, podspec.EnvRayAuthToken, podspec.EnvRayEnableK8sTokenAuth} {
					if e, ok := raytesting.EnvOf(c, env); ok {
						t.Errorf("%s container has %s = %+v; auth is not on", cname, env, e)
					}
				}
			}
		})
	}
}

// The Ingress routes to the head Service by its full name, which is never
// shortened (podspec.TestServiceNamesAreNeverShortened).
func TestIngressRoutesToTheUnshortenedHeadService(t *testing.T) {
	for _, n := range []int{2, 41, validation.MaxRayClusterNameLength} {
		name := "r" + strings.Repeat("c", n-1)
		cluster := raytesting.MakeRayCluster(name, "default").WorkerGroup("cpu", 1).Obj()
		if got := BuildHeadIngress(cluster).Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name; got != name+"-head-svc" {
			t.Errorf("%d characters: Ingress backend %q", n, got)
		}
	}
}
