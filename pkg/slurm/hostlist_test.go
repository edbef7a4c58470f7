package slurm

import (
	"reflect"
	"testing"
)

func TestExpandHostlist(t *testing.T) {
	tests := []struct {
		expr    string
		want    []string
		wantErr bool
	}{
		{expr: "", want: nil},
		{expr: "node-0", want: []string{"node-0"}},
		{expr: "a,b", want: []string{"a", "b"}},
		{expr: "gpu-[1-3]", want: []string{"gpu-1", "gpu-2", "gpu-3"}},
		{expr: "gpu-[01-03,7]", want: []string{"gpu-01", "gpu-02", "gpu-03", "gpu-7"}},
		{expr: "n[8-10]", want: []string{"n8", "n9", "n10"}},
		{expr: "cpu-[1-2],gpu-0", want: []string{"cpu-1", "cpu-2", "gpu-0"}},
		{expr: "rack[1-2]-n[1-2]", want: []string{"rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"}},
		{expr: "n[1-2]x", want: []string{"n1x", "n2x"}},
		{expr: "n[3-1]", wantErr: true},
		{expr: "n[a-b]", wantErr: true},
		{expr: "n[1-2", wantErr: true},
		{expr: "n1-2]", wantErr: true},
		{expr: "n[0-99999999999]", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			got, err := ExpandHostlist(tc.expr)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
