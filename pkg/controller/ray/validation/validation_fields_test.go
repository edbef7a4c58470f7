package validation

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

// TestValidationNamesTheField checks the field admission reports for a
// failure, while Error() keeps KubeRay's wording for the reconciler's events.
func TestValidationNamesTheField(t *testing.T) {
	tests := []struct {
		name      string
		mutate    func(c *rayv1.RayCluster)
		opts      SpecValidationOptions
		wantField string
		wantType  field.ErrorType
	}{
		{
			name: "negative maxReplicas of the second group",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.WorkerGroupSpecs = append(c.Spec.WorkerGroupSpecs, *group("gpu", -1))
			},
			wantField: "spec.workerGroupSpecs[1].maxReplicas", wantType: field.ErrorTypeInvalid,
		},
		{
			name:      "head env",
			mutate:    func(c *rayv1.RayCluster) { setHeadEnv(c, "A", "b"); setHeadEnv(c, "REDIS_USERNAME", "u") },
			wantField: "spec.headGroupSpec.template.spec.containers[0].env[1]", wantType: field.ErrorTypeForbidden,
		},
		{
			name: "label value",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.WorkerGroupSpecs[0].Labels = map[string]string{"ok": "v", "zone": "not valid!"}
			},
			wantField: "spec.workerGroupSpecs[0].labels[zone]", wantType: field.ErrorTypeInvalid,
		},
		{
			name:      "suspend without the gate",
			mutate:    func(c *rayv1.RayCluster) { c.Spec.WorkerGroupSpecs[0].Suspend = ptr.To(true) },
			wantField: "spec.workerGroupSpecs[0].suspend", wantType: field.ErrorTypeForbidden,
		},
		{
			name: "group priority without autoscaler v2",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.RayVersion = "2.56.0"
				c.Spec.WorkerGroupSpecs[0].Priority = ptr.To[int32](1)
			},
			wantField: "spec.workerGroupSpecs[0].priority", wantType: field.ErrorTypeInvalid,
		},
		{
			name: "the generated autoscaler command in autoscalerOptions.env",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.AutoscalerOptions = &rayv1.AutoscalerOptions{Env: []corev1.EnvVar{{Name: "A"}, {Name: "KUBERAY_GEN_AUTOSCALER_START_CMD"}}}
			},
			wantField: "spec.autoscalerOptions.env[1]", wantType: field.ErrorTypeForbidden,
		},
		{
			name: "the rocksdb backend",
			mutate: func(c *rayv1.RayCluster) {
				c.Spec.GcsFaultToleranceOptions = &rayv1.GcsFaultToleranceOptions{Backend: rayv1.GcsFTBackendRocksDB}
			},
			wantField: "spec.gcsFaultToleranceOptions.backend", wantType: field.ErrorTypeForbidden,
		},
		{
			name:      "networkPolicy",
			mutate:    func(c *rayv1.RayCluster) { c.Spec.NetworkPolicy = &rayv1.NetworkPolicyConfig{} },
			wantField: "spec.networkPolicy", wantType: field.ErrorTypeForbidden,
		},
		{
			name:      "metadata",
			mutate:    func(c *rayv1.RayCluster) { c.Name = "Upper" },
			wantField: "metadata.name", wantType: field.ErrorTypeInvalid,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := validationFixture()
			tc.mutate(c)
			verr := Validate(c, tc.opts)
			if verr == nil {
				t.Fatal("want a validation error")
			}
			fe := AsFieldError(verr.Err, field.NewPath("spec"))
			if fe.Field != tc.wantField || fe.Type != tc.wantType {
				t.Errorf("field error = %s (%s), want %s (%s)", fe.Field, fe.Type, tc.wantField, tc.wantType)
			}
			if fe.Detail != verr.Error() {
				t.Errorf("detail %q differs from the event message %q", fe.Detail, verr.Error())
			}
		})
	}
}

func TestAsFieldErrorFallsBackForPlainErrors(t *testing.T) {
	fe := AsFieldError(errors.New("boom"), field.NewPath("spec"))
	if fe.Field != "spec" || fe.Detail != "boom" {
		t.Errorf("got %v", fe)
	}
}

func TestSpecValidationOptionsFromGates(t *testing.T) {
	if got := SpecValidationOptionsFromGates(nil); got.AllowWorkerGroupSuspend {
		t.Error("no gates must not allow worker group suspend")
	}
}

func group(name string, maxReplicas int32) *rayv1.WorkerGroupSpec {
	g := validationFixture().Spec.WorkerGroupSpecs[0]
	g.GroupName = name
	g.MinReplicas = ptr.To[int32](0)
	g.MaxReplicas = ptr.To(maxReplicas)
	return &g
}
