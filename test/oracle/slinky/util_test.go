package slinky_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// readDocs reads the YAML documents of a file, skipping empty ones.
func readDocs(path string) ([]map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseDocs(string(data))
}

func parseDocs(text string) ([]map[string]any, error) {
	var out []map[string]any
	for _, part := range strings.Split("\n"+text, "\n---") {
		var doc map[string]any
		if err := yaml.Unmarshal([]byte(part), &doc); err != nil {
			return nil, err
		}
		if len(doc) > 0 {
			out = append(out, doc)
		}
	}
	return out, nil
}

// deepCopy copies a JSON-shaped value.
func deepCopy(m map[string]any) map[string]any {
	raw, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		panic(err)
	}
	return out
}

// toMap is o as JSON.
func toMap(o any) map[string]any {
	raw, err := json.Marshal(o)
	if err != nil {
		panic(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		panic(err)
	}
	return m
}

// fromMap decodes a JSON-shaped value into obj.
func fromMap(m map[string]any, obj any) error {
	raw, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, obj)
}

// storeStringData moves a Secret's stringData into data, as the API
// server stores it.
func storeStringData(secret map[string]any) {
	sd, _ := secret["stringData"].(map[string]any)
	if len(sd) == 0 {
		delete(secret, "stringData")
		return
	}
	data, _ := secret["data"].(map[string]any)
	if data == nil {
		data = map[string]any{}
	}
	for k, v := range sd {
		data[k] = base64.StdEncoding.EncodeToString([]byte(fmt.Sprint(v)))
	}
	secret["data"] = data
	delete(secret, "stringData")
}

// path walks nested maps; nil when a step is missing.
func path(m map[string]any, keys ...string) any {
	var cur any = m
	for _, k := range keys {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[k]
	}
	return cur
}

// mapAt is the map at keys, nil when there is none.
func mapAt(m map[string]any, keys ...string) map[string]any {
	out, _ := path(m, keys...).(map[string]any)
	return out
}

// listAt is the list at keys, nil when there is none.
func listAt(m map[string]any, keys ...string) []any {
	out, _ := path(m, keys...).([]any)
	return out
}

func str(m map[string]any, keys ...string) string {
	s, _ := path(m, keys...).(string)
	return s
}

// named is the element of a list of objects whose "name" is name.
func named(list []any, name string) map[string]any {
	for _, e := range list {
		if m, ok := e.(map[string]any); ok && m["name"] == name {
			return m
		}
	}
	return nil
}

// removeNamed drops the elements named name; it reports whether one was.
func removeNamed(m map[string]any, name string, keys ...string) bool {
	list := listAt(m, keys...)
	if list == nil {
		return false
	}
	out := make([]any, 0, len(list))
	for _, e := range list {
		if em, ok := e.(map[string]any); ok && em["name"] == name {
			continue
		}
		out = append(out, e)
	}
	if len(out) == len(list) {
		return false
	}
	setAt(m, out, keys...)
	return true
}

// setAt sets the value at keys, making the maps on the way.
func setAt(m map[string]any, v any, keys ...string) {
	cur := m
	for _, k := range keys[:len(keys)-1] {
		next, ok := cur[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[k] = next
		}
		cur = next
	}
	cur[keys[len(keys)-1]] = v
}

// deleteAt deletes the value at keys; it reports whether there was one.
func deleteAt(m map[string]any, keys ...string) bool {
	parent := mapAt(m, keys[:len(keys)-1]...)
	if len(keys) == 1 {
		parent = m
	}
	if parent == nil {
		return false
	}
	if _, ok := parent[keys[len(keys)-1]]; !ok {
		return false
	}
	delete(parent, keys[len(keys)-1])
	return true
}

// flatDiff lists the JSON paths at which a and b differ, with both values.
func flatDiff(p string, a, b any, out *[]string) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		ks := map[string]bool{}
		for k := range am {
			ks[k] = true
		}
		for k := range bm {
			ks[k] = true
		}
		keys := make([]string, 0, len(ks))
		for k := range ks {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			flatDiff(p+"."+k, am[k], bm[k], out)
		}
		return
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok && len(al) == len(bl) {
		for i := range al {
			flatDiff(fmt.Sprintf("%s[%d]", p, i), al[i], bl[i], out)
		}
		return
	}
	if !reflect.DeepEqual(a, b) {
		*out = append(*out, fmt.Sprintf("%s: slinky=%s gantry=%s", p, short(a), short(b)))
	}
}

func short(v any) string {
	if v == nil {
		return "<none>"
	}
	raw, _ := json.Marshal(v)
	s := string(raw)
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return s
}
