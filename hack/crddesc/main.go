// Command crddesc keeps a CRD's field descriptions only down to a depth:
// `kubectl explain` stays useful for the kind's own fields, while the
// descriptions of deeply embedded types (JobSet and Pod templates, repeated
// in every runtime) are dropped, which keeps the chart's Helm release under
// the API server's 1 MiB Secret limit.
//
// With -serve-deprecated VERSION it also adds VERSION to each CRD as a
// served, deprecated, non-storage version with the storage version's schema
// (without descriptions), subresources and columns. KubeRay's CRDs still
// serve ray.io/v1alpha1 that way, and the API server refuses a CRD update
// that drops a version listed in status.storedVersions: without it, a
// long-lived KubeRay CRD could not be replaced by Gantry's. Objects read or
// written as VERSION are stored as the storage version (conversion None).
//
// With -spec-json FILE it rewrites nothing and prints FILE's spec as one
// line of compact JSON: hack/sync-chart.sh writes the chart's CRDs that way.
// Helm stores every template base64-encoded in the release Secret, where
// the YAML's deep indentation compresses badly; JSON (valid YAML) keeps the
// release well under the API server's 1 MiB Secret limit.
//
// With -chart-json DIR -shared-template FILE.tpl it does the same for
// several CRDs at once, into DIR/<CRD file name>.json, and writes each
// schema part they repeat (a RayCluster spec in every Ray CRD, Pod and
// JobSet templates) once, as a named template in FILE.tpl that the specs
// include; Helm renders the same JSON (shared.go).
//
// Usage: go run ./hack/crddesc -depth N [-serve-deprecated V] FILE...   (rewrites each file)
//
//	go run ./hack/crddesc -spec-json FILE
//	go run ./hack/crddesc -chart-json DIR -shared-template FILE.tpl CRD...
//	go run ./hack/crddesc -check-rendered MANIFEST CRD...   (the chart renders each CRD's spec)
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"sigs.k8s.io/yaml"
)

func main() {
	depth := flag.Int("depth", 4, "keep descriptions of fields at most this deep (spec is 1, spec.x is 2, ...)")
	deprecated := flag.String("serve-deprecated", "", "also serve this version, deprecated, with the storage version's schema")
	specJSON := flag.String("spec-json", "", "print this CRD's spec as compact JSON and exit")
	chartJSON := flag.String("chart-json", "", "write each CRD's spec as compact JSON into this directory, the parts they repeat shared through -shared-template, and exit")
	sharedTemplate := flag.String("shared-template", "", "with -chart-json: the Helm template file that defines the shared parts")
	checkManifest := flag.String("check-rendered", "", "check that this manifest (helm template's output) renders every CRD given with its spec, and exit")
	flag.Parse()
	if *checkManifest != "" {
		if err := checkRendered(*checkManifest, flag.Args()); err != nil {
			fmt.Fprintf(os.Stderr, "crddesc: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if *chartJSON != "" {
		if *sharedTemplate == "" {
			fmt.Fprintln(os.Stderr, "crddesc: -chart-json needs -shared-template")
			os.Exit(2)
		}
		if err := writeChartJSON(*chartJSON, *sharedTemplate, flag.Args()); err != nil {
			fmt.Fprintf(os.Stderr, "crddesc: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if *specJSON != "" {
		if err := printSpecJSON(os.Stdout, *specJSON); err != nil {
			fmt.Fprintf(os.Stderr, "crddesc: %s: %v\n", *specJSON, err)
			os.Exit(1)
		}
		return
	}
	for _, path := range flag.Args() {
		if err := rewrite(path, *depth, *deprecated); err != nil {
			fmt.Fprintf(os.Stderr, "crddesc: %s: %v\n", path, err)
			os.Exit(1)
		}
	}
}

// readCRD reads a CRD and returns it and its spec.
func readCRD(path string) (crd, spec map[string]any, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	if err := yaml.Unmarshal(data, &crd); err != nil {
		return nil, nil, err
	}
	spec, _ = crd["spec"].(map[string]any)
	if versions, _ := spec["versions"].([]any); len(versions) == 0 {
		return nil, nil, fmt.Errorf("not a CRD: no spec.versions")
	}
	return crd, spec, nil
}

func rewrite(path string, depth int, deprecated string) error {
	crd, spec, err := readCRD(path)
	if err != nil {
		return err
	}
	versions := spec["versions"].([]any)
	for _, v := range versions {
		schema, _ := v.(map[string]any)["schema"].(map[string]any)
		if root, ok := schema["openAPIV3Schema"].(map[string]any); ok {
			prune(root, 0, depth)
		}
	}
	if deprecated != "" {
		v, err := deprecatedVersion(crd, versions, deprecated)
		if err != nil {
			return err
		}
		spec["versions"] = append(versions, v)
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte("---\n"), out...), 0o644)
}

func printSpecJSON(w io.Writer, path string) error {
	_, spec, err := readCRD(path)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(spec); err != nil {
		return err
	}
	_, err = w.Write(templateSafe(buf.Bytes()))
	return err
}

// templateSafe rewrites JSON so that it holds no "{{" or "}}", which Helm
// would read as template actions: between tokens a space separates two
// braces, and inside strings a brace is written as its \u escape. The JSON
// means the same.
func templateSafe(in []byte) []byte {
	out := make([]byte, 0, len(in)+len(in)/50)
	inString, escaped := false, false
	for _, c := range in {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString && c == '"':
			inString = false
		case inString && (c == '{' || c == '}'):
			out = fmt.Appendf(out, "\\u%04x", c)
			continue
		case c == '"':
			inString = true
		case (c == '{' || c == '}') && len(out) > 0 && out[len(out)-1] == c:
			out = append(out, ' ')
		}
		out = append(out, c)
	}
	return out
}

// deprecatedVersion is the storage version copied under name, served and
// deprecated, its schema without descriptions.
func deprecatedVersion(crd map[string]any, versions []any, name string) (map[string]any, error) {
	var storage map[string]any
	for _, v := range versions {
		m := v.(map[string]any)
		if m["name"] == name {
			return nil, fmt.Errorf("version %s is already generated", name)
		}
		if m["storage"] == true {
			storage = m
		}
	}
	if storage == nil {
		return nil, fmt.Errorf("no storage version")
	}
	// A deep copy through JSON; the storage version keeps its descriptions.
	data, err := yaml.Marshal(storage)
	if err != nil {
		return nil, err
	}
	var v map[string]any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	if root, ok := v["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any); ok {
		prune(root, 0, -1)
	}
	names, _ := crd["spec"].(map[string]any)["names"].(map[string]any)
	group, _ := crd["spec"].(map[string]any)["group"].(string)
	kind, _ := names["kind"].(string)
	v["name"] = name
	v["served"] = true
	v["storage"] = false
	v["deprecated"] = true
	v["deprecationWarning"] = fmt.Sprintf("%s/%s %s is deprecated; use %s/%s %s.", group, name, kind, group, storage["name"], kind)
	return v, nil
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
