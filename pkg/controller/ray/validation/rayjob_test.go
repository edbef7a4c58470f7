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

func rayJobOptions(gateOff bool) RayJobValidationOptions {
	return RayJobValidationOptions{
		Cluster:               SpecValidationOptions{AllowWorkerGroupSuspend: !gateOff},
		AllowDeletionStrategy: !gateOff,
	}
}

// TestRayJobRules runs the rule table (raytesting.RayJobRuleCases, which
// the KubeRay oracle runs too): one refused row per rule, its layer, the
// field admission reports and a message that names the field, and the rows
// on the accepting side of each rule.
func TestRayJobRules(t *testing.T) {
	cases := raytesting.RayJobRuleCases()
	refused := 0
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			job := tc.Job
			before := job.DeepCopy()
			verr := ValidateRayJob(job, rayJobOptions(tc.DeletionPolicyGateOff))
			if !equality.Semantic.DeepEqual(before, job) {
				t.Fatal("ValidateRayJob modified the RayJob")
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
			if len(errs) == 0 {
				t.Fatal("no field error")
			}
			if errs[0].Field != tc.Field {
				t.Errorf("field %s, want %s", errs[0].Field, tc.Field)
			}
			if !strings.Contains(errs[0].Detail, tc.Mentions) {
				t.Errorf("message %q does not mention %q", errs[0].Detail, tc.Mentions)
			}
			if !strings.Contains(verr.Error(), errs[0].Detail) {
				t.Errorf("Error() %q does not carry the message %q", verr.Error(), errs[0].Detail)
			}
		})
		if tc.Layer != "" {
			refused++
		}
	}
	if refused < 50 || len(cases)-refused < 30 {
		t.Errorf("%d refused and %d accepted rows; the table lost rows", refused, len(cases)-refused)
	}
}

// Each layer's function refuses on its own what ValidateRayJob attributes
// to it.
func TestRayJobLayersAlone(t *testing.T) {
	for _, tc := range raytesting.RayJobRuleCases() {
		opts := rayJobOptions(tc.DeletionPolicyGateOff)
		got := map[string]bool{
			"Metadata": ValidateRayJobMetadata(tc.Job.ObjectMeta) != nil,
			"Spec":     ValidateRayJobSpec(tc.Job, opts) != nil,
			"Status":   ValidateRayJobStatus(tc.Job) != nil,
		}
		for layer, refused := range got {
			if want := layer == tc.Layer; refused != want {
				t.Errorf("%s: %s layer refused = %v, want %v", tc.Name, layer, refused, want)
			}
		}
	}
}

// A spec with several problems gets the message of the first rule in
// KubeRay's order, the suspend rule.
func TestRayJobSpecOrder(t *testing.T) {
	job := raytesting.BaseRayJob()
	job.Spec.Suspend = true
	job.Spec.BackoffLimit = ptr.To[int32](-1)
	job.Spec.RuntimeEnvYAML = "pip: ["
	job.Spec.RayClusterSpec = nil
	errs := FieldErrors(ValidateRayJobSpec(job, rayJobOptions(false)), specPath)
	if len(errs) != 1 || errs[0].Field != "spec.suspend" {
		t.Fatalf("got %v, want one error at spec.suspend", errs)
	}
}

