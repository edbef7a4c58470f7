// Package slinky_test checks Gantry's Slurm builders against Slinky
// slurm-operator's own. Every case (a cluster of Controller, NodeSets,
// RestApi, LoginSet, Accounting, Secrets and ConfigMaps; see corpus) is
// built twice: by Slinky's builders, run from its module in the program
// slinkyrender/, and by Gantry's (pkg/controller/slurm/...), from the
// inputs Gantry's reconcilers give them. The objects are compared as JSON,
// configuration files line by line.
//
// Slinky's side runs v1.1.0, the newest release the Go module proxy
// serves; Gantry follows v1.2.1. Before the comparison, rules are applied
// (rules_test.go), each named and with its source: what is not a
// difference in what the cluster runs, Gantry's own by design or the same
// object as stored (normalizations, normalize_test.go), what Slinky
// changed between v1.1.0 and v1.2.1 (upstreamChanges, upstream_test.go,
// each citing the v1.2.1 file and lines), what Gantry does differently on
// purpose (deliberateDifferences, deliberate_test.go, each citing
// docs/slurm.md), and Gantry's known defects (knownDefects,
// defects_test.go, printed on every run, failing under ORACLE_STRICT=1).
// Any other difference fails the test, and so does a rule that no case
// needs. ORACLE_VERBOSE=1 lists where each rule applied; ORACLE_RAW=1
// (TestRawDifferences) prints the differences before any rule.
package slinky_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// prepared is a case with each side's stored objects.
type prepared struct {
	oracleCase
	slinkyDocs []map[string]any // as Slinky v1.1.0's API server stores them
	gantryDocs []map[string]any // as Gantry's stores them
}

func prepare(t *testing.T) []prepared {
	t.Helper()
	cases := corpus(t)
	slinkyCRDs := loadSchemas(t, filepath.Join(slinkyModuleDir(t), "config", "crd", "bases"))
	gantryCRDs := loadSchemas(t, filepath.Join(repoRoot(t), "config", "crd", "bases"))
	out := make([]prepared, 0, len(cases))
	for _, c := range cases {
		p := prepared{oracleCase: c}
		for _, d := range c.docs {
			g, err := gantryCRDs.asStored(d)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			p.gantryDocs = append(p.gantryDocs, g)
			s, err := slinkyCRDs.asStored(asSlinkyV11(d))
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			p.slinkyDocs = append(p.slinkyDocs, s)
		}
		out = append(out, p)
	}
	return out
}

// outcome is both sides' objects (and errors) for one case.
type outcome struct {
	prepared
	slinky renderResult
	gantry *gantryResult
}

func build(t *testing.T) []outcome {
	t.Helper()
	cases := prepare(t)
	req := make([]renderCase, 0, len(cases))
	for _, c := range cases {
		req = append(req, renderCase{Name: c.name, Objects: c.slinkyDocs, Pods: c.pods, HostKeys: c.hostKeys})
	}
	rendered := renderSlinky(t, req)
	out := make([]outcome, 0, len(cases))
	for _, c := range cases {
		s, ok := rendered[c.name]
		if !ok {
			t.Fatalf("slinkyrender returned nothing for %q", c.name)
		}
		g, err := buildGantry(c.gantryDocs, c.pods, c.hostKeys)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		out = append(out, outcome{prepared: c, slinky: s, gantry: g})
	}
	return out
}

// TestRawDifferences prints, under ORACLE_RAW=1, every difference before
// any rule: what the rules were written from.
func TestRawDifferences(t *testing.T) {
	if os.Getenv("ORACLE_RAW") == "" {
		t.Skip("ORACLE_RAW is not set: this prints an analysis, it checks nothing")
	}
	for _, o := range build(t) {
		fmt.Printf("=== %s\n", o.name)
		keys := map[string]bool{}
		for k := range o.slinky.Objects {
			keys[k] = true
		}
		for k := range o.gantry.objects {
			keys[k] = true
		}
		for k := range o.slinky.Errors {
			keys[k] = true
		}
		for k := range o.gantry.errors {
			keys[k] = true
		}
		var sorted []string
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			se, ge := o.slinky.Errors[k], o.gantry.errors[k]
			if se != "" || ge != "" {
				fmt.Printf("  %s: errors: slinky=%q gantry=%q\n", k, se, ge)
				continue
			}
			s, g := o.slinky.Objects[k], o.gantry.objects[k]
			var d []string
			flatDiff("", s, g, &d)
			for _, l := range d {
				fmt.Printf("  %s %s\n", k, strings.ReplaceAll(l, "\n", `\n`))
			}
		}
	}
}

// TestBuildersMatchSlinky is the differential test.
func TestBuildersMatchSlinky(t *testing.T) {
	outcomes := build(t)
	rules := ruleSet()
	pairs, fired := applyRules(outcomes, rules)
	compared, refused := 0, 0
	byKind := map[string]int{}
	failures := map[string][]string{}
	for _, x := range pairs {
		if x.sErr != "" && x.gErr != "" {
			refused++
			t.Logf("%s: %s: both refuse: slinky: %s; gantry: %s", x.c.name, x.key, x.sErr, x.gErr)
			continue
		}
		if x.s != nil && x.g != nil {
			compared++
			byKind[x.kind]++
		}
		if d := x.differences(); len(d) > 0 {
			failures[x.c.name] = append(failures[x.c.name], fmt.Sprintf("%s:\n  %s", x.key, strings.Join(d, "\n  ")))
		}
	}
	names := make([]string, 0, len(failures))
	for n := range failures {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t.Errorf("case %q: Gantry differs from Slinky, and no rule says why (-slinky +gantry):\n%s", n, strings.Join(failures[n], "\n"))
	}
	for _, r := range rules {
		where := fired[r.name]
		if os.Getenv("ORACLE_VERBOSE") != "" {
			t.Logf("rule %q (%s), %d objects:\n    %s", r.name, r.class, len(where), strings.Join(where, "\n    "))
		}
		switch {
		case len(where) == 0 && r.onlyOn != "":
			t.Logf("rule %q (%s) removed nothing: it applies only on %s", r.name, r.class, r.onlyOn)
		case len(where) == 0:
			t.Errorf("rule %q (%s) removed nothing: no case needs it any more; delete it, or restore the case it was written for", r.name, r.class)
		case r.class == knownDefect:
			msg := fmt.Sprintf("KNOWN DEFECT %q (%d objects, e.g. %s)\n    %s", r.name, len(where), where[0], r.source)
			if os.Getenv("ORACLE_STRICT") != "" {
				t.Error(msg)
			} else {
				t.Log(msg)
			}
		}
	}
	t.Logf("%d cases, %d objects compared (%v), %d refused by both, %d rules", len(outcomes), compared, byKind, refused, len(rules))
	if compared < 300 {
		t.Errorf("only %d objects were compared; the oracle needs at least 300", compared)
	}
}
