package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/features"
	"github.com/gantry-dev/gantry/pkg/controller/ray/validation"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

const rayJobPath = "/validate-ray-io-v1-rayjob"

// rayGates are the Ray feature gates at their defaults, with overrides.
func rayGates(t *testing.T, set map[string]bool) featuregate.FeatureGate {
	t.Helper()
	gates := featuregate.NewFeatureGate()
	if err := gates.Add(features.FeatureGates()); err != nil {
		t.Fatal(err)
	}
	if err := gates.SetFromMap(set); err != nil {
		t.Fatal(err)
	}
	return gates
}

// defaultRayJobValidator validates as the manager does with its default
// feature gates.
func defaultRayJobValidator(t *testing.T) *RayJobValidator {
	return &RayJobValidator{Options: validation.RayJobValidationOptionsFromGates(rayGates(t, nil))}
}

// Every RayJob of KubeRay v1.7.0's samples, decoded with unknown fields
// refused, is admitted unchanged, on create and on an update to itself.
func TestRayJobSamplesAdmitted(t *testing.T) {
	v := defaultRayJobValidator(t)
	samples := raytesting.SampleRayJobs(t)
	if len(samples) != 25 {
		t.Errorf("%d RayJob samples, want KubeRay v1.7.0's 25", len(samples))
	}
	for _, s := range samples {
		t.Run(s.File, func(t *testing.T) {
			job, err := s.Decode()
			if err != nil {
				t.Fatal(err)
			}
			_, err = v.ValidateCreate(context.Background(), job)
			checkAdmission(t, err, "")
			_, err = v.ValidateUpdate(context.Background(), job.DeepCopy(), job)
			checkAdmission(t, err, "")
		})
	}
}

// TestRayJobValidatorRules: every refused row of the rule table is refused
// with its field, on create and on update; every other row is admitted.
func TestRayJobValidatorRules(t *testing.T) {
	for _, tc := range raytesting.RayJobRuleCases() {
		t.Run(tc.Name, func(t *testing.T) {
			v := &RayJobValidator{Options: validation.RayJobValidationOptionsFromGates(
				rayGates(t, map[string]bool{string(features.RayJobDeletionPolicy): !tc.DeletionPolicyGateOff}))}
			want := ""
			if tc.Layer == "Metadata" || tc.Layer == "Spec" {
				want = tc.Field + ": "
			}
			_, err := v.ValidateCreate(context.Background(), tc.Job)
			checkAdmission(t, err, want)
			_, err = v.ValidateUpdate(context.Background(), tc.Job.DeepCopy(), tc.Job)
			checkAdmission(t, err, want)
		})
	}
}

