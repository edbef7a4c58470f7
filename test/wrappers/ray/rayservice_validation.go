package raytesting

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

// rayServiceSamplesDir is testdata/rayservice-samples beside this file:
// KubeRay v1.7.0's RayService samples, with their folders.
func rayServiceSamplesDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "testdata", "rayservice-samples")
}

// RayServiceSample is one RayService document of KubeRay's samples.
type RayServiceSample struct {
	// File is the sample's path under ray-operator/config/samples/.
	File string
	// YAML is the document, unchanged.
	YAML []byte
}

// Decode reads the document into a RayService, refusing unknown fields,
// and gives it a namespace, as the API server would before admission.
func (s RayServiceSample) Decode() (*rayv1.RayService, error) {
	svc := &rayv1.RayService{}
	if err := yaml.UnmarshalStrict(s.YAML, svc); err != nil {
		return nil, fmt.Errorf("%s: %w", s.File, err)
	}
	if svc.Namespace == "" {
		svc.Namespace = "default"
	}
	return svc, nil
}

// RayServiceSamplesRefused are the samples Gantry's validation refuses, by
// file, with the field the refusal names: the features Gantry does not
// implement.
var RayServiceSamplesRefused = map[string]string{
	"ray-service.incremental-upgrade.yaml": "spec.upgradeStrategy.type",
}

// SampleRayServices returns every RayService document of
// testdata/rayservice-samples (KubeRay v1.7.0's 16).
func SampleRayServices(tb testing.TB) []RayServiceSample {
	tb.Helper()
	var out []RayServiceSample
	for _, d := range sampleDocs(tb, rayServiceSamplesDir(), rayv1.RayServiceKind) {
		out = append(out, RayServiceSample{File: d.file, YAML: d.yaml})
	}
	return out
}

// RayServiceRuleCase is one row of the RayService validation table, shared
// by the unit tests of pkg/controller/ray/validation, the webhook's and the
// KubeRay oracle: a RayService and Gantry's expected verdict.
type RayServiceRuleCase struct {
	Name string
	Svc  *rayv1.RayService
	// Layer is the layer that refuses the RayService ("Metadata", "Spec"),
	// empty when it is valid.
	Layer string
	// Field is the path of the refusal's field.
	Field string
	// Mentions is a text the refusal's message must contain: the field,
	// named as the user wrote it.
	Mentions string
	// V17Only marks a row that uses a field KubeRay v1.6's API lacks (the
	// oracle, on v1.6.2's module, leaves it out).
	V17Only bool
}

// BaseRayService is the valid RayService the rule rows start from: a Serve
// application on a cluster with one worker group, CRD defaults spelled out.
func BaseRayService() *rayv1.RayService {
	container := func(name string) []corev1.Container {
		return []corev1.Container{{Name: name, Image: "rayproject/ray:2.52.0"}}
	}
	return &rayv1.RayService{
		TypeMeta:   metav1.TypeMeta{APIVersion: rayv1.GroupVersion.String(), Kind: rayv1.RayServiceKind},
		ObjectMeta: metav1.ObjectMeta{Name: "rayservice-sample", Namespace: "default"},
		Spec: rayv1.RayServiceSpec{
			ServeConfigV2: "applications:\n  - name: fruit_app\n    import_path: fruit.deployment_graph\n",
			RayClusterSpec: rayv1.RayClusterSpec{
				RayVersion: "2.52.0",
				HeadGroupSpec: rayv1.HeadGroupSpec{
					RayStartParams: map[string]string{},
					Template:       corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: container("ray-head")}},
				},
				WorkerGroupSpecs: []rayv1.WorkerGroupSpec{{
					GroupName:   "small-group",
					Replicas:    ptr.To[int32](1),
					MinReplicas: ptr.To[int32](1),
					MaxReplicas: ptr.To[int32](5),
					Template:    corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: container("ray-worker")}},
				}},
			},
		},
	}
}

