package apply

import "testing"

func TestContains(t *testing.T) {
	cases := []struct {
		name       string
		have, want any
		ok         bool
	}{
		{"extra keys in have", map[string]any{"a": "x", "b": "y"}, map[string]any{"a": "x"}, true},
		{"missing key", map[string]any{"a": "x"}, map[string]any{"b": "y"}, false},
		{"different scalar", map[string]any{"a": "x"}, map[string]any{"a": "z"}, false},
		{"int64 vs float64", map[string]any{"p": int64(80)}, map[string]any{"p": float64(80)}, true},
		{"list elementwise with defaults", []any{map[string]any{"port": int64(80), "protocol": "TCP"}}, []any{map[string]any{"port": int64(80)}}, true},
		{"list length differs", []any{"a", "b"}, []any{"a"}, false},
		{"nested difference", map[string]any{"spec": map[string]any{"x": []any{"a"}}}, map[string]any{"spec": map[string]any{"x": []any{"b"}}}, false},
		{"type mismatch", map[string]any{"a": "x"}, map[string]any{"a": map[string]any{}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Contains(tc.have, tc.want); got != tc.ok {
				t.Fatalf("Contains = %v, want %v", got, tc.ok)
			}
		})
	}
}
