package testenv

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// InvalidManifest is one file of test/testdata/invalid: an object the API
// server must refuse, with the error text it must give (see the README
// there). The admission unit and integration tests and the e2e suite all
// read the corpus through InvalidManifests.
type InvalidManifest struct {
	// Path is the file's absolute path; File its base name.
	Path, File string
	// Expect is a substring of the API server's error.
	Expect string
	// RejectedBy is "webhook" or "schema".
	RejectedBy string
	Object     *unstructured.Unstructured
}

// InvalidManifests loads the corpus and checks each file's header.
func InvalidManifests() ([]InvalidManifest, error) {
	paths, err := filepath.Glob(filepath.Join(RepoRoot(), "test", "testdata", "invalid", "*.yaml"))
	if err != nil {
		return nil, err
	}
	out := make([]InvalidManifest, 0, len(paths))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		m := InvalidManifest{Path: p, File: filepath.Base(p)}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "# expect: "); ok {
				m.Expect = v
			}
			if v, ok := strings.CutPrefix(line, "# rejected-by: "); ok {
				m.RejectedBy = v
			}
		}
		if !strings.HasPrefix(string(data), "# expect: ") || m.Expect == "" {
			return nil, fmt.Errorf("%s: the first line must be `# expect: <substring>`", m.File)
		}
		if m.RejectedBy != "webhook" && m.RejectedBy != "schema" {
			return nil, fmt.Errorf("%s: `# rejected-by:` must be webhook or schema, got %q", m.File, m.RejectedBy)
		}
		obj := map[string]any{}
		if err := yaml.Unmarshal(data, &obj); err != nil {
			return nil, fmt.Errorf("%s: %w", m.File, err)
		}
		m.Object = &unstructured.Unstructured{Object: obj}
		out = append(out, m)
	}
	return out, nil
}
