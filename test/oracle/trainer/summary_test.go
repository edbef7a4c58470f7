package trainer_test

import (
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// flatDiff lists the JSON paths at which a and b differ, with both values.
func flatDiff(path string, a, b any, out *[]string) {
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
		for k := range ks {
			flatDiff(path+"."+k, am[k], bm[k], out)
		}
		return
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok && len(al) == len(bl) {
		for i := range al {
			flatDiff(fmt.Sprintf("%s[%d]", path, i), al[i], bl[i], out)
		}
		return
	}
	if !reflect.DeepEqual(a, b) {
		*out = append(*out, fmt.Sprintf("%s: trainer=%.200v gantry=%.200v", path, a, b))
	}
}

// TestSummary prints, under ORACLE_SUMMARY=1, how often each path differs.
func TestSummary(t *testing.T) {
	if os.Getenv("ORACLE_SUMMARY") == "" {
		t.Skip("ORACLE_SUMMARY is not set: this prints an analysis, it checks nothing")
	}
	ctx := t.Context()
	count := map[string]int{}
	example := map[string]string{}
	crds := loadSchemas(t)
	for _, in := range corpus(t) {
		want, upErr := buildUpstream(ctx, crds["trainer"], in)
		got, gErr := buildGantry(ctx, crds["gantry"], in)
		if upErr != nil || gErr != nil {
			if (upErr == nil) != (gErr == nil) {
				fmt.Printf("REFUSAL %s: trainer=%v gantry=%v\n", in.name, upErr, gErr)
			}
			continue
		}
		normalize(in, want, got)
		var d []string
		flatDiff("", map[string]any{"o": toAny(want)}, map[string]any{"o": toAny(got)}, &d)
		for _, l := range d {
			p, _, _ := strings.Cut(l, ": ")
			count[p]++
			if _, ok := example[p]; !ok {
				example[p] = in.name + " :: " + l
			}
		}
	}
	var ps []string
	for p := range count {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	for _, p := range ps {
		fmt.Printf("%4d %s\n     e.g. %s\n", count[p], p, example[p])
	}
}

func toAny(m map[string]map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}
