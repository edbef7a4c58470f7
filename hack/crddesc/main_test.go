package main

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// templateSafe leaves no "{{" or "}}" for Helm and changes no meaning.
func TestTemplateSafe(t *testing.T) {
	for _, in := range []string{
		`{"status":{}}`,
		`{"a":{"b":{"c":{}}}}`,
		`[{"x":[{}]},{}]`,
		`{"description":"use {{ .Values.x }} or {}}} and \"{{\"","m":"\\"}`,
		`{"rule":"self.x == '}}'"}`,
	} {
		got := templateSafe([]byte(in))
		if bytes.Contains(got, []byte("{{")) || bytes.Contains(got, []byte("}}")) {
			t.Errorf("templateSafe(%s) = %s: still has {{ or }}", in, got)
		}
		var want, have any
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(got, &have); err != nil {
			t.Fatalf("templateSafe(%s) = %s: not JSON: %v", in, got, err)
		}
		if !reflect.DeepEqual(want, have) {
			t.Errorf("templateSafe(%s) = %s: means %v, want %v", in, got, have, want)
		}
	}
}
