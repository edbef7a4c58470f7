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
var knownDefects = []rule{
	{
		name: "the CR's annotations and template metadata not carried over", class: knownDefect,
		source: "Slinky gives the objects it makes for a CR the CR's annotations, and the workload its pod template's metadata too (controllerbuilder/controller_app.go:35-41,138-143, controller_config.go:133-135, controller_service.go:20-22; restapibuilder/restapi_app.go:39-44,81-86; loginbuilder/login_app.go:75-80,121-126, login_config.go:20-23; accountingbuilder/accounting_app.go, accounting_config.go:26-29, accounting_service.go:20-22; workerbuilder/worker_config.go:20-24 also the NodeSet's labels); Gantry gives them only its ServiceMonitor and the slurmd pods (pkg/controller/slurm/*/objects.go objectMeta: WithLabels(cr.Labels) only; nodeset/ssh.go BuildSshConfigMap: no CR labels)",
		apply: func(x *objectPair) bool {
			if x.s == nil || x.g == nil || x.kind == "Pod" || x.kind == "ServiceMonitor" {
				return false
			}
			changed := false
			drop := func(meta, gMeta map[string]any, field string) {
				sm, gm := mapAt(meta, field), mapAt(gMeta, field)
				for k, v := range sm {
					if gv, ok := gm[k]; ok && reflect.DeepEqual(gv, v) {
						continue
					}
					if crMetadata(x, field, k, v) {
						delete(sm, k)
						changed = true
					}
				}
				if len(sm) == 0 {
					delete(meta, field)
				}
			}
			drop(mapAt(x.s, "metadata"), mapAt(x.g, "metadata"), "annotations")
			drop(mapAt(x.s, "metadata"), mapAt(x.g, "metadata"), "labels")
			if t := podTemplateMeta(x.s); t != nil {
				drop(t, podTemplateMeta(x.g), "annotations")
			}
			return changed
		},
	},
}

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
