// Command crddesc keeps a CRD's field descriptions only down to a depth:
// `kubectl explain` stays useful for the kind's own fields, while the
// descriptions of deeply embedded types (JobSet and Pod templates, repeated
// in every runtime) are dropped, which keeps the chart's Helm release under
// the API server's 1 MiB Secret limit.
//
// Usage: go run ./hack/crddesc -depth N FILE...   (rewrites each file)
package main

import (
	"flag"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

func main() {
	depth := flag.Int("depth", 4, "keep descriptions of fields at most this deep (spec is 1, spec.x is 2, ...)")
	flag.Parse()
	for _, path := range flag.Args() {
		if err := rewrite(path, *depth); err != nil {
			fmt.Fprintf(os.Stderr, "crddesc: %s: %v\n", path, err)
			os.Exit(1)
		}
	}
}

func rewrite(path string, depth int) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var crd map[string]any
	if err := yaml.Unmarshal(data, &crd); err != nil {
		return err
	}
	spec, _ := crd["spec"].(map[string]any)
	versions, _ := spec["versions"].([]any)
	if len(versions) == 0 {
		return fmt.Errorf("not a CRD: no spec.versions")
	}
	for _, v := range versions {
		schema, _ := v.(map[string]any)["schema"].(map[string]any)
		if root, ok := schema["openAPIV3Schema"].(map[string]any); ok {
			prune(root, 0, depth)
		}
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte("---\n"), out...), 0o644)
}

// prune drops the descriptions of properties deeper than max; d is the depth
// of s itself (the root object is 0). Array items and map values are at
// their parent's depth.
func prune(s map[string]any, d, max int) {
	if d > max {
		delete(s, "description")
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for _, p := range props {
			if m, ok := p.(map[string]any); ok {
				prune(m, d+1, max)
			}
		}
	}
	for _, key := range []string{"items", "additionalProperties"} {
		if m, ok := s[key].(map[string]any); ok {
			prune(m, d, max)
		}
	}
}