// Deletion rules are reported all at once, in rule order, each at its own
// field.
func TestRayJobDeletionRulesReportEveryProblem(t *testing.T) {
	job := raytesting.BaseRayJob()
	job.Spec.EntrypointNumCpus = 1
	job.Spec.RayClusterSpec.EnableInTreeAutoscaling = ptr.To(true)
	failed := func(p rayv1.DeletionPolicyType, ttl int32) rayv1.DeletionRule {
		return rayv1.DeletionRule{Policy: p, Condition: rayv1.DeletionCondition{JobStatus: ptr.To(rayv1.JobStatusFailed), TTLSeconds: ttl}}
	}
	job.Spec.DeletionStrategy = &rayv1.DeletionStrategy{DeletionRules: []rayv1.DeletionRule{
		{Policy: rayv1.DeleteCluster},   // 0: no status
		failed(rayv1.DeleteWorkers, 0),  // 1: autoscaling
		failed(rayv1.DeleteCluster, 60), // 2
		failed(rayv1.DeleteCluster, 90), // 3: duplicate of 2
		failed(rayv1.DeleteSelf, 30),    // 4: before the cluster (2)
		{Policy: rayv1.DeleteNone, Condition: rayv1.DeletionCondition{JobStatus: ptr.To(rayv1.JobStatusSucceeded), TTLSeconds: -1}}, // 5
	}}
	err := ValidateRayJobSpec(job, rayJobOptions(false))
	errs := FieldErrors(err, specPath)
	var got []string
	for _, e := range errs {
		got = append(got, e.Field)
	}
	want := []string{
		"spec.deletionStrategy.deletionRules[0].condition",
		"spec.deletionStrategy.deletionRules[1].policy",
		"spec.deletionStrategy.deletionRules[3]",
		"spec.deletionStrategy.deletionRules[5].condition.ttlSeconds",
		"spec.deletionStrategy.deletionRules[4].condition.ttlSeconds",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("fields:\n%v\nwant:\n%v\n(%v)", got, want, err)
	}
	if errs[2].Type != field.ErrorTypeDuplicate {
		t.Errorf("duplicate reported as %s", errs[2].Type)
	}
	if !strings.Contains(errs[4].Detail, "(30, DeleteSelf on jobStatus FAILED) must be at least that of deletionRules[2] (60, DeleteCluster)") {
		t.Errorf("order message: %s", errs[4].Detail)
	}
	// The same RayJob gives the same message every time.
	for range 20 {
		if again := ValidateRayJobSpec(job, rayJobOptions(false)); again.Error() != err.Error() {
			t.Fatalf("not deterministic:\n%v\n%v", err, again)
		}
	}
}

// Errors of the embedded cluster are reported under spec.rayClusterSpec,
// in the field and in the message; annotation errors stay the RayJob's.
func TestRayJobClusterErrorsMoveUnderRayClusterSpec(t *testing.T) {
	job := raytesting.BaseRayJob()
	job.Spec.RayClusterSpec.WorkerGroupSpecs[0].MaxReplicas = ptr.To[int32](-3)
	err := ValidateRayJobSpec(job, rayJobOptions(false))
	fe := AsFieldError(err, specPath)
	if fe.Field != "spec.rayClusterSpec.workerGroupSpecs[0].maxReplicas" || fe.Type != field.ErrorTypeInvalid || fe.BadValue != int32(-3) {
		t.Errorf("got %#v", fe)
	}
	if fe.Detail != "spec.rayClusterSpec: worker group small-group has negative maxReplicas -3" {
		t.Errorf("message %q", fe.Detail)
	}
}

