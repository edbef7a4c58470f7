package validation

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/ptr"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/features"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

// rayServiceOptions are the options of the default feature gates.
func rayServiceOptions() RayServiceValidationOptions {
	return RayServiceValidationOptions{Cluster: SpecValidationOptions{AllowWorkerGroupSuspend: true}}
}

// TestRayServiceRules runs the rule table (raytesting.RayServiceRuleCases,
// which the webhook's tests and the KubeRay oracle run too): one refused
// row per rule, its layer, the field admission reports and a message that
// names the field, and the rows on the accepting side of each rule.
func TestRayServiceRules(t *testing.T) {
	cases := raytesting.RayServiceRuleCases()
	refused := 0
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			svc := tc.Svc
			before := svc.DeepCopy()
			verr := ValidateRayService(svc, rayServiceOptions())
			if !equality.Semantic.DeepEqual(before, svc) {
				t.Fatal("ValidateRayService modified the RayService")
			}
			if tc.Layer == "" {
				if verr != nil {
					t.Fatalf("refused: %v", verr)
				}
				return
			}
			if verr == nil {
				t.Fatalf("accepted; want %s refused at %s", tc.Layer, tc.Field)
			}
			t.Logf("%s: %v", verr.Layer, verr)
			if string(verr.Layer) != tc.Layer {
				t.Errorf("layer %s, want %s", verr.Layer, tc.Layer)
			}
			errs := FieldErrors(verr.Err, field.NewPath("spec"))
			if len(errs) != 1 {
				t.Fatalf("%d field errors, want 1: %v", len(errs), errs)
			}
			if errs[0].Field != tc.Field {
				t.Errorf("field %s, want %s", errs[0].Field, tc.Field)
			}
			if !strings.Contains(errs[0].Detail, tc.Mentions) {
				t.Errorf("message %q does not mention %q", errs[0].Detail, tc.Mentions)
			}
			if verr.Error() != errs[0].Detail {
				t.Errorf("Error() %q is not the message %q", verr.Error(), errs[0].Detail)
			}
		})
		if tc.Layer != "" {
			refused++
		}
	}
	if refused < 30 || len(cases)-refused < 15 {
		t.Errorf("%d refused and %d accepted rows; the table lost rows", refused, len(cases)-refused)
	}
}

// Each layer's function refuses on its own what ValidateRayService
// attributes to it.
func TestRayServiceLayersAlone(t *testing.T) {
	for _, tc := range raytesting.RayServiceRuleCases() {
		got := map[string]bool{
			"Metadata": ValidateRayServiceMetadata(tc.Svc.ObjectMeta) != nil,
			"Spec":     ValidateRayServiceSpec(tc.Svc, rayServiceOptions()) != nil,
		}
		for layer, refused := range got {
			if want := layer == tc.Layer; refused != want {
				t.Errorf("%s: %s layer refused = %v, want %v", tc.Name, layer, refused, want)
			}
		}
	}
}

// Errors of the embedded cluster are reported under spec.rayClusterConfig,
// in the field and in the message; annotation errors stay the
// RayService's.
func TestRayServiceClusterErrorsMoveUnderRayClusterConfig(t *testing.T) {
	svc := raytesting.BaseRayService()
	svc.Spec.RayClusterSpec.WorkerGroupSpecs[0].MaxReplicas = ptr.To[int32](-3)
	fe := AsFieldError(ValidateRayServiceSpec(svc, rayServiceOptions()), specPath)
	if fe.Field != "spec.rayClusterConfig.workerGroupSpecs[0].maxReplicas" || fe.Type != field.ErrorTypeInvalid || fe.BadValue != int32(-3) {
		t.Errorf("got %#v", fe)
	}
	if fe.Detail != "spec.rayClusterConfig: worker group small-group has negative maxReplicas -3" {
		t.Errorf("message %q", fe.Detail)
	}

	svc = raytesting.BaseRayService()
	svc.Annotations = map[string]string{rayv1.RayExternalStorageNSAnnotationKey: "ns"}
	svc.Spec.RayClusterSpec.GcsFaultToleranceOptions = &rayv1.GcsFaultToleranceOptions{RedisAddress: "redis:6379"}
	fe = AsFieldError(ValidateRayServiceSpec(svc, rayServiceOptions()), specPath)
	if fe.Field != "metadata.annotations[ray.io/external-storage-namespace]" || !strings.HasPrefix(fe.Detail, "spec.rayClusterConfig: ") {
		t.Errorf("got %#v", fe)
	}
}

// The worker group suspend rule follows the RayJobDeletionPolicy gate, as
// for a RayCluster.
func TestRayServiceWorkerGroupSuspendFollowsTheGate(t *testing.T) {
	svc := raytesting.BaseRayService()
	svc.Spec.RayClusterSpec.WorkerGroupSpecs[0].Suspend = ptr.To(true)
	if err := ValidateRayService(svc, rayServiceOptions()); err != nil {
		t.Errorf("gate on: %v", err)
	}
	err := ValidateRayService(svc, RayServiceValidationOptions{})
	if err == nil || AsFieldError(err.Err, specPath).Field != "spec.rayClusterConfig.workerGroupSpecs[0].suspend" {
		t.Errorf("gate off: %v", err)
	}
}

