package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/features"
	"github.com/gantry-dev/gantry/pkg/controller/ray/validation"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

const rayServicePath = "/validate-ray-io-v1-rayservice"

// defaultRayServiceValidator validates as the manager does with its
// default feature gates.
func defaultRayServiceValidator(t *testing.T) *RayServiceValidator {
	return &RayServiceValidator{Options: validation.RayServiceValidationOptionsFromGates(rayGates(t, nil))}
}

// Every RayService of KubeRay v1.7.0's samples, decoded with unknown fields
// refused, is admitted unchanged, on create and on an update to itself;
// except the samples that need a feature Gantry does not implement
// (raytesting.RayServiceSamplesRefused: the incremental upgrade), which are
// refused naming the field.
func TestRayServiceSamplesAdmitted(t *testing.T) {
	v := defaultRayServiceValidator(t)
	samples := raytesting.SampleRayServices(t)
	if len(samples) != 16 {
		t.Errorf("%d RayService samples, want KubeRay v1.7.0's 16", len(samples))
	}
	admitted, refused := 0, 0
	for _, s := range samples {
		t.Run(s.File, func(t *testing.T) {
			svc, err := s.Decode()
			if err != nil {
				t.Fatal(err)
			}
			want := ""
			if field, ok := raytesting.RayServiceSamplesRefused[s.File]; ok {
				want = field + ": "
				refused++
			} else {
				admitted++
			}
			_, err = v.ValidateCreate(context.Background(), svc)
			checkAdmission(t, err, want)
			_, err = v.ValidateUpdate(context.Background(), svc.DeepCopy(), svc)
			checkAdmission(t, err, want)
		})
	}
	t.Logf("%d samples admitted, %d refused", admitted, refused)
	if refused != len(raytesting.RayServiceSamplesRefused) {
		t.Errorf("%d samples refused, want %d", refused, len(raytesting.RayServiceSamplesRefused))
	}
}

// TestRayServiceValidatorRules: every refused row of the rule table is
// refused with its field, on create and on update; every other row is
// admitted.
func TestRayServiceValidatorRules(t *testing.T) {
	v := defaultRayServiceValidator(t)
	for _, tc := range raytesting.RayServiceRuleCases() {
		t.Run(tc.Name, func(t *testing.T) {
			want := ""
			if tc.Layer != "" {
				want = tc.Field + ": "
			}
			_, err := v.ValidateCreate(context.Background(), tc.Svc)
			checkAdmission(t, err, want)
			_, err = v.ValidateUpdate(context.Background(), tc.Svc.DeepCopy(), tc.Svc)
			checkAdmission(t, err, want)
		})
	}
}