func TestValidateRayJobManagedBy(t *testing.T) {
	with := func(m *string) *rayv1.RayJob {
		j := raytesting.BaseRayJob()
		j.Spec.ManagedBy = m
		return j
	}
	kuberay, multikueue := ptr.To(rayv1.KubeRayController), ptr.To(rayv1.MultiKueueController)
	tests := []struct {
		name     string
		old, job *rayv1.RayJob
		want     string
	}{
		{name: "unset", job: with(nil)},
		{name: "KubeRay's", job: with(kuberay)},
		{name: "MultiKueue's", job: with(multikueue)},
		{name: "another controller", job: with(ptr.To("example.com/mine")),
			want: `spec.managedBy: Unsupported value: "example.com/mine": supported values: "ray.io/kuberay-operator", "kueue.x-k8s.io/multikueue"`},
		{name: "kept", old: with(multikueue), job: with(multikueue)},
		{name: "changed", old: with(kuberay), job: with(multikueue),
			want: `spec.managedBy: Invalid value: "kueue.x-k8s.io/multikueue": spec.managedBy is immutable: it was "ray.io/kuberay-operator"`},
		{name: "added, as the CRD's transition rule allows", old: with(nil), job: with(multikueue)},
		{name: "removed, as the CRD's transition rule allows", old: with(multikueue), job: with(nil)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateRayJobManagedBy(tc.old, tc.job)
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

func TestRayJobValidationOptionsFromGates(t *testing.T) {
	if got := RayJobValidationOptionsFromGates(nil); got != (RayJobValidationOptions{}) {
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
		got := RayJobValidationOptionsFromGates(gates)
		if got.AllowDeletionStrategy != on || got.Cluster != SpecValidationOptionsFromGates(gates) {
			t.Errorf("gate %v: %+v", on, got)
		}
	}
}

func TestRayJobValidationErrorReporting(t *testing.T) {
	for layer, reason := range map[ValidationLayer]rayv1.EventReason{
		ValidationLayerMetadata: rayv1.InvalidRayJobMetadata,
		ValidationLayerSpec:     rayv1.InvalidRayJobSpec,
		ValidationLayerStatus:   rayv1.InvalidRayJobStatus,
	} {
		cause := errors.New("x")
		err := &RayJobValidationError{Layer: layer, Err: cause}
		if err.EventReason() != reason || !errors.Is(err, cause) || err.Error() != "x" {
			t.Errorf("%s: reason %s", layer, err.EventReason())
		}
	}
	if FieldErrors(nil, specPath) != nil {
		t.Error("FieldErrors(nil) is not empty")
	}
	if errs := FieldErrors(errors.New("plain"), specPath); len(errs) != 1 || errs[0].Field != "spec" || errs[0].Detail != "plain" {
		t.Errorf("a plain error: %v", errs)
	}
}

// Every RayJob sample of KubeRay v1.7.0 decodes without unknown fields and
// is accepted as it is.
func TestRayJobSamplesValid(t *testing.T) {
	samples := raytesting.SampleRayJobs(t)
	if len(samples) < 25 {
		t.Fatalf("%d samples, want KubeRay v1.7.0's 25", len(samples))
	}
	for _, s := range samples {
		job, err := s.Decode()
		if err != nil {
			t.Error(err)
			continue
		}
		if verr := ValidateRayJob(job, rayJobOptions(false)); verr != nil {
			t.Errorf("%s: %v", s.File, verr)
		}
	}
}

// FuzzValidateRayJob: any RayJob the API could hand the reconciler is
// accepted or refused without a panic, the same way every time, without
// being modified, and a refusal names a field.
func FuzzValidateRayJob(f *testing.F) {
	for _, s := range raytesting.SampleRayJobs(f) {
		job, err := s.Decode()
		if err != nil {
			f.Fatal(err)
		}
		data, err := json.Marshal(job)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, false)
	}
	for _, tc := range raytesting.RayJobRuleCases() {
		data, err := json.Marshal(tc.Job)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, tc.DeletionPolicyGateOff)
	}
	f.Add([]byte(`{"metadata":{"name":"a"},"spec":{"submissionMode":"SidecarMode","deletionStrategy":{"deletionRules":[{"policy":"DeleteWorkers","condition":{}}]}}}`), false)
	f.Fuzz(func(t *testing.T, data []byte, gateOff bool) {
		job := &rayv1.RayJob{}
		if json.Unmarshal(data, job) != nil {
			return
		}
		opts := rayJobOptions(gateOff)
		before := job.DeepCopy()
		err := ValidateRayJob(job, opts)
		if !equality.Semantic.DeepEqual(before, job) {
			t.Fatal("ValidateRayJob modified the RayJob")
		}
		again := ValidateRayJob(job, opts)
		if (err == nil) != (again == nil) || (err != nil && (err.Layer != again.Layer || err.Error() != again.Error())) {
			t.Fatalf("not deterministic: %v, then %v", err, again)
		}
		if err == nil {
			if job.Spec.RayClusterSpec == nil && job.Spec.ClusterSelector[rayv1.RayJobClusterSelectorKey] == "" {
				t.Fatal("accepted a RayJob without a cluster")
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
