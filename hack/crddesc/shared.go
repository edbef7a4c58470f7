package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// The chart's CRDs repeat large parts of their schemas: a RayCluster's spec
// is also a RayJob's rayClusterSpec and a RayService's rayClusterConfig, in
// ray.io/v1 and again in v1alpha1, and every one holds Pod templates; the
// two Trainer runtimes hold the same JobSet template. Helm stores every
// template file base64-encoded in the release Secret, where the copies
// compress badly. With -chart-json the CRDs' specs are written with each
// repeated part once, as a named template that the specs (and larger
// parts) include; the manifest Helm renders is the same JSON.

// minShared is the smallest part, in bytes of compact JSON, worth a named
// template of its own.
const minShared = 1500

// placeholderPrefix marks, inside a string value, a part taken out into a
// named template; no CRD text holds a NUL.
const placeholderPrefix = "\x00"

// sharedPrefix names the chart's templates for shared schema parts.
const sharedPrefix = "gantry.crdSchema."

// compact is v as compact JSON, keys sorted.
func compact(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // values read from YAML always encode
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// serialize is v as compact JSON, as compact writes it, built from its
// children's; visit sees every object and array with its JSON.
func serialize(v any, visit func(v any, s string)) string {
	var b strings.Builder
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(compact(k))
			b.WriteByte(':')
			b.WriteString(serialize(t[k], visit))
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, c := range t {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(serialize(c, visit))
		}
		b.WriteByte(']')
	default:
		return compact(v)
	}
	visit(v, b.String())
	return b.String()
}

// shareSchemas replaces, in docs, every object or array of at least
// minShared bytes that occurs more than once (in docs, or inside another
// shared part) with a placeholder string, the part that saves the most
// bytes first, and returns the parts by template name. A part may hold the
// placeholders of smaller parts.
func shareSchemas(docs []any) ([]any, map[string]any) {
	defs := map[string]any{}
	for {
		counts := map[string]int{}
		visit := func(_ any, s string) {
			if len(s) >= minShared {
				counts[s]++
			}
		}
		for _, d := range docs {
			serialize(d, visit)
		}
		for _, d := range defs {
			// A part's own body is written once; what it holds counts.
			for _, c := range children(d) {
				serialize(c, visit)
			}
		}
		best, bestSaved := "", 0
		for s, n := range counts {
			saved := len(s) * (n - 1)
			if n > 1 && (saved > bestSaved || saved == bestSaved && s < best) {
				best, bestSaved = s, saved
			}
		}
		if best == "" {
			return docs, defs
		}
		sum := sha256.Sum256([]byte(best))
		name := sharedPrefix + hex.EncodeToString(sum[:6])
		var part any
		if err := json.Unmarshal([]byte(best), &part); err != nil {
			panic(err)
		}
		for i := range docs {
			docs[i], _ = replaceShared(docs[i], best, placeholderPrefix+name)
		}
		for n, d := range defs {
			defs[n] = replaceInside(d, best, placeholderPrefix+name)
		}
		defs[name] = part
	}
}

// children are the values of an object or the items of an array.
func children(v any) []any {
	switch t := v.(type) {
	case map[string]any:
		out := make([]any, 0, len(t))
		for _, c := range t {
			out = append(out, c)
		}
		return out
	case []any:
		return t
	}
	return nil
}

// replaceShared is v with every subtree whose compact JSON is part replaced
// by the string placeholder; it also returns v's JSON before.
func replaceShared(v any, part, placeholder string) (any, string) {
	var s string
	switch t := v.(type) {
	case map[string]any, []any:
		s = serialize(t, func(any, string) {})
		if len(s) < len(part) {
			return v, s
		}
		if s == part {
			return placeholder, s
		}
		return replaceInside(v, part, placeholder), s
	}
	return v, s
}

// replaceInside replaces part in v's children.
func replaceInside(v any, part, placeholder string) any {
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			t[k], _ = replaceShared(c, part, placeholder)
		}
	case []any:
		for i, c := range t {
			t[i], _ = replaceShared(c, part, placeholder)
		}
	}
	return v
}

// templateJSON is v as one line of JSON for a Helm template: no "{{" or
// "}}" of its own (templateSafe), and each placeholder an include of its
// named template.
func templateJSON(v any) []byte {
	out := templateSafe([]byte(compact(v)))
	// encoding/json writes the placeholder's NUL as \u0000.
	for {
		i := bytes.Index(out, []byte(`"\u0000`+sharedPrefix))
		if i < 0 {
			return out
		}
		j := bytes.IndexByte(out[i+1:], '"')
		name := string(out[i+len(`"\u0000`) : i+1+j])
		out = append(out[:i:i], append([]byte(fmt.Sprintf(` {{ include %q . }} `, name)), out[i+2+j:]...)...)
	}
}

// writeChartJSON writes each CRD's spec as outDir/<file name>.json and the
// shared parts as the named templates of sharedTemplate.
func writeChartJSON(outDir, sharedTemplate string, paths []string) error {
	docs := make([]any, len(paths))
	for i, p := range paths {
		_, spec, err := readCRD(p)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		docs[i] = spec
	}
	docs, defs := shareSchemas(docs)
	for i, p := range paths {
		out := append(templateJSON(docs[i]), '\n')
		if err := os.WriteFile(filepath.Join(outDir, filepath.Base(p)+".json"), out, 0o644); err != nil {
			return err
		}
	}
	names := make([]string, 0, len(defs))
	for n := range defs {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	buf.WriteString("{{- /* Generated by hack/sync-chart.sh (hack/crddesc -chart-json): the schema parts\n" +
		"several CRDs repeat, each written once and included where it occurs. Do not edit. */ -}}\n")
	for _, n := range names {
		fmt.Fprintf(&buf, "{{- define %q -}}\n", n)
		buf.Write(templateJSON(defs[n]))
		buf.WriteString("\n{{- end }}\n")
	}
	return os.WriteFile(sharedTemplate, buf.Bytes(), 0o644)
}

// checkRendered compares the spec of every CRD in paths with the spec of
// the CRD of the same name in manifest (a multi-document YAML stream, as
// `helm template` prints): the chart must render each CRD as generated.
func checkRendered(manifest string, paths []string) error {
	data, err := os.ReadFile(manifest)
	if err != nil {
		return err
	}
	rendered := map[string]string{}
	for _, doc := range strings.Split(string(data), "\n---") {
		var obj struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Spec map[string]any `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			return fmt.Errorf("%s: %w", manifest, err)
		}
		if obj.Kind == "CustomResourceDefinition" {
			rendered[obj.Metadata.Name] = compact(obj.Spec)
		}
	}
	for _, p := range paths {
		crd, spec, err := readCRD(p)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		name, _ := crd["metadata"].(map[string]any)["name"].(string)
		got, ok := rendered[name]
		if !ok {
			return fmt.Errorf("%s: CRD %s is not rendered", manifest, name)
		}
		if want := compact(spec); got != want {
			i := 0
			for i < len(got) && i < len(want) && got[i] == want[i] {
				i++
			}
			from := max(0, i-80)
			return fmt.Errorf("CRD %s is rendered with another spec than %s, from byte %d:\n  rendered:  …%s…\n  generated: …%s…",
				name, p, i, got[from:min(len(got), i+80)], want[from:min(len(want), i+80)])
		}
	}
	return nil
}
