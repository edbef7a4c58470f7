//go:build chaos

package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/raycluster"
	slurmworkload "github.com/gantry-dev/gantry/pkg/controller/slurm"
	"github.com/gantry-dev/gantry/pkg/controller/trainjob"
	"github.com/gantry-dev/gantry/test/testenv"
)

const (
	// watchInvalid is how long the manager is watched with every invalid
	// object in place.
	watchInvalid = 30 * time.Second
	// hotLoop is the most reconciles of one object in watchInvalid that
	// is not a hot loop: controller-runtime's error back-off (5 ms doubling)
	// allows about 13 in 30 s, a fixed 2 s requeue 15.
	hotLoop = 20
)

// TestInvalidObjects: every manifest of the invalid corpus
// (test/testdata/invalid) is created with admission webhooks off, as in a
// cluster where they are not installed, each in a namespace of its own.
// What the schema refuses is refused; everything else reaches the
// controllers, which must not panic, must not loop, and should say what is
// wrong with a Warning event or a condition. Reconciles per object are
// counted from the manager's own log (controller-runtime's "Reconciling",
// at verbosity 5).
func TestInvalidObjects(t *testing.T) {
	env := startControlPlane(t)
	// What the corpus's files say they need ("# Needs the …" lines): the
	// sample ClusterTrainingRuntime torch-distributed, and in the
	// namespace of a file that asks, the sample TrainingRuntime
	// mpi-distributed.
	installRuntimes(t, env.Client, "torch_distributed.yaml")
	corpus, err := testenv.InvalidManifests()
	if err != nil {
		t.Fatal(err)
	}
	m := newManagers(t, testenv.ChartKubeconfig(t, env), "--controllers", raycluster.Name+","+trainjob.Name+","+slurmworkload.Name,
		"--zap-log-level=5")
	// The objects below may land before the manager's caches sync: the
	// initial list brings them in as adds all the same.
	proc := m.start()

	var rows []invalidRow
	ctx := context.Background()
	for i, c := range corpus {
		obj := c.Object.DeepCopy()
		r := invalidRow{file: c.File, kind: obj.GetKind(), apiVersion: obj.GetAPIVersion(), name: obj.GetName()}
		if obj.GetNamespace() != "" || namespaced(obj) {
			r.ns = fmt.Sprintf("invalid-%03d", i)
			namespace(t, env.Client, r.ns)
			obj.SetNamespace(r.ns)
			if raw, err := os.ReadFile(c.Path); err == nil && strings.Contains(string(raw), "# Needs the TrainingRuntime mpi-distributed") {
				rt := sampleTrainingRuntime(t)
				rt.Namespace = r.ns
				if err := env.Client.Create(ctx, rt); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := env.Client.Create(ctx, obj); err != nil {
			r.outcome = "refused by the API server"
			if c.RejectedBy == "webhook" {
				r.outcome = "refused by the API server (its webhook rule is also in the schema)"
			}
		} else {
			r.outcome = "admitted"
		}
		rows = append(rows, r)
	}
	time.Sleep(watchInvalid)
	if proc.Exited() {
		t.Fatalf("the manager exited with the invalid objects in place; see %s", proc.Log)
	}
	counts, panics := reconcilesFromLog(t, proc.Log)
	if len(panics) > 0 {
		t.Errorf("the manager log shows panics:\n%s", strings.Join(panics, "\n"))
	}

	admitted, warned, loops := 0, 0, 0
	var b strings.Builder
	fmt.Fprintf(&b, "\n| manifest | kind | outcome | reconciles in %s | Warning event or condition |\n|---|---|---|---|---|\n", watchInvalid)
	for i := range rows {
		r := &rows[i]
		if r.outcome == "admitted" {
			admitted++
			r.reconciles = counts[r.ns+"/"+r.name]
			r.warned = hasWarning(t, env.Client, r.ns, r.kind, r.name) || statusSaysWrong(t, env.Client, r)
			if r.warned {
				warned++
			} else if hasController(r.kind) {
				t.Errorf("%s: admitted without the webhook, and neither a Warning event nor the status says what is wrong", r.file)
			}
			if r.reconciles > hotLoop {
				loops++
				t.Errorf("%s: %d reconciles in %s, a hot loop", r.file, r.reconciles, watchInvalid)
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %v |\n", r.file, r.kind, r.outcome, r.reconciles, r.warned)
	}
	t.Log(b.String())
	rep := &report{scenario: "invalid objects without webhooks"}
	rep.add("manifests", "%d", len(rows))
	rep.add("refused by the API server", "%d", len(rows)-admitted)
	rep.add("admitted", "%d", admitted)
	rep.add("with a Warning event or condition", "%d of %d admitted", warned, admitted)
	rep.add("hot loops", "%d (more than %d reconciles in %s)", loops, hotLoop, watchInvalid)
	rep.add("panics", "%d", len(panics))
	rep.print(t)
}

// sampleTrainingRuntime is config/samples' TrainingRuntime mpi-distributed.
func sampleTrainingRuntime(t *testing.T) *trainer.TrainingRuntime {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "samples", "trainer_v1alpha1_trainingruntime.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rt := &trainer.TrainingRuntime{}
	if err := yaml.UnmarshalStrict(raw, rt); err != nil {
		t.Fatal(err)
	}
	return rt
}

// hasController reports whether a controller reconciles objects of kind.
// Training runtimes have none: they are checked by their webhook, and
// against each TrainJob that uses them.
func hasController(kind string) bool {
	return kind != "ClusterTrainingRuntime" && kind != "TrainingRuntime"
}

// namespaced reports whether obj's kind lives in a namespace: all of the
// corpus's kinds do but ClusterTrainingRuntime.
func namespaced(obj *unstructured.Unstructured) bool {
	return obj.GetKind() != "ClusterTrainingRuntime"
}

// reconcilesFromLog counts controller-runtime's "Reconciling" lines per
// namespace/name in the manager's JSON log, and returns the lines that
// tell of a panic.
func reconcilesFromLog(t *testing.T, path string) (map[string]int, []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	counts := map[string]int{}
	var panics []string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<22)
	for s.Scan() {
		line := s.Text()
		if strings.Contains(line, "panic") && len(panics) < 10 {
			panics = append(panics, line)
		}
		var entry struct {
			Msg       string `json:"msg"`
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
		}
		if json.Unmarshal([]byte(line), &entry) != nil || entry.Msg != "Reconciling" {
			continue
		}
		counts[entry.Namespace+"/"+entry.Name]++
	}
	return counts, panics
}

// hasWarning reports a Warning event about the named object.
func hasWarning(t *testing.T, c client.Client, ns, kind, name string) bool {
	t.Helper()
	var events corev1.EventList
	opts := []client.ListOption{}
	if ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	if err := c.List(context.Background(), &events, opts...); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Type == corev1.EventTypeWarning && e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name {
			return true
		}
	}
	return false
}

// invalidRow is one manifest's line of the table.
type invalidRow struct {
	file, kind, apiVersion, ns, name, outcome string
	reconciles                                int
	warned                                    bool
}

// statusSaysWrong reports whether the object's status says something is
// wrong: a Ready condition that is False, a condition about failure that
// is True, or a state of failed.
func statusSaysWrong(t *testing.T, c client.Client, r *invalidRow) bool {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(r.apiVersion)
	obj.SetKind(r.kind)
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: r.ns, Name: r.name}, obj); err != nil {
		return false
	}
	if state, _, _ := unstructured.NestedString(obj.Object, "status", "state"); state == "failed" {
		return true
	}
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, raw := range conds {
		cond, _ := raw.(map[string]any)
		typ, _ := cond["type"].(string)
		status, _ := cond["status"].(string)
		if (typ == "Ready" && status == "False") || (strings.Contains(typ, "Fail") && status == "True") {
			return true
		}
	}
	return false
}
