package builder

import (
	"cmp"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// Keys and values of the strategic merge patch format that this file writes
// or guards against.
const (
	directivePatch        = "$patch"
	directiveRetainKeys   = "$retainKeys"
	prefixSetElementOrder = "$setElementOrder/"
	prefixDeleteFromList  = "$deleteFromPrimitiveList/"
	patchDelete           = "delete"
	strategyMerge         = "merge"
	strategyRetainKeys    = "retainKeys"
	portNameField         = "name"
)

// strategicMerge returns user merged over base by the strategic merge patch
// rules of T: base is the document and user the patch.
//
// Both are typed values, so the user's JSON is not what the user wrote but
// what the typed value encodes to. Before the library applies it, the patch
// is prepared so that it says what the user meant and so that the library
// accepts it:
//
//   - null values are removed. Typed encoding writes null for nil fields
//     without omitempty (a PodSpec's containers, for one), and the library
//     would read each as "delete this field".
//   - keys spelled like directives ("$patch", "$retainKeys",
//     "$setElementOrder/…", "$deleteFromPrimitiveList/…") are removed. No
//     corev1 field has such a name, so they can only be keys of the user's
//     free-form maps (a nodeSelector, say), which the library would act on
//     instead of copying. Kubernetes refuses such keys in labels, node
//     selectors and resource lists anyway; in the few maps it does not check
//     (CSI volume attributes, flexVolume options) they are lost.
//   - see preparePatch for the rest.
func strategicMerge[T any](base, user *T) (T, error) {
	var out T
	schema, err := strategicpatch.NewPatchMetaFromStruct(out)
	if err != nil {
		return out, err
	}
	original, err := toJSONMap(base)
	if err != nil {
		return out, err
	}
	patch, err := toJSONMap(user)
	if err != nil {
		return out, err
	}
	cleanPatch(patch)
	preparePatch(original, patch, schema)
	merged, err := strategicpatch.StrategicMergeMapPatchUsingLookupPatchMeta(original, patch, schema)
	if err != nil {
		return out, err
	}
	data, err := json.Marshal(merged)
	if err != nil {
		return out, err
	}
	if err := json.Unmarshal(data, &out); err != nil {
		var zero T
		return zero, err
	}
	return out, nil
}

// toJSONMap encodes v and decodes it as a generic JSON object, with whole
// numbers as int64, as the strategic merge library does with its inputs.
func toJSONMap(v any) (map[string]any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	if err := utiljson.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	return m, nil
}

func isDirectiveKey(k string) bool {
	return k == directivePatch || k == directiveRetainKeys ||
		strings.HasPrefix(k, prefixSetElementOrder) || strings.HasPrefix(k, prefixDeleteFromList)
}

// cleanPatch removes null values and directive-like keys from every object in
// v, at any depth.
func cleanPatch(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if e == nil || isDirectiveKey(k) {
				delete(v, k)
				continue
			}
			cleanPatch(e)
		}
	case []any:
		for _, e := range v {
			cleanPatch(e)
		}
	}
}

// oneOf lists, per type, the fields of which a valid object sets at most one.
// When the user's object sets one of them, the operator's others are deleted
// from the result (a null in the patch). Volume sources are not here: the
// API gives volumes the retainKeys strategy, which prepareList applies.
var oneOf = map[reflect.Type][]string{
	reflect.TypeFor[corev1.Probe]():            jsonFieldNames(reflect.TypeFor[corev1.ProbeHandler]()),
	reflect.TypeFor[corev1.LifecycleHandler](): jsonFieldNames(reflect.TypeFor[corev1.LifecycleHandler]()),
	reflect.TypeFor[corev1.EnvVar]():           {"value", "valueFrom"},
	reflect.TypeFor[corev1.EnvVarSource]():     jsonFieldNames(reflect.TypeFor[corev1.EnvVarSource]()),
}

// jsonFieldNames returns the JSON names of t's fields.
func jsonFieldNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}

