package slinky_test

import (
	"reflect"
	"strings"
)

// knownDefects (c) are differences from Slinky v1.2.1 that are Gantry's
// defects, each with Slinky's and Gantry's source. The oracle removes them
// so that it can check the rest, and prints them on every run; with
// ORACLE_STRICT=1 each fails the test. Fix the defect, then delete its
// rule: the oracle fails while a rule matches nothing.
var knownDefects = []rule{}

// crMetadata reports whether key=value in field (labels or annotations)
// of one of Slinky's objects comes from a CR of the case: its metadata or
// its pod template's.
func crMetadata(x *objectPair, field, key string, value any) bool {
	for _, d := range x.c.gantryDocs {
		if !strings.HasPrefix(str(d, "apiVersion"), "slinky.slurm.net/") {
			continue
		}
		for _, m := range []map[string]any{mapAt(d, "metadata"), mapAt(d, "spec", "template", "metadata")} {
			if v, ok := mapAt(m, field)[key]; ok && reflect.DeepEqual(v, value) {
				return true
			}
		}
	}
	return false
}