func TestRayJobValidator(t *testing.T) {
	base := raytesting.BaseRayJob
	tests := []struct {
		name   string
		old    func(*rayv1.RayJob)
		mutate func(*rayv1.RayJob)
		want   string
	}{
		{
			name:   "the message names the RayJob and the field",
			mutate: func(j *rayv1.RayJob) { j.Spec.Suspend = true },
			want:   `RayJob.ray.io "rayjob-sample" is invalid: spec.suspend: Forbidden: spec.suspend requires spec.shutdownAfterJobFinishes`,
		},
		{
			name:   "the embedded cluster is checked with the RayCluster rules",
			mutate: func(j *rayv1.RayJob) { j.Spec.RayClusterSpec.WorkerGroupSpecs[0].MinReplicas = ptr.To[int32](-1) },
			want:   "spec.rayClusterSpec.workerGroupSpecs[0].minReplicas: Invalid value: -1: spec.rayClusterSpec: worker group small-group has negative minReplicas -1",
		},
		{
			name: "metadata and spec report together",
			mutate: func(j *rayv1.RayJob) {
				j.Name = strings.Repeat("x", 48)
				j.Spec.BackoffLimit = ptr.To[int32](-1)
			},
			want: `[metadata.name: Invalid value: "` + strings.Repeat("x", 48) + `": metadata.name must be no more than 47 characters (it has 48)`,
		},
		{
			name: "every deletion rule problem is reported",
			mutate: func(j *rayv1.RayJob) {
				j.Spec.DeletionStrategy = &rayv1.DeletionStrategy{DeletionRules: []rayv1.DeletionRule{
					{Policy: rayv1.DeleteCluster},
					{Policy: rayv1.DeleteSelf, Condition: rayv1.DeletionCondition{JobStatus: ptr.To(rayv1.JobStatusFailed), TTLSeconds: -1}},
				}}
			},
			want: "[spec.deletionStrategy.deletionRules[0].condition: Required value: spec.deletionStrategy.deletionRules[0].condition must set one of jobStatus and jobDeploymentStatus, " +
				"spec.deletionStrategy.deletionRules[1].condition.ttlSeconds: Invalid value: -1: spec.deletionStrategy.deletionRules[1].condition.ttlSeconds must not be negative]",
		},
		{
			name:   "managedBy another controller",
			mutate: func(j *rayv1.RayJob) { j.Spec.ManagedBy = ptr.To("example.com/mine") },
			want:   `spec.managedBy: Unsupported value: "example.com/mine"`,
		},
		{
			name:   "managedBy changed",
			old:    func(j *rayv1.RayJob) { j.Spec.ManagedBy = ptr.To(rayv1.MultiKueueController) },
			mutate: func(j *rayv1.RayJob) { j.Spec.ManagedBy = ptr.To(rayv1.KubeRayController) },
			want:   `spec.managedBy: Invalid value: "ray.io/kuberay-operator": spec.managedBy is immutable: it was "kueue.x-k8s.io/multikueue"`,
		},
		{
			name: "Kueue unsuspends",
			old: func(j *rayv1.RayJob) {
				j.Spec.ShutdownAfterJobFinishes = true
				j.Spec.Suspend = true
			},
			mutate: func(j *rayv1.RayJob) { j.Spec.ShutdownAfterJobFinishes = true },
		},
		{
			name: "the spec may change",
			mutate: func(j *rayv1.RayJob) {
				j.Spec.Entrypoint = "python other.py"
				j.Spec.RayClusterSpec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](3)
			},
		},
		{
			name: "status is not checked",
			mutate: func(j *rayv1.RayJob) {
				j.Status.JobDeploymentStatus = rayv1.JobDeploymentStatusWaiting
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := defaultRayJobValidator(t)
			job := base()
			tc.mutate(job)
			if tc.old == nil {
				_, err := v.ValidateCreate(context.Background(), job)
				checkAdmission(t, err, tc.want)
			}
			old := base()
			if tc.old != nil {
				tc.old(old)
			}
			_, err := v.ValidateUpdate(context.Background(), old, job)
			checkAdmission(t, err, tc.want)
		})
	}
}

func TestRayJobUpdateOfDeletedObjectAdmitted(t *testing.T) {
	job := raytesting.BaseRayJob()
	job.Spec.BackoffLimit = ptr.To[int32](-1)
	old := job.DeepCopy()
	job.DeletionTimestamp = ptr.To(metav1.Now())
	_, err := defaultRayJobValidator(t).ValidateUpdate(context.Background(), old, job)
	checkAdmission(t, err, "")
}

// The handler Setup registers under --controllers=raycluster answers at the
// marker's path, with the options of the manager's feature gates.
func TestRayJobWebhookRegistered(t *testing.T) {
	job := raytesting.BaseRayJob()
	job.Spec.DeletionStrategy = &rayv1.DeletionStrategy{DeletionRules: []rayv1.DeletionRule{
		{Policy: rayv1.DeleteCluster, Condition: rayv1.DeletionCondition{JobStatus: ptr.To(rayv1.JobStatusSucceeded)}},
	}}
	raw, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		workloads []string
		gate      bool
		want      string // "" admitted, "-" not registered
	}{
		{workloads: []string{WorkloadRayCluster}, gate: true},
		{workloads: []string{WorkloadRayCluster}, gate: false, want: "spec.deletionStrategy requires the RayJobDeletionPolicy feature gate"},
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
			handler, pattern = mux.Handler(&http.Request{URL: &url.URL{Path: rayJobPath}})
		}
		if tc.want == "-" {
			if pattern == rayJobPath {
				t.Errorf("%v: %s registered", tc.workloads, rayJobPath)
			}
			continue
		}
		if pattern != rayJobPath {
			t.Fatalf("%v: %s not registered", tc.workloads, rayJobPath)
		}
		review := admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request: &admissionv1.AdmissionRequest{
				UID: types.UID("1"), Kind: metav1.GroupVersionKind{Group: "ray.io", Version: "v1", Kind: "RayJob"},
				Resource: metav1.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayjobs"},
				Name:     job.Name, Namespace: job.Namespace, Operation: admissionv1.Create,
				Object: apiruntime.RawExtension{Raw: raw},
			},
		}
		body, err := json.Marshal(review)
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodPost, rayJobPath, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		var got admissionv1.AdmissionReview
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || got.Response == nil {
			t.Fatalf("%v: answer %q: %v", tc.workloads, rec.Body.String(), err)
		}
		if tc.want == "" {
			if !got.Response.Allowed {
				t.Errorf("gate %v: refused: %v", tc.gate, got.Response.Result)
			}
		} else if got.Response.Allowed || !strings.Contains(got.Response.Result.Message, tc.want) {
			t.Errorf("gate %v: allowed %v, %v; want refused with %q", tc.gate, got.Response.Allowed, got.Response.Result, tc.want)
		}
	}
}