// RayServiceRuleCases is the table: for every rule of KubeRay v1.7.0's
// RayService validation (utils.ValidateRayServiceMetadata and
// ValidateRayServiceSpec) a RayService it refuses and, where the rule has a
// boundary, one it accepts; and Gantry's refusals of what it does not
// implement.
func RayServiceRuleCases() []RayServiceRuleCase {
	type edit = func(*rayv1.RayService)
	svc := func(edits ...edit) *rayv1.RayService {
		s := BaseRayService()
		for _, e := range edits {
			e(s)
		}
		return s
	}
	timeout := func(v string) edit {
		return func(s *rayv1.RayService) {
			s.Annotations = map[string]string{rayv1.RayServiceInitializingTimeoutAnnotation: v}
		}
	}
	upgrade := func(t rayv1.RayServiceUpgradeType) edit {
		return func(s *rayv1.RayService) {
			if s.Spec.UpgradeStrategy == nil {
				s.Spec.UpgradeStrategy = &rayv1.RayServiceUpgradeStrategy{}
			}
			s.Spec.UpgradeStrategy.Type = ptr.To(t)
		}
	}
	options := func(s *rayv1.RayService) {
		if s.Spec.UpgradeStrategy == nil {
			s.Spec.UpgradeStrategy = &rayv1.RayServiceUpgradeStrategy{}
		}
		s.Spec.UpgradeStrategy.ClusterUpgradeOptions = &rayv1.ClusterUpgradeOptions{
			MaxSurgePercent: ptr.To[int32](50), StepSizePercent: ptr.To[int32](10),
			IntervalSeconds: ptr.To[int32](30), GatewayClassName: "istio",
		}
	}
	autoscaled := func(s *rayv1.RayService) { s.Spec.RayClusterSpec.EnableInTreeAutoscaling = ptr.To(true) }
	cluster := func(s *rayv1.RayService) *rayv1.RayClusterSpec { return &s.Spec.RayClusterSpec }
	head := func(s *rayv1.RayService) *corev1.PodSpec { return &s.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec }
	worker := func(s *rayv1.RayService) *rayv1.WorkerGroupSpec { return &s.Spec.RayClusterSpec.WorkerGroupSpecs[0] }
	const cs = "spec.rayClusterConfig."

	return []RayServiceRuleCase{
		{Name: "base", Svc: svc()},
		{Name: "suspended", Svc: svc(func(s *rayv1.RayService) { s.Spec.Suspend = true }), V17Only: true},
		{Name: "head excluded from the Serve Service", Svc: svc(func(s *rayv1.RayService) { s.Spec.ExcludeHeadPodFromServeSvc = true })},
		{Name: "without serveConfigV2", Svc: svc(func(s *rayv1.RayService) { s.Spec.ServeConfigV2 = "" })},

		// metadata
		{Name: "name of 47 characters", Svc: svc(func(s *rayv1.RayService) { s.Name = strings.Repeat("a", 47) })},
		{Name: "name of 48 characters", Svc: svc(func(s *rayv1.RayService) { s.Name = strings.Repeat("a", 48) }),
			Layer: "Metadata", Field: "metadata.name", Mentions: "metadata.name must be no more than 47 characters"},
		{Name: "name not a DNS-1035 label", Svc: svc(func(s *rayv1.RayService) { s.Name = "1-service" }),
			Layer: "Metadata", Field: "metadata.name", Mentions: "metadata.name must be a valid DNS-1035 label"},
		{Name: "name with a dot", Svc: svc(func(s *rayv1.RayService) { s.Name = "ray.service" }),
			Layer: "Metadata", Field: "metadata.name", Mentions: "metadata.name"},
		{Name: "initializing timeout as a duration", Svc: svc(timeout("30m"))},
		{Name: "initializing timeout in seconds", Svc: svc(timeout("600"))},
		{Name: "initializing timeout empty", Svc: svc(timeout(""))},
		{Name: "initializing timeout of zero seconds", Svc: svc(timeout("0")),
			Layer: "Metadata", Field: "metadata.annotations[ray.io/initializing-timeout]", Mentions: "ray.io/initializing-timeout must be a positive duration"},
		{Name: "initializing timeout of a negative duration", Svc: svc(timeout("-5m")),
			Layer: "Metadata", Field: "metadata.annotations[ray.io/initializing-timeout]", Mentions: "ray.io/initializing-timeout must be a positive duration"},
		{Name: "initializing timeout of negative seconds", Svc: svc(timeout("-30")),
			Layer: "Metadata", Field: "metadata.annotations[ray.io/initializing-timeout]", Mentions: "ray.io/initializing-timeout must be a positive number of seconds"},
		{Name: "initializing timeout in words", Svc: svc(timeout("ten minutes")),
			Layer: "Metadata", Field: "metadata.annotations[ray.io/initializing-timeout]", Mentions: "ray.io/initializing-timeout must be a Go duration"},
		{Name: "initializing timeout with a space", Svc: svc(timeout(" 5m")),
			Layer: "Metadata", Field: "metadata.annotations[ray.io/initializing-timeout]", Mentions: "ray.io/initializing-timeout"},
		{Name: "name checked before the annotation", Svc: svc(timeout("soon"), func(s *rayv1.RayService) { s.Name = "Svc" }),
			Layer: "Metadata", Field: "metadata.name", Mentions: "metadata.name"},

		// the embedded cluster
		{Name: "Kubernetes token auth", Svc: svc(func(s *rayv1.RayService) {
			cluster(s).RayVersion = "2.55.0"
			cluster(s).AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, EnableK8sTokenAuth: ptr.To(true)}
		}), Layer: "Spec", Field: cs + "authOptions.enableK8sTokenAuth", Mentions: "enableK8sTokenAuth"},
		{Name: "Kubernetes token auth checked before the cluster", Svc: svc(func(s *rayv1.RayService) {
			cluster(s).AuthOptions = &rayv1.AuthOptions{EnableK8sTokenAuth: ptr.To(true)}
			head(s).Containers = nil
		}), Layer: "Spec", Field: cs + "authOptions.enableK8sTokenAuth", Mentions: "not supported for a RayService"},
		{Name: "token auth", Svc: svc(func(s *rayv1.RayService) {
			cluster(s).AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken}
		})},
		{Name: "token auth on an old Ray", Svc: svc(func(s *rayv1.RayService) {
			cluster(s).RayVersion = "2.46.0"
			cluster(s).AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken}
		}), Layer: "Spec", Field: cs + "rayVersion", Mentions: "spec.rayClusterConfig"},
		{Name: "head without a container", Svc: svc(func(s *rayv1.RayService) { head(s).Containers = nil }),
			Layer: "Spec", Field: cs + "headGroupSpec.template.spec.containers", Mentions: "headGroupSpec"},
		{Name: "negative minReplicas", Svc: svc(func(s *rayv1.RayService) { worker(s).MinReplicas = ptr.To[int32](-1) }),
			Layer: "Spec", Field: cs + "workerGroupSpecs[0].minReplicas", Mentions: "minReplicas"},
		{Name: "minReplicas above maxReplicas", Svc: svc(func(s *rayv1.RayService) { worker(s).MinReplicas = ptr.To[int32](6) }),
			Layer: "Spec", Field: cs + "workerGroupSpecs[0].minReplicas", Mentions: "maxReplicas"},
		{Name: "fault tolerance annotation and options", Svc: svc(func(s *rayv1.RayService) {
			s.Annotations = map[string]string{rayv1.RayFTEnabledAnnotationKey: "true"}
			cluster(s).GcsFaultToleranceOptions = &rayv1.GcsFaultToleranceOptions{RedisAddress: "redis:6379"}
		}), Layer: "Spec", Field: "metadata.annotations[ray.io/ft-enabled]", Mentions: "GcsFaultToleranceOptions"},
		{Name: "fault tolerance options", Svc: svc(func(s *rayv1.RayService) {
			cluster(s).GcsFaultToleranceOptions = &rayv1.GcsFaultToleranceOptions{RedisAddress: "redis:6379"}
		})},
		{Name: "autoscaler v2 with a restarting head", Svc: svc(autoscaled, func(s *rayv1.RayService) {
			cluster(s).AutoscalerOptions = &rayv1.AutoscalerOptions{Version: ptr.To(rayv1.AutoscalerVersionV2)}
			head(s).RestartPolicy = corev1.RestartPolicyAlways
		}), Layer: "Spec", Field: cs + "headGroupSpec.template.spec.restartPolicy", Mentions: "restartPolicy"},
		{Name: "duplicate worker group names", Svc: svc(func(s *rayv1.RayService) {
			cluster(s).WorkerGroupSpecs = append(cluster(s).WorkerGroupSpecs, *worker(s).DeepCopy())
		}), Layer: "Spec", Field: cs + "workerGroupSpecs[1].groupName", Mentions: "worker group names must be unique"},
		{Name: "worker group without minReplicas and maxReplicas", Svc: svc(func(s *rayv1.RayService) {
			worker(s).MinReplicas, worker(s).MaxReplicas = nil, nil
		})},

		// KubeRay v1.7's alpha RayCluster features, which Gantry refuses
		{Name: "networkPolicy", Svc: svc(func(s *rayv1.RayService) { cluster(s).NetworkPolicy = &rayv1.NetworkPolicyConfig{} }),
			Layer: "Spec", Field: cs + "networkPolicy", Mentions: "spec.networkPolicy", V17Only: true},
		{Name: "tlsOptions", Svc: svc(func(s *rayv1.RayService) { cluster(s).TLSOptions = &rayv1.TLSOptions{Enabled: ptr.To(true)} }),
			Layer: "Spec", Field: cs + "tlsOptions", Mentions: "spec.tlsOptions", V17Only: true},
		{Name: "historyServerOptions", Svc: svc(func(s *rayv1.RayService) { cluster(s).HistoryServerOptions = &rayv1.HistoryServerOptions{} }),
			Layer: "Spec", Field: cs + "historyServerOptions", Mentions: "spec.historyServerOptions", V17Only: true},
		{Name: "rocksdb fault tolerance backend", Svc: svc(func(s *rayv1.RayService) {
			cluster(s).GcsFaultToleranceOptions = &rayv1.GcsFaultToleranceOptions{Backend: rayv1.GcsFTBackendRocksDB}
		}), Layer: "Spec", Field: cs + "gcsFaultToleranceOptions.backend", Mentions: "rocksdb", V17Only: true},
		{Name: "embedded storage with the redis backend", Svc: svc(func(s *rayv1.RayService) {
			cluster(s).GcsFaultToleranceOptions = &rayv1.GcsFaultToleranceOptions{RedisAddress: "redis:6379", Storage: &rayv1.GcsEmbeddedStorage{ClaimName: "gcs"}}
		}), Layer: "Spec", Field: cs + "gcsFaultToleranceOptions.storage", Mentions: "GcsFaultToleranceOptions.Storage", V17Only: true},

		// the head Service
		{Name: "head Service with a name", Svc: svc(func(s *rayv1.RayService) {
			cluster(s).HeadGroupSpec.HeadService = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "my-head"}}
		}), Layer: "Spec", Field: cs + "headGroupSpec.headService.metadata.name", Mentions: "spec.rayClusterConfig.headGroupSpec.headService.metadata.name"},
		{Name: "head Service without a name", Svc: svc(func(s *rayv1.RayService) {
			cluster(s).HeadGroupSpec.HeadService = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "serve"}}}
		})},
		{Name: "the cluster checked before the head Service", Svc: svc(func(s *rayv1.RayService) {
			cluster(s).HeadGroupSpec.HeadService = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "my-head"}}
			worker(s).MinReplicas = ptr.To[int32](-1)
		}), Layer: "Spec", Field: cs + "workerGroupSpecs[0].minReplicas", Mentions: "minReplicas"},

		// upgrade strategy
		{Name: "upgrade NewCluster", Svc: svc(upgrade(rayv1.RayServiceNewCluster))},
		{Name: "upgrade None", Svc: svc(upgrade(rayv1.RayServiceUpgradeNone))},
		{Name: "upgrade strategy without a type", Svc: svc(func(s *rayv1.RayService) { s.Spec.UpgradeStrategy = &rayv1.RayServiceUpgradeStrategy{} })},
		{Name: "upgrade Recreate", Svc: svc(upgrade("Recreate")),
			Layer: "Spec", Field: "spec.upgradeStrategy.type", Mentions: "spec.upgradeStrategy.type \"Recreate\" is not supported"},
		{Name: "upgrade of an empty type", Svc: svc(upgrade("")),
			Layer: "Spec", Field: "spec.upgradeStrategy.type", Mentions: "spec.upgradeStrategy.type"},
		{Name: "upgrade NewClusterWithIncrementalUpgrade", Svc: svc(autoscaled, upgrade(rayv1.RayServiceNewClusterWithIncrementalUpgrade), options),
			Layer: "Spec", Field: "spec.upgradeStrategy.type", Mentions: "not implement"},
		{Name: "upgrade NewClusterWithIncrementalUpgrade without options", Svc: svc(upgrade(rayv1.RayServiceNewClusterWithIncrementalUpgrade)),
			Layer: "Spec", Field: "spec.upgradeStrategy.type", Mentions: "RayServiceIncrementalUpgrade"},
		{Name: "clusterUpgradeOptions with NewCluster", Svc: svc(autoscaled, upgrade(rayv1.RayServiceNewCluster), options),
			Layer: "Spec", Field: "spec.upgradeStrategy.clusterUpgradeOptions", Mentions: "spec.upgradeStrategy.clusterUpgradeOptions"},
		{Name: "clusterUpgradeOptions without a type", Svc: svc(options),
			Layer: "Spec", Field: "spec.upgradeStrategy.clusterUpgradeOptions", Mentions: "not implement"},
		{Name: "the head Service checked before the upgrade type", Svc: svc(upgrade("Recreate"), func(s *rayv1.RayService) {
			cluster(s).HeadGroupSpec.HeadService = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "my-head"}}
		}), Layer: "Spec", Field: cs + "headGroupSpec.headService.metadata.name", Mentions: "headService"},

		// deletion delay
		{Name: "rayClusterDeletionDelaySeconds of 0", Svc: svc(func(s *rayv1.RayService) { s.Spec.RayClusterDeletionDelaySeconds = ptr.To[int32](0) })},
		{Name: "negative rayClusterDeletionDelaySeconds", Svc: svc(func(s *rayv1.RayService) { s.Spec.RayClusterDeletionDelaySeconds = ptr.To[int32](-1) }),
			Layer: "Spec", Field: "spec.rayClusterDeletionDelaySeconds", Mentions: "spec.rayClusterDeletionDelaySeconds"},
		{Name: "the upgrade type checked before the deletion delay", Svc: svc(upgrade("Recreate"), func(s *rayv1.RayService) {
			s.Spec.RayClusterDeletionDelaySeconds = ptr.To[int32](-1)
		}), Layer: "Spec", Field: "spec.upgradeStrategy.type", Mentions: "spec.upgradeStrategy.type"},

		// fields KubeRay does not validate
		{Name: "deprecated thresholds", Svc: svc(func(s *rayv1.RayService) {
			s.Spec.ServiceUnhealthySecondThreshold = ptr.To[int32](-1)
			s.Spec.DeploymentUnhealthySecondThreshold = ptr.To[int32](-1)
		})},
		{Name: "serveService with a name", Svc: svc(func(s *rayv1.RayService) {
			s.Spec.ServeService = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "custom-serve"}}
		})},
		{Name: "serveConfigV2 that is not YAML", Svc: svc(func(s *rayv1.RayService) { s.Spec.ServeConfigV2 = "applications: [unclosed" })},
	}
}
