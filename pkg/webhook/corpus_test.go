package webhook

import (
	"context"
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/test/testenv"
)

// loadCorpus reads test/testdata/invalid, the corpus shared with the e2e
// suite.
func loadCorpus(t *testing.T) []testenv.InvalidManifest {
	t.Helper()
	cases, err := testenv.InvalidManifests()
	if err != nil {
		t.Fatal(err)
	}
	return cases
}

func TestCorpusShape(t *testing.T) {
	cases := loadCorpus(t)
	kinds := map[string]int{}
	webhook := 0
	for _, c := range cases {
		kinds[c.Object.GetKind()]++
		if c.RejectedBy == "webhook" {
			webhook++
		}
		if c.Object.GetNamespace() != "" {
			t.Errorf("%s: corpus objects carry no namespace", c.File)
		}
	}
	if len(cases) < 36 || webhook < 30 {
		t.Errorf("corpus has %d files, %d rejected by the webhook; want at least 36 and 30", len(cases), webhook)
	}
	for _, k := range []string{"RayCluster", "TrainJob", "TrainingRuntime", "ClusterTrainingRuntime", "Controller", "NodeSet", "RestApi"} {
		if kinds[k] == 0 {
			t.Errorf("no invalid %s in the corpus", k)
		}
	}
}

// TestCorpusWebhookRejections runs every file marked "webhook" through its
// handler, after the defaults the API server would apply, with the
// prerequisites the README names.
func TestCorpusWebhookRejections(t *testing.T) {
	ctx := context.Background()
	trainJobs := trainJobValidator(t)
	defaulter := &TrainJobDefaulter{Clock: clocktesting.NewFakePassiveClock(testTime)}
	rt := trainJobs.Runtime
	for _, c := range loadCorpus(t) {
		if c.RejectedBy != "webhook" {
			continue
		}
		t.Run(c.File, func(t *testing.T) {
			c.Object.SetNamespace(testNamespace)
			var err error
			switch c.Object.GetKind() {
			case "RayCluster":
				obj := typed[rayv1.RayCluster](t, c.Object)
				_, err = (&RayClusterValidator{}).ValidateCreate(ctx, obj)
			case "TrainJob":
				obj := typed[trainer.TrainJob](t, c.Object)
				if err := defaulter.Default(ctx, obj); err != nil {
					t.Fatal(err)
				}
				_, err = trainJobs.ValidateCreate(ctx, obj)
			case "TrainingRuntime":
				defaultReplicas(c.Object)
				_, err = (&TrainingRuntimeValidator{Runtime: rt}).ValidateCreate(ctx, typed[trainer.TrainingRuntime](t, c.Object))
			case "ClusterTrainingRuntime":
				defaultReplicas(c.Object)
				_, err = (&ClusterTrainingRuntimeValidator{Runtime: rt}).ValidateCreate(ctx, typed[trainer.ClusterTrainingRuntime](t, c.Object))
			case "Controller":
				_, err = controllerValidator(t).ValidateCreate(ctx, typed[slinkyv1beta1.Controller](t, c.Object))
			case "NodeSet":
				_, err = (&NodeSetValidator{}).ValidateCreate(ctx, typed[slinkyv1beta1.NodeSet](t, c.Object))
			case "RestApi":
				_, err = (&RestApiValidator{}).ValidateCreate(ctx, typed[slinkyv1beta1.RestApi](t, c.Object))
			case "LoginSet":
				_, err = (&LoginSetValidator{}).ValidateCreate(ctx, typed[slinkyv1beta1.LoginSet](t, c.Object))
			case "Accounting":
				_, err = (&AccountingValidator{}).ValidateCreate(ctx, typed[slinkyv1beta1.Accounting](t, c.Object))
			default:
				t.Fatalf("unexpected kind %s", c.Object.GetKind())
			}
			checkAdmission(t, err, c.Expect)
		})
	}
}

// typed converts through JSON with unknown fields refused, so a typo in a
// corpus file cannot make it invalid for the wrong reason.
func typed[T any](t *testing.T, u *unstructured.Unstructured) *T {
	t.Helper()
	data, err := json.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	obj := new(T)
	if err := yaml.UnmarshalStrict(data, obj); err != nil {
		t.Fatalf("decoding %s: %v", u.GetKind(), err)
	}
	return obj
}

// defaultReplicas applies the CRD default replicas: 1 where a replicated
// job omits it, as the API server does before admission.
func defaultReplicas(u *unstructured.Unstructured) {
	jobs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "replicatedJobs")
	for _, j := range jobs {
		if m, ok := j.(map[string]any); ok {
			if _, set := m["replicas"]; !set {
				m["replicas"] = int64(1)
			}
		}
	}
	if jobs != nil {
		_ = unstructured.SetNestedSlice(u.Object, jobs, "spec", "template", "spec", "replicatedJobs")
	}
}