// TestRayJobAdmissionThroughAPIServer serves the RayJob webhook to a real
// kube-apiserver with Gantry's CRDs and config/webhook/manifests.yaml
// (the vrayjob.ray.io and vrayjob-update.ray.io entries the markers
// generate): every KubeRay v1.7.0 sample is created under strict field
// validation, an invalid RayJob is denied by the webhook with its field, and
// updates are held to the same rules. Last, with the manager stopped, Ray
// creations are refused and Ray updates admitted (package doc: "Ray updates
// fail open").
func TestRayJobAdmissionThroughAPIServer(t *testing.T) {
	ctx := context.Background()
	c, stopManager := startAdmissionEnv(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "rayjobs"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}

	t.Run("KubeRay's samples are admitted unchanged", func(t *testing.T) {
		admitted := 0
		for i, s := range raytesting.SampleRayJobs(t) {
			// Several samples share a name: one namespace each.
			sampleNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("sample-%d", i)}}
			if err := c.Create(ctx, sampleNS); err != nil {
				t.Fatal(err)
			}
			// The document as it is, not s.Decode(): the API server's
			// strict field validation judges the fields against the CRD,
			// and it completes generateName itself.
			job := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(s.YAML, &job.Object); err != nil {
				t.Fatalf("%s: %v", s.File, err)
			}
			job.SetNamespace(sampleNS.Name)
			if err := c.Create(ctx, job, client.FieldValidation("Strict")); err != nil {
				t.Errorf("%s: %v", s.File, err)
				continue
			}
			admitted++
		}
		t.Logf("%d samples admitted", admitted)
		// The control: strict field validation refuses an unknown field
		// instead of pruning it.
		bogus := raytesting.BaseRayJob()
		bogus.Name, bogus.Namespace = "bogus", ns.Name
		u, err := apiruntime.DefaultUnstructuredConverter.ToUnstructured(bogus)
		if err != nil {
			t.Fatal(err)
		}
		if err := unstructured.SetNestedField(u, "x", "spec", "notAField"); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, &unstructured.Unstructured{Object: u}, client.FieldValidation("Strict")); err == nil || !strings.Contains(err.Error(), "notAField") {
			t.Errorf("an unknown field was not refused: %v", err)
		}
	})

	t.Run("an invalid RayJob is denied by the webhook", func(t *testing.T) {
		job := raytesting.BaseRayJob()
		job.Name, job.Namespace = "denied", ns.Name
		job.Spec.SubmissionMode = rayv1.SidecarMode
		job.Spec.SubmitterConfig = &rayv1.SubmitterConfig{BackoffLimit: ptr.To[int32](1)}
		err := c.Create(ctx, job)
		if err == nil || !apierrors.IsInvalid(err) ||
			!strings.Contains(err.Error(), `admission webhook "vrayjob.ray.io" denied the request`) ||
			!strings.Contains(err.Error(), "spec.submitterConfig: Forbidden: spec.submitterConfig is not supported when spec.submissionMode is SidecarMode") {
			t.Fatalf("got %v", err)
		}
	})

	t.Run("updates", func(t *testing.T) {
		job := raytesting.BaseRayJob()
		job.Name, job.Namespace = "updated", ns.Name
		job.Spec.ShutdownAfterJobFinishes = true
		job.Spec.ManagedBy = ptr.To(rayv1.MultiKueueController)
		if err := c.Create(ctx, job); err != nil {
			t.Fatal(err)
		}
		key := client.ObjectKeyFromObject(job)
		expectUpdateDenied(t, c, key, &rayv1.RayJob{}, func(j *rayv1.RayJob) {
			j.Spec.TTLSecondsAfterFinished = 60
			j.Spec.ShutdownAfterJobFinishes = false
		}, `admission webhook "vrayjob-update.ray.io" denied the request`, "spec.ttlSecondsAfterFinished: Forbidden")
		// The CRD's own rule refuses this before the webhook sees it.
		expectUpdateDenied(t, c, key, &rayv1.RayJob{}, func(j *rayv1.RayJob) {
			j.Spec.ManagedBy = ptr.To(rayv1.KubeRayController)
		}, "the managedBy field is immutable")
		got := &rayv1.RayJob{}
		if err := c.Get(ctx, key, got); err != nil {
			t.Fatal(err)
		}
		got.Spec.Suspend = true
		if err := c.Update(ctx, got); err != nil {
			t.Errorf("suspending: %v", err)
		}
	})

	t.Run("while the manager is down, Ray updates are admitted and creations refused", func(t *testing.T) {
		rc := raytesting.MakeRayCluster("autoscaled", ns.Name).WorkerGroup("small", 1).Obj()
		rc.UID = ""
		job := raytesting.BaseRayJob()
		job.Name, job.Namespace = "queued", ns.Name
		for _, obj := range []client.Object{rc, job} {
			if err := c.Create(ctx, obj); err != nil {
				t.Fatal(err)
			}
		}
		// A group name used twice, which the webhook refuses while it is up.
		duplicateGroup := func(rc *rayv1.RayCluster) {
			rc.Spec.WorkerGroupSpecs = append(rc.Spec.WorkerGroupSpecs, *rc.Spec.WorkerGroupSpecs[0].DeepCopy())
		}
		expectUpdateDenied(t, c, client.ObjectKeyFromObject(rc), &rayv1.RayCluster{}, duplicateGroup,
			`admission webhook "vraycluster-update.ray.io" denied the request`)

		stopManager()

		// The Ray autoscaler's patch: replicas and workersToDelete.
		patch := client.MergeFrom(rc.DeepCopy())
		rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](3)
		rc.Spec.WorkerGroupSpecs[0].ScaleStrategy.WorkersToDelete = []string{"autoscaled-small-worker-x"}
		if err := c.Patch(ctx, rc, patch); err != nil {
			t.Errorf("the autoscaler's patch while the manager is down: %v", err)
		}
		// Kueue's suspend toggle.
		patch = client.MergeFrom(job.DeepCopy())
		job.Spec.Suspend = true
		if err := c.Patch(ctx, job, patch); err != nil {
			t.Errorf("Kueue's suspend while the manager is down: %v", err)
		}
		// Unvalidated: the reconciler meets it as KubeRay's does without a
		// webhook (pkg/controller/ray/raycluster TestInvalidSpecOnARunningClusterLeavesItsStatusAndPods).
		got := &rayv1.RayCluster{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(rc), got); err != nil {
			t.Fatal(err)
		}
		duplicateGroup(got)
		if err := c.Update(ctx, got); err != nil {
			t.Errorf("an update while the manager is down: %v", err)
		}

		for _, tc := range []struct {
			obj  client.Object
			hook string
		}{
			{raytesting.MakeRayCluster("new-cluster", ns.Name).Obj(), "vraycluster.ray.io"},
			{raytesting.BaseRayJob(), "vrayjob.ray.io"},
		} {
			tc.obj.SetUID("")
			tc.obj.SetName("created-while-down")
			tc.obj.SetNamespace(ns.Name)
			err := c.Create(ctx, tc.obj)
			if err == nil || !strings.Contains(err.Error(), `failed calling webhook "`+tc.hook+`"`) {
				t.Errorf("%T created while the manager is down: got %v, want a failure calling %s", tc.obj, err, tc.hook)
			}
		}
	})
}
