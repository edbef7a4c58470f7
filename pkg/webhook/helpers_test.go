package webhook

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/yaml"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

// testTime is the fake clock's time in defaulting tests.
var testTime = time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)

// repoFile is a path relative to the repository root.
func repoFile(rel string) string {
	return filepath.Join("..", "..", filepath.FromSlash(rel))
}

// decodeFile reads one YAML object into T.
func decodeFile[T any](t *testing.T, rel string) T {
	t.Helper()
	var obj T
	data, err := os.ReadFile(repoFile(rel))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, &obj); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return obj
}

// withServerDefaults applies the CRD default the runtime rules depend on
// (replicatedJobs[].replicas: 1), as the API server does before admission.
func withServerDefaults(spec *trainer.TrainingRuntimeSpec) {
	for i := range spec.Template.Spec.ReplicatedJobs {
		if spec.Template.Spec.ReplicatedJobs[i].Replicas == 0 {
			spec.Template.Spec.ReplicatedJobs[i].Replicas = 1
		}
	}
}

// checkAdmission asserts err is nil when want is empty, else an Invalid
// API error whose message contains want.
func checkAdmission(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("want admitted, got %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("want rejected with %q, got admitted", want)
	}
	t.Logf("rejected: %v", err)
	if !apierrors.IsInvalid(err) && !strings.Contains(want, "Internal error") {
		t.Errorf("want an Invalid API error, got %T: %v", err, err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error does not contain %q:\n%v", want, err)
	}
}