func TestRayServiceValidator(t *testing.T) {
	base := raytesting.BaseRayService
	tests := []struct {
		name   string
		old    func(*rayv1.RayService)
		mutate func(*rayv1.RayService)
		want   string
	}{
		{
			name: "the message names the RayService and the field",
			mutate: func(s *rayv1.RayService) {
				s.Spec.UpgradeStrategy = &rayv1.RayServiceUpgradeStrategy{Type: ptr.To(rayv1.RayServiceNewClusterWithIncrementalUpgrade)}
			},
			want: `RayService.ray.io "rayservice-sample" is invalid: spec.upgradeStrategy.type: Forbidden: ` +
				`spec.upgradeStrategy.type NewClusterWithIncrementalUpgrade is not implemented by Gantry yet ` +
				`(KubeRay v1.7.0 runs it behind its RayServiceIncrementalUpgrade gate); use NewCluster`,
		},
		{
			name: "clusterUpgradeOptions are refused",
			mutate: func(s *rayv1.RayService) {
				s.Spec.UpgradeStrategy = &rayv1.RayServiceUpgradeStrategy{
					Type:                  ptr.To(rayv1.RayServiceNewCluster),
					ClusterUpgradeOptions: &rayv1.ClusterUpgradeOptions{StepSizePercent: ptr.To[int32](10), IntervalSeconds: ptr.To[int32](30), GatewayClassName: "istio"},
				}
			},
			want: "spec.upgradeStrategy.clusterUpgradeOptions: Forbidden: spec.upgradeStrategy.clusterUpgradeOptions configure NewClusterWithIncrementalUpgrade, which Gantry does not implement yet",
		},
		{
			name:   "the embedded cluster is checked with the RayCluster rules",
			mutate: func(s *rayv1.RayService) { s.Spec.RayClusterSpec.WorkerGroupSpecs[0].MinReplicas = ptr.To[int32](-1) },
			want:   "spec.rayClusterConfig.workerGroupSpecs[0].minReplicas: Invalid value: -1: spec.rayClusterConfig: worker group small-group has negative minReplicas -1",
		},
		{
			name:   "KubeRay v1.7's alpha cluster features are refused in rayClusterConfig",
			mutate: func(s *rayv1.RayService) { s.Spec.RayClusterSpec.NetworkPolicy = &rayv1.NetworkPolicyConfig{} },
			want:   "spec.rayClusterConfig.networkPolicy: Forbidden: spec.rayClusterConfig: spec.networkPolicy requires the RayClusterNetworkPolicy feature gate to be enabled",
		},
		{
			name: "the initializing timeout annotation",
			mutate: func(s *rayv1.RayService) {
				s.Annotations = map[string]string{rayv1.RayServiceInitializingTimeoutAnnotation: "0"}
			},
			want: `metadata.annotations[ray.io/initializing-timeout]: Invalid value: "0": annotation ray.io/initializing-timeout must be a positive duration`,
		},
		{
			name: "metadata and spec report together",
			mutate: func(s *rayv1.RayService) {
				s.Name = strings.Repeat("x", 48)
				s.Spec.RayClusterDeletionDelaySeconds = ptr.To[int32](-1)
			},
			want: `[metadata.name: Invalid value: "` + strings.Repeat("x", 48) + `": metadata.name must be no more than 47 characters (it has 48)`,
		},
		{
			name:   "managedBy another controller",
			mutate: func(s *rayv1.RayService) { s.Spec.ManagedBy = ptr.To("example.com/mine") },
			want:   `spec.managedBy: Unsupported value: "example.com/mine"`,
		},
		{
			name:   "managedBy changed",
			old:    func(s *rayv1.RayService) { s.Spec.ManagedBy = ptr.To(rayv1.MultiKueueController) },
			mutate: func(s *rayv1.RayService) { s.Spec.ManagedBy = ptr.To(rayv1.KubeRayController) },
			want:   `spec.managedBy: Invalid value: "ray.io/kuberay-operator": spec.managedBy is immutable: it was "kueue.x-k8s.io/multikueue"`,
		},
		{
			name:   "suspended",
			old:    func(s *rayv1.RayService) { s.Spec.Suspend = false },
			mutate: func(s *rayv1.RayService) { s.Spec.Suspend = true },
		},
		{
			name: "the spec may change",
			mutate: func(s *rayv1.RayService) {
				s.Spec.ServeConfigV2 = "applications: []\n"
				s.Spec.RayClusterSpec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](3)
				s.Spec.UpgradeStrategy = &rayv1.RayServiceUpgradeStrategy{Type: ptr.To(rayv1.RayServiceUpgradeNone)}
			},
		},
		{
			name: "status is not checked",
			mutate: func(s *rayv1.RayService) {
				s.Status.ServiceStatus = "Bogus"
				s.Status.NumServeEndpoints = -1
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := defaultRayServiceValidator(t)
			svc := base()
			tc.mutate(svc)
			if tc.old == nil {
				_, err := v.ValidateCreate(context.Background(), svc)
				checkAdmission(t, err, tc.want)
			}
			old := base()
			if tc.old != nil {
				tc.old(old)
			}
			_, err := v.ValidateUpdate(context.Background(), old, svc)
			checkAdmission(t, err, tc.want)
		})
	}
}

func TestRayServiceUpdateOfDeletedObjectAdmitted(t *testing.T) {
	svc := raytesting.BaseRayService()
	svc.Spec.RayClusterDeletionDelaySeconds = ptr.To[int32](-1)
	old := svc.DeepCopy()
	svc.DeletionTimestamp = ptr.To(metav1.Now())
	_, err := defaultRayServiceValidator(t).ValidateUpdate(context.Background(), old, svc)
	checkAdmission(t, err, "")
}

