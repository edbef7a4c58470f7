// Package layers checks the house's import rules that the compiler does not:
// which packages may depend on which. A rule broken here is a design
// change to discuss, not a test to adjust.
package layers

import (
	"io/fs"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/gantry-dev/gantry/"

// rule: no non-test package matching pkgs depends (directly or not) on a
// package with one of the forbidden prefixes.
type rule struct {
	pkgs      string
	forbidden []string
	why       string
}

var rules = []rule{
	{"./pkg/framework/...", []string{module + "api/", module + "pkg/controller/", module + "pkg/runtime"},
		"the framework names no workload: a family plugs into it, never the reverse"},
	{"./pkg/runtime/...", []string{module + "pkg/controller/"},
		"the runtime framework is below the controllers that use it"},
	{"./pkg/controller/ray/podspec/...", []string{"sigs.k8s.io/controller-runtime/pkg/client", "k8s.io/client-go/"},
		"Ray's Pod builders are pure: they never call the API server"},
	{"./pkg/controller/ray/submitter/...", []string{"sigs.k8s.io/controller-runtime/pkg/client", "k8s.io/client-go/"},
		"what a RayJob submits is built without the API server; the controller decides when to create it"},
	{"./pkg/controller/ray/raycluster/...", []string{module + "pkg/controller/ray/rayjob"},
		"the RayCluster controller knows nothing of the RayJob that may own its cluster"},
	{"./pkg/controller/ray/validation/...", []string{"sigs.k8s.io/controller-runtime/pkg/client", "k8s.io/client-go/", module + "pkg/controller/ray/raycluster"},
		"the webhook imports Ray's validation, not the controller"},
}

// deps lists each package matching pattern with every package it depends on.
func deps(t *testing.T, pattern string) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}", pattern).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list %s: %v %s", pattern, err, msg)
	}
	m := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		m[f[0]] = f[1:]
	}
	if len(m) == 0 {
		t.Fatalf("go list %s matched no package", pattern)
	}
	return m
}

// touchSources stats every Go file under root, so that go test's cache (which
// tracks the files a test opens, not those a child process reads) reruns
// this test when a source file changes.
func touchSources(t *testing.T, root string) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			_, err = d.Info()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestLayers(t *testing.T) {
	touchSources(t, filepath.Join("..", "..", "pkg"))
	for _, r := range rules {
		for pkg, ds := range deps(t, "../../"+strings.TrimPrefix(r.pkgs, "./")) {
			for _, d := range ds {
				for _, f := range r.forbidden {
					if strings.HasPrefix(d, f) {
						t.Errorf("%s depends on %s (%s)", pkg, d, r.why)
					}
				}
			}
		}
	}
}