// schemaType is the Go type a schema describes, pointers removed.
func schemaType(schema strategicpatch.LookupPatchMeta) reflect.Type {
	s, ok := schema.(strategicpatch.PatchMetaFromStruct)
	if !ok || s.T == nil {
		return nil
	}
	t := s.T
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// preparePatch writes into patch the directives that make the library's
// merge of patch into original do what MergePodTemplate promises. It walks
// only where both sides have a value: where original has none, the library
// takes the patch's value as it is. schema describes both objects.
//
//   - one-of fields (oneOf): the user's choice deletes the operator's other
//     members;
//   - keyed lists: see prepareList.
//
// original is a private copy and may be changed too (see prepareList).
func preparePatch(original, patch map[string]any, schema strategicpatch.LookupPatchMeta) {
	if original == nil {
		return
	}
	for _, k := range slices.Sorted(maps.Keys(patch)) {
		switch pv := patch[k].(type) {
		case map[string]any:
			om, ok := original[k].(map[string]any)
			if !ok {
				continue
			}
			sub, _, err := schema.LookupPatchMetadataForStruct(k)
			if err != nil {
				continue
			}
			preparePatch(om, pv, sub)
		case []any:
			ol, ok := original[k].([]any)
			if !ok {
				continue
			}
			sub, meta, err := schema.LookupPatchMetadataForSlice(k)
			if err != nil {
				continue
			}
			prepareList(patch, k, ol, pv, sub, meta)
		}
	}
	if members := oneOf[schemaType(schema)]; members != nil {
		chosen := slices.ContainsFunc(members, func(m string) bool { return patch[m] != nil })
		for _, m := range members {
			if _, set := patch[m]; chosen && !set && original[m] != nil {
				patch[m] = nil
			}
		}
	}
}

// prepareList prepares the patch list pl, field k of the patch object
// parent, against the operator's list ol. Only lists the API merges by key
// need it; the library replaces any other list with the user's.
//
//   - every element of both lists gets the merge key, empty when missing
//     (only keys with omitempty can be missing, e.g. an image pull secret
//     without a name); the library refuses elements without it.
//   - elements on both sides are prepared recursively.
//   - lists with the retainKeys strategy (volumes, resource claims): each
//     user element that meets an operator element lists its own fields in
//     $retainKeys, so the operator's other fields (another volume source)
//     are dropped.
//   - container ports: a user port named like an operator port at another
//     containerPort moves that port: the operator's port is deleted
//     ($patch: delete) unless the user also lists its containerPort, and
//     the user's port takes its place in the list.
//   - order: $setElementOrder lists the operator's elements in their order
//     (each followed in place by the user's elements merged into it), then
//     the user's other elements in the user's order. The library would
//     otherwise put a user element before the operator's ones when it comes
//     first in the user's list. The patch list is sorted to match, as the
//     library requires.
func prepareList(parent map[string]any, k string, ol, pl []any, schema strategicpatch.LookupPatchMeta, meta strategicpatch.PatchMeta) {
	mergeKey := meta.GetPatchMergeKey()
	if !slices.Contains(meta.GetPatchStrategies(), strategyMerge) || mergeKey == "" || len(pl) == 0 {
		return
	}
	asMap := func(e any) map[string]any { m, _ := e.(map[string]any); return m }
	for _, e := range slices.Concat(ol, pl) {
		if m := asMap(e); m != nil {
			if _, ok := m[mergeKey]; !ok {
				m[mergeKey] = ""
			}
		}
	}
	indexOf := func(list []any, field string, v any) int {
		return slices.IndexFunc(list, func(e any) bool {
			m := asMap(e)
			return m != nil && m[field] == v
		})
	}

	// at[i] is the operator element user element i merges into, or -1;
	// place[i] is where it goes in the result: at[i], the position of the
	// port it moves, or after every operator element.
	at := make([]int, len(pl))
	place := make([]int, len(pl))
	deleted := make([]bool, len(ol))
	var deletes []any
	for i, e := range pl {
		at[i] = -1
		if m := asMap(e); m != nil {
			at[i] = indexOf(ol, mergeKey, m[mergeKey])
		}
		place[i] = at[i]
	}
	if schemaType(schema) == reflect.TypeFor[corev1.ContainerPort]() {
		for i, e := range pl {
			m := asMap(e)
			name, _ := m[portNameField].(string)
			if m == nil || name == "" {
				continue
			}
			j := indexOf(ol, portNameField, name)
			if j < 0 || j == at[i] || deleted[j] || slices.Contains(at, j) {
				continue
			}
			deleted[j] = true
			deletes = append(deletes, map[string]any{directivePatch: patchDelete, mergeKey: asMap(ol[j])[mergeKey]})
			if place[i] < 0 {
				place[i] = j
			}
		}
	}

	retain := slices.Contains(meta.GetPatchStrategies(), strategyRetainKeys)
	for i, e := range pl {
		m := asMap(e)
		if m == nil || at[i] < 0 {
			continue
		}
		preparePatch(asMap(ol[at[i]]), m, schema)
		if retain {
			var keys []any
			for _, f := range slices.Sorted(maps.Keys(m)) {
				if m[f] != nil && !strings.HasPrefix(f, "$") {
					keys = append(keys, f)
				}
			}
			m[directiveRetainKeys] = keys
		}
	}

	// Sort the user's elements by where they go; those that go after the
	// operator's keep the user's order.
	order := make([]int, len(pl))
	for i := range order {
		order[i] = i
		if place[i] < 0 {
			place[i] = len(ol) + i
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(place[a], place[b]) })
	sorted := make([]any, 0, len(pl)+len(deletes))
	var setOrder []any
	key := func(e any) any { return map[string]any{mergeKey: asMap(e)[mergeKey]} }
	next := 0
	for j, e := range ol {
		placed := false
		for ; next < len(order) && place[order[next]] == j; next++ {
			sorted = append(sorted, pl[order[next]])
			setOrder = append(setOrder, key(pl[order[next]]))
			placed = true
		}
		if !placed && !deleted[j] && asMap(e) != nil {
			setOrder = append(setOrder, key(e))
		}
	}
	for ; next < len(order); next++ {
		sorted = append(sorted, pl[order[next]])
		setOrder = append(setOrder, key(pl[order[next]]))
	}
	parent[k] = append(sorted, deletes...)
	parent[prefixSetElementOrder+k] = setOrder
}