func TestRayServiceDeleteNotValidated(t *testing.T) {
	svc := raytesting.BaseRayService()
	svc.Name = "Not-A-Label"
	if _, err := defaultRayServiceValidator(t).ValidateDelete(context.Background(), svc); err != nil {
		t.Errorf("delete: %v", err)
	}
}

// The handler Setup registers under --controllers=raycluster answers at the
// marker's path, with the options of the manager's feature gates (the
// worker group suspend rule of the embedded cluster follows
// RayJobDeletionPolicy).
func TestRayServiceWebhookRegistered(t *testing.T) {
	svc := raytesting.BaseRayService()
	svc.Spec.RayClusterSpec.WorkerGroupSpecs[0].Suspend = ptr.To(true)
	raw, err := json.Marshal(svc)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		workloads []string
		gate      bool
		want      string // "" admitted, "-" not registered
	}{
		{workloads: []string{WorkloadRayCluster}, gate: true},
		{workloads: []string{WorkloadRayCluster}, gate: false, want: "spec.rayClusterConfig.workerGroupSpecs[0].suspend: Forbidden"},
		{workloads: []string{"all"}, gate: true},
		{workloads: []string{WorkloadTrainJob, WorkloadSlurm}, gate: true, want: "-"},
	} {
		mgr := newTestManager(t)
		gates := rayGates(t, map[string]bool{string(features.RayJobDeletionPolicy): tc.gate})
		if err := Setup(mgr, tc.workloads, Options{Features: gates}); err != nil {
			t.Fatal(err)
		}
		mux := mgr.GetWebhookServer().WebhookMux()
		handler, pattern := http.Handler(nil), ""
		if mux != nil {
			handler, pattern = mux.Handler(&http.Request{URL: &url.URL{Path: rayServicePath}})
		}
		if tc.want == "-" {
			if pattern == rayServicePath {
				t.Errorf("%v: %s registered", tc.workloads, rayServicePath)
			}
			continue
		}
		if pattern != rayServicePath {
			t.Fatalf("%v: %s not registered", tc.workloads, rayServicePath)
		}
		for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update} {
			req := &admissionv1.AdmissionRequest{
				UID: types.UID("1"), Kind: metav1.GroupVersionKind{Group: "ray.io", Version: "v1", Kind: "RayService"},
				Resource: metav1.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayservices"},
				Name:     svc.Name, Namespace: svc.Namespace, Operation: op,
				Object: apiruntime.RawExtension{Raw: raw},
			}
			if op == admissionv1.Update {
				req.OldObject = apiruntime.RawExtension{Raw: raw}
			}
			review := admissionv1.AdmissionReview{
				TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
				Request:  req,
			}
			body, err := json.Marshal(review)
			if err != nil {
				t.Fatal(err)
			}
			httpReq := httptest.NewRequest(http.MethodPost, rayServicePath, bytes.NewReader(body))
			httpReq.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			handler.ServeHTTP(rec, httpReq)
			var got admissionv1.AdmissionReview
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || got.Response == nil {
				t.Fatalf("%v %s: answer %q: %v", tc.workloads, op, rec.Body.String(), err)
			}
			if tc.want == "" {
				if !got.Response.Allowed {
					t.Errorf("%s, gate %v: refused: %v", op, tc.gate, got.Response.Result)
				}
			} else if got.Response.Allowed || !strings.Contains(got.Response.Result.Message, tc.want) {
				t.Errorf("%s, gate %v: allowed %v, %v; want refused with %q", op, tc.gate, got.Response.Allowed, got.Response.Result, tc.want)
			}
		}
	}
}

// The headService rule: a RayService may shape its clusters' head Service
// but not name it.
func TestRayServiceHeadServiceName(t *testing.T) {
	v := defaultRayServiceValidator(t)
	svc := raytesting.BaseRayService()
	svc.Spec.RayClusterSpec.HeadGroupSpec.HeadService = &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"team": "serve"}},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort},
	}
	_, err := v.ValidateCreate(context.Background(), svc)
	checkAdmission(t, err, "")
	svc.Spec.RayClusterSpec.HeadGroupSpec.HeadService.Name = "fixed"
	_, err = v.ValidateCreate(context.Background(), svc)
	checkAdmission(t, err, "spec.rayClusterConfig.headGroupSpec.headService.metadata.name: Forbidden")
}
