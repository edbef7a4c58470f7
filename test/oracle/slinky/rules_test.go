package slinky_test

import (
	"fmt"
	"sort"
	"strings"
)

// class is why a rule may remove a difference.
type class int

const (
	// normalized: not a difference in what the cluster runs — Gantry's
	// own by design (its label, its hash values, ...) or two spellings
	// the API server stores alike.
	normalized class = iota
	// upstreamChange (a): Slinky changed it between v1.1.0, which the
	// oracle runs, and v1.2.1, which Gantry follows; the rule turns
	// v1.1.0's output into v1.2.1's, citing the v1.2.1 source.
	upstreamChange
	// deliberate (b): Gantry differs on purpose, as docs/slurm.md says.
	deliberate
	// knownDefect (c): Gantry is wrong; listed so the run says so until it
	// is fixed (see knownDefects).
	knownDefect
)

func (c class) String() string {
	return [...]string{"normalized", "upstream v1.1.0→v1.2.1", "deliberate", "KNOWN DEFECT"}[c]
}

// rule removes one difference, and only that one: apply edits the two
// sides' objects of one key and reports whether it changed anything.
type rule struct {
	name   string
	class  class
	source string // where the fact is: a v1.2.1 file:line, a docs/slurm.md section
	apply  func(x *objectPair) bool
	// onlyOn names what, outside the cases, the rule depends on: such a
	// rule may remove nothing (every other rule must remove something).
	onlyOn string
}

// objectPair is one object of one case, from both sides; either may be
// nil (the side built no such object) and either may have failed (err).
type objectPair struct {
	c          *outcome
	key        string // "Kind/name"
	kind       string
	s, g       map[string]any
	sErr, gErr string
}

// input is the case's object of kind and name as Gantry stores it (the
// case's input; both sides were built from it).
func (x *objectPair) input(kind, name string) map[string]any {
	for _, d := range x.c.gantryDocs {
		if d["kind"] == kind && str(d, "metadata", "name") == name {
			return d
		}
	}
	return nil
}

// inputs are the case's objects of kind.
func (x *objectPair) inputs(kind string) []map[string]any {
	var out []map[string]any
	for _, d := range x.c.gantryDocs {
		if d["kind"] == kind {
			out = append(out, d)
		}
	}
	return out
}

// both applies f to each side's object that exists, and reports whether
// either changed.
func (x *objectPair) both(f func(m map[string]any) bool) bool {
	changed := false
	if x.s != nil {
		changed = f(x.s) || changed
	}
	if x.g != nil {
		changed = f(x.g) || changed
	}
	return changed
}

// podTemplateMeta and podSpec are the pod metadata and spec inside an
// object: the Pod's own, or a workload's template.
func podTemplateMeta(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	if m["kind"] == "Pod" {
		return mapAt(m, "metadata")
	}
	return mapAt(m, "spec", "template", "metadata")
}

func podSpec(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	if m["kind"] == "Pod" {
		return mapAt(m, "spec")
	}
	return mapAt(m, "spec", "template", "spec")
}

// containers are the containers and init containers of a pod spec.
func containers(spec map[string]any) []map[string]any {
	var out []map[string]any
	for _, k := range []string{"initContainers", "containers"} {
		for _, c := range listAt(spec, k) {
			if m, ok := c.(map[string]any); ok {
				out = append(out, m)
			}
		}
	}
	return out
}

func container(spec map[string]any, name string) map[string]any {
	if c := named(listAt(spec, "containers"), name); c != nil {
		return c
	}
	return named(listAt(spec, "initContainers"), name)
}

// ruleSet is every rule, in the order they apply: normalizations first,
// then upstream changes, deliberate differences, known defects.
func ruleSet() []rule {
	var out []rule
	for _, group := range [][]rule{normalizations, upstreamChanges, deliberateDifferences, knownDefects} {
		out = append(out, group...)
	}
	return out
}

// applyRules runs every rule on every object pair of every case, in
// order, and counts where each fired.
func applyRules(outcomes []outcome, rules []rule) (pairs []*objectPair, fired map[string][]string) {
	fired = map[string][]string{}
	for i := range outcomes {
		o := &outcomes[i]
		keys := map[string]bool{}
		for k := range o.slinky.Objects {
			keys[k] = true
		}
		for k := range o.slinky.Errors {
			keys[k] = true
		}
		for k := range o.gantry.objects {
			keys[k] = true
		}
		for k := range o.gantry.errors {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			x := &objectPair{c: o, key: k, kind: strings.SplitN(k, "/", 2)[0],
				s: o.slinky.Objects[k], g: o.gantry.objects[k], sErr: o.slinky.Errors[k], gErr: o.gantry.errors[k]}
			for _, r := range rules {
				if r.apply(x) {
					fired[r.name] = append(fired[r.name], fmt.Sprintf("%s: %s", o.name, k))
				}
			}
			pairs = append(pairs, x)
		}
	}
	return pairs, fired
}

// differences are what remains of a pair after the rules.
func (x *objectPair) differences() []string {
	switch {
	case x.sErr != "" && x.gErr != "":
		return nil // both refuse
	case x.sErr != "" || x.gErr != "":
		return []string{fmt.Sprintf("only one side fails: slinky=%q gantry=%q", x.sErr, x.gErr)}
	case x.s == nil && x.g == nil:
		return nil
	case x.s == nil:
		return []string{"only Gantry builds it: " + short(x.g)}
	case x.g == nil:
		return []string{"only Slinky builds it: " + short(x.s)}
	}
	var out []string
	flatDiffLines("", x.s, x.g, &out)
	return out
}

// flatDiffLines is flatDiff, but a multi-line string (a configuration
// file) is compared line by line.
func flatDiffLines(p string, a, b any, out *[]string) {
	as, aok := a.(string)
	bs, bok := b.(string)
	if aok && bok && (strings.Contains(as, "\n") || strings.Contains(bs, "\n")) {
		if as != bs {
			*out = append(*out, p+": (file differs, -slinky +gantry)\n"+lineDiff(as, bs))
		}
		return
	}
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
			flatDiffLines(p+"."+k, am[k], bm[k], out)
		}
		return
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok && len(al) == len(bl) {
		for i := range al {
			flatDiffLines(fmt.Sprintf("%s[%d]", p, i), al[i], bl[i], out)
		}
		return
	}
	flatDiff(p, a, b, out)
}

// lineDiff is a minimal line diff (longest common subsequence).
func lineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	n, m := len(al), len(bl)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if al[i] == bl[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var sb strings.Builder
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && al[i] == bl[j]:
			sb.WriteString("      " + al[i] + "\n")
			i++
			j++
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			sb.WriteString("    + " + bl[j] + "\n")
			j++
		default:
			sb.WriteString("    - " + al[i] + "\n")
			i++
		}
	}
	return sb.String()
}
