package webhook

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

// corpusDir holds the invalid manifests shared with the e2e suite.
const corpusDir = "test/testdata/invalid"

// corpusCase is one file of the corpus.
type corpusCase struct {
	File       string
	Expect     string // substring of the API server's error
	RejectedBy string // "webhook" or "schema"
	Object     *unstructured.Unstructured
}

func loadCorpus(t *testing.T) []corpusCase {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(repoFile(corpusDir), "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []corpusCase
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		c := corpusCase{File: filepath.Base(p)}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "# expect: "); ok {
				c.Expect = v
			}
			if v, ok := strings.CutPrefix(line, "# rejected-by: "); ok {
				c.RejectedBy = v
			}
		}
		if !strings.HasPrefix(string(data), "# expect: ") || c.Expect == "" {
			t.Errorf("%s: the first line must be `# expect: <substring>`", c.File)
		}
		if c.RejectedBy != "webhook" && c.RejectedBy != "schema" {
			t.Errorf("%s: `# rejected-by:` must be webhook or schema, got %q", c.File, c.RejectedBy)
		}
		obj := map[string]any{}
		if err := yaml.Unmarshal(data, &obj); err != nil {
			t.Fatalf("%s: %v", c.File, err)
		}
		c.Object = &unstructured.Unstructured{Object: obj}
		out = append(out, c)
	}
	return out
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
