package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/template"
)

// render executes a spec file written by writeChartJSON with its shared
// template, as Helm does: include runs a named template into a string.
func render(t *testing.T, shared, spec string) string {
	t.Helper()
	var tpl *template.Template
	tpl = template.New("spec").Funcs(template.FuncMap{
		"include": func(name string, data any) (string, error) {
			var buf bytes.Buffer
			err := tpl.ExecuteTemplate(&buf, name, data)
			return buf.String(), err
		},
	})
	if _, err := tpl.Parse(shared); err != nil {
		t.Fatalf("the shared template does not parse: %v", err)
	}
	if _, err := tpl.New("doc").Parse(spec); err != nil {
		t.Fatalf("the spec does not parse as a template: %v", err)
	}
	var out bytes.Buffer
	if err := tpl.ExecuteTemplate(&out, "doc", nil); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// bigSchema is an object schema of n string properties, over minShared
// bytes for n of 60 or more.
func bigSchema(prefix string, n int) map[string]any {
	props := map[string]any{}
	for i := range n {
		props[fmt.Sprintf("%s%02d", prefix, i)] = map[string]any{"type": "string", "description": "with {{ braces }} and }}"}
	}
	return map[string]any{"type": "object", "properties": props}
}

func writeCRD(t *testing.T, dir, name string, spec map[string]any) string {
	t.Helper()
	crd := map[string]any{"metadata": map[string]any{"name": name}, "spec": spec}
	data, err := json.Marshal(crd)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func version(schema map[string]any) map[string]any {
	return map[string]any{"versions": []any{map[string]any{"name": "v1", "schema": map[string]any{"openAPIV3Schema": schema}}}}
}

// The CRDs written for the chart render to their specs, each repeated part
// (here one shared by three CRDs, holding a smaller one that a fourth also
// has) written once.
func TestChartJSONRendersEveryCRDAsGenerated(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	inner := bigSchema("pod", 60)
	outer := func() map[string]any {
		s := bigSchema("cluster", 60)
		s["properties"].(map[string]any)["template"] = bigSchema("pod", 60)
		return s
	}
	specs := map[string]map[string]any{
		"a": version(map[string]any{"type": "object", "properties": map[string]any{"spec": outer()}}),
		"b": version(map[string]any{"type": "object", "properties": map[string]any{"clusterSpec": outer(), "x": map[string]any{"type": "integer"}}}),
		"c": version(map[string]any{"type": "object", "properties": map[string]any{"config": outer()}}),
		"d": version(map[string]any{"type": "object", "properties": map[string]any{"podTemplate": inner}}),
		"e": version(map[string]any{"type": "object"}),
	}
	var paths []string
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		paths = append(paths, writeCRD(t, dir, name, specs[name]))
	}
	sharedPath := filepath.Join(out, "_shared.tpl")
	if err := writeChartJSON(out, sharedPath, paths); err != nil {
		t.Fatal(err)
	}
	shared, err := os.ReadFile(sharedPath)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(shared), "{{- define"); n != 2 {
		t.Errorf("%d shared parts, want 2 (the cluster spec and the pod template)", n)
	}
	total := len(shared)
	for _, p := range paths {
		data, err := os.ReadFile(filepath.Join(out, filepath.Base(p)+".json"))
		if err != nil {
			t.Fatal(err)
		}
		total += len(data)
		got := strings.TrimSpace(render(t, string(shared), string(data)))
		name := strings.TrimSuffix(filepath.Base(p), ".yaml")
		var have any
		if err := json.Unmarshal([]byte(got), &have); err != nil {
			t.Fatalf("%s renders as no JSON: %v\n%s", name, err, got)
		}
		if compact(have) != compact(specs[name]) {
			t.Errorf("%s renders as\n%s\nwant\n%s", name, compact(have), compact(specs[name]))
		}
	}
	// Written in full, the cluster spec (with its template) is in a, b and
	// c, and the pod template also in d: both once is well under half.
	full := 0
	for _, s := range specs {
		full += len(compact(s))
	}
	if total*2 > full {
		t.Errorf("the chart's specs take %d bytes, the CRDs %d: the repeated parts are not written once", total, full)
	}
}

// A CRD that shares nothing is written as before (-spec-json).
func TestChartJSONLeavesAPartOnItsOwn(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	spec := version(bigSchema("only", 80))
	p := writeCRD(t, dir, "alone", spec)
	if err := writeChartJSON(out, filepath.Join(out, "_shared.tpl"), []string{p}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(out, "alone.yaml.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := printSpecJSON(&want, p); err != nil {
		t.Fatal(err)
	}
	if string(data) != want.String() {
		t.Errorf("written as\n%s\nwant\n%s", data, want.String())
	}
}