func TestValidateRayServiceManagedBy(t *testing.T) {
	with := func(m *string) *rayv1.RayService {
		s := raytesting.BaseRayService()
		s.Spec.ManagedBy = m
		return s
	}
	kuberay, multikueue := ptr.To(rayv1.KubeRayController), ptr.To(rayv1.MultiKueueController)
	tests := []struct {
		name     string
		old, svc *rayv1.RayService
		want     string
	}{
		{name: "unset", svc: with(nil)},
		{name: "KubeRay's", svc: with(kuberay)},
		{name: "MultiKueue's", svc: with(multikueue)},
		{name: "another controller", svc: with(ptr.To("example.com/mine")),
			want: `spec.managedBy: Unsupported value: "example.com/mine": supported values: "ray.io/kuberay-operator", "kueue.x-k8s.io/multikueue"`},
		{name: "kept", old: with(multikueue), svc: with(multikueue)},
		{name: "changed", old: with(kuberay), svc: with(multikueue),
			want: `spec.managedBy: Invalid value: "kueue.x-k8s.io/multikueue": spec.managedBy is immutable: it was "ray.io/kuberay-operator"`},
		{name: "added, as the CRD's transition rule allows", old: with(nil), svc: with(multikueue)},
		{name: "removed, as the CRD's transition rule allows", old: with(multikueue), svc: with(nil)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateRayServiceManagedBy(tc.old, tc.svc)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted; want %q", tc.want)
			}
			if got := AsFieldError(err, specPath).Error(); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestRayServiceValidationOptionsFromGates(t *testing.T) {
	if got := RayServiceValidationOptionsFromGates(nil); got != (RayServiceValidationOptions{}) {
		t.Errorf("no gates: %+v", got)
	}
	for _, on := range []bool{true, false} {
		gates := featuregate.NewFeatureGate()
		if err := gates.Add(features.FeatureGates()); err != nil {
			t.Fatal(err)
		}
		if err := gates.SetFromMap(map[string]bool{string(features.RayJobDeletionPolicy): on}); err != nil {
			t.Fatal(err)
		}
		got := RayServiceValidationOptionsFromGates(gates)
		if got.Cluster != SpecValidationOptionsFromGates(gates) || got.Cluster.AllowWorkerGroupSuspend != on {
			t.Errorf("gate %v: %+v", on, got)
		}
	}
}

func TestRayServiceValidationErrorReporting(t *testing.T) {
	for layer, reason := range map[ValidationLayer]rayv1.EventReason{
		ValidationLayerMetadata: rayv1.InvalidRayServiceMetadata,
		ValidationLayerSpec:     rayv1.InvalidRayServiceSpec,
	} {
		cause := errors.New("x")
		err := &RayServiceValidationError{Layer: layer, Err: cause}
		if err.EventReason() != reason || !errors.Is(err, cause) || err.Error() != "x" {
			t.Errorf("%s: reason %s", layer, err.EventReason())
		}
	}
}

// Every RayService sample of KubeRay v1.7.0 decodes without unknown fields
// and is accepted as it is, except those that need what Gantry does not
// implement, which are refused at the listed field.
func TestRayServiceSamples(t *testing.T) {
	samples := raytesting.SampleRayServices(t)
	if len(samples) != 16 {
		t.Errorf("%d samples, want KubeRay v1.7.0's 16", len(samples))
	}
	refused := 0
	for _, s := range samples {
		svc, err := s.Decode()
		if err != nil {
			t.Error(err)
			continue
		}
		verr := ValidateRayService(svc, rayServiceOptions())
		want, refuse := raytesting.RayServiceSamplesRefused[s.File]
		switch {
		case !refuse && verr != nil:
			t.Errorf("%s: %v", s.File, verr)
		case refuse && verr == nil:
			t.Errorf("%s: accepted, want refused at %s", s.File, want)
		case refuse:
			refused++
			if got := AsFieldError(verr.Err, specPath).Field; got != want {
				t.Errorf("%s: refused at %s, want %s (%v)", s.File, got, want, verr)
			}
		}
	}
	if refused != len(raytesting.RayServiceSamplesRefused) {
		t.Errorf("%d samples refused, want %d", refused, len(raytesting.RayServiceSamplesRefused))
	}
}

// FuzzValidateRayService: any RayService the API could hand the reconciler
// is accepted or refused without a panic, the same way every time, without
// being modified, and a refusal names a field.
func FuzzValidateRayService(f *testing.F) {
	for _, s := range raytesting.SampleRayServices(f) {
		svc, err := s.Decode()
		if err != nil {
			f.Fatal(err)
		}
		data, err := json.Marshal(svc)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, tc := range raytesting.RayServiceRuleCases() {
		data, err := json.Marshal(tc.Svc)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"metadata":{"name":"a","annotations":{"ray.io/initializing-timeout":"1e9"}},"spec":{"upgradeStrategy":{"clusterUpgradeOptions":{}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		svc := &rayv1.RayService{}
		if json.Unmarshal(data, svc) != nil {
			return
		}
		before := svc.DeepCopy()
		err := ValidateRayService(svc, rayServiceOptions())
		if !equality.Semantic.DeepEqual(before, svc) {
			t.Fatal("ValidateRayService modified the RayService")
		}
		again := ValidateRayService(svc, rayServiceOptions())
		if (err == nil) != (again == nil) || (err != nil && (err.Layer != again.Layer || err.Error() != again.Error())) {
			t.Fatalf("not deterministic: %v, then %v", err, again)
		}
		if err == nil {
			if s := svc.Spec.UpgradeStrategy; s != nil && (s.ClusterUpgradeOptions != nil ||
				(s.Type != nil && *s.Type == rayv1.RayServiceNewClusterWithIncrementalUpgrade)) {
				t.Fatal("accepted an incremental upgrade")
			}
			return
		}
		for _, fe := range FieldErrors(err.Err, specPath) {
			if fe.Field == "" || fe.Detail == "" {
				t.Fatalf("a refusal without a field or message: %#v", fe)
			}
		}
	})
}
