package trainer_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// gantryOnlyRuntimes are shipped runtimes Trainer v2.3.0 does not ship,
// with the reason Gantry keeps each (docs/trainjob.md says the same).
var gantryOnlyRuntimes = map[string]string{
	"mpi-distributed": "Trainer v2.1 shipped it and v2.3 dropped it from its manifests while keeping the MPI policy; " +
		"Gantry keeps it so that TrainJobs written against it keep running",
}

// trainerOnlyRuntimes are Trainer v2.3.0 runtimes Gantry does not ship,
// and why. The oracle still renders them.
var trainerOnlyRuntimes = map[string]string{
	"torch-distributed-with-cache": "its dataset initializer starts Trainer's data-cache service (LeaderWorkerSet, " +
		"a cache image and its own ServiceAccount), which Gantry's chart does not install",
}

// TestShippedRuntimesAreTrainers: every ClusterTrainingRuntime Gantry ships
// is Trainer v2.3.0's manifest of the same name, but for image tags
// (Trainer's kustomization leaves them untagged and its release pins them;
// Gantry pins v2.3.0 in the file).
func TestShippedRuntimesAreTrainers(t *testing.T) {
	ours := readRuntimes(t, "gantry", filepath.Join(repoRoot(t), "config", "runtimes"))
	theirs := map[string]runtimeFile{}
	for _, rt := range readRuntimes(t, "trainer", filepath.Join(trainerModuleDir(t), "manifests", "base", "runtimes")) {
		theirs[rt.name()] = rt
	}
	shipped := map[string]bool{}
	for _, rt := range ours {
		shipped[rt.name()] = true
		up, ok := theirs[rt.name()]
		if !ok {
			if _, known := gantryOnlyRuntimes[rt.name()]; !known {
				t.Errorf("%s (%s) is not a Trainer v2.3.0 runtime and not listed in gantryOnlyRuntimes", rt.name(), rt.path)
			}
			continue
		}
		got, want := untagged(rt.doc), untagged(up.doc)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s differs from Trainer v2.3.0's %s (-trainer +gantry):\n%s", rt.path, up.path, diff)
		}
	}
	for name := range theirs {
		if _, known := trainerOnlyRuntimes[name]; !shipped[name] && !known {
			t.Errorf("Trainer v2.3.0 ships %s; Gantry neither ships it nor lists it in trainerOnlyRuntimes", name)
		}
	}
}

// untagged is a copy of the document with every image's tag removed.
func untagged(doc map[string]any) any {
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			out := map[string]any{}
			for k, e := range x {
				if s, ok := e.(string); ok && k == "image" {
					if i := strings.LastIndex(s, ":"); i > strings.LastIndex(s, "/") {
						s = s[:i]
					}
					out[k] = s
					continue
				}
				out[k] = walk(e)
			}
			return out
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = walk(e)
			}
			return out
		}
		return v
	}
	return walk(doc)
}
