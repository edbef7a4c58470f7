package slinky_test

import (
	"slices"
	"strings"
)

// upstreamChanges (a) turn Slinky v1.1.0's output into v1.2.1's: what
// Slinky changed between the two (git diff v1.1.0 v1.2.1 --
// internal/builder), each citing the v1.2.1 source (paths under
// internal/builder/ of SlinkyProject/slurm-operator at tag v1.2.1). They
// apply to Slinky's side only.
var upstreamChanges = []rule{
	{
		name: "slurm.conf GENERAL without ReturnToService and GresTypes", class: upstreamChange,
		source: "controllerbuilder/controller_config.go:181-191 (GENERAL ends with MaxNodeCount)",
		apply: onSlurmConf(func(x *objectPair, lines []string) []string {
			return removeInSection(lines, "GENERAL", oneOf("ReturnToService=2", "GresTypes=gpu"))
		}),
	},
	{
		name: "slurm.conf LOGGING without LogTimeFormat", class: upstreamChange,
		source: "controllerbuilder/controller_config.go:193-197; common/const.go drops LogTimeFormat",
		apply: onSlurmConf(func(x *objectPair, lines []string) []string {
			return removeInSection(lines, "LOGGING", prefixed("LogTimeFormat="))
		}),
	},
	{
		name: "slurm.conf PLUGINS & PARAMETERS", class: upstreamChange,
		source: "controllerbuilder/controller_config.go:160-164,199-206: SlurmctldParameters=enable_configless,reconfig_on_restart after AuthInfo; no CommunicationParameters, SelectTypeParameters, ProctrackType, PrologFlags or TaskPlugin",
		apply: onSlurmConf(func(x *objectPair, lines []string) []string {
			lines = removeInSection(lines, "PLUGINS & PARAMETERS", func(l string) bool {
				for _, p := range []string{"CommunicationParameters=", "SelectTypeParameters=", "ProctrackType=", "PrologFlags=", "TaskPlugin="} {
					if strings.HasPrefix(l, p) {
						return true
					}
				}
				return false
			})
			start, end, ok := section(lines, "PLUGINS & PARAMETERS")
			if !ok {
				return lines
			}
			body := slices.Clone(lines[start:end])
			i := slices.IndexFunc(body, prefixed("SlurmctldParameters="))
			if i < 0 {
				return lines
			}
			body = slices.Delete(body, i, i+1)
			at := slices.IndexFunc(body, prefixed("AuthInfo=")) + 1
			body = slices.Insert(body, at, "SlurmctldParameters=enable_configless,reconfig_on_restart")
			return slices.Concat(lines[:start], body, lines[end:])
		}),
	},
	{
		name: "slurm.conf ACCOUNTING without AccountingStorageTRES and JobAcctGatherType", class: upstreamChange,
		source: "controllerbuilder/controller_config.go:213-221",
		apply: onSlurmConf(func(x *objectPair, lines []string) []string {
			return removeInSection(lines, "ACCOUNTING", func(l string) bool {
				return strings.HasPrefix(l, "AccountingStorageTRES=") || strings.HasPrefix(l, "JobAcctGatherType=")
			})
		}),
	},
	{
		name: "slurm.conf NODESET & PARTITION header", class: upstreamChange,
		source: "controllerbuilder/controller_config.go:235-238 (was COMPUTE & PARTITION)",
		apply: onSlurmConf(func(x *objectPair, lines []string) []string {
			return replaceLine(lines, oneOf("### COMPUTE & PARTITION ###"), "### NODESET & PARTITION ###")
		}),
	},
	{
		name: "EXTRA CONFIG section only with extraConf", class: upstreamChange,
		source: "controllerbuilder/controller_config.go:241-246; accountingbuilder/accounting_config.go:88-92",
		apply: func(x *objectPair) bool {
			if x.s == nil {
				return false
			}
			edit := func(lines []string) []string { return dropSection(lines, "EXTRA CONFIG") }
			if c := controllerOf(x); c != nil && x.kind == "ConfigMap" && str(c, "spec", "extraConf") == "" {
				return editFile(x.s, "slurm.conf", edit)
			}
			if a := accountingOf(x); a != nil && x.kind == "Secret" && str(a, "spec", "extraConf") == "" {
				return editFile(x.s, "slurmdbd.conf", edit)
			}
			return false
		},
	},
	{
		name: "MERGED CONFIG after extraConf", class: upstreamChange,
		source: "controllerbuilder/controller_config.go:160-175,248-252 and accountingbuilder/accounting_config.go:41-52,95-99, with common/common.go:246-279 (BuildMergedConfig)",
		apply: func(x *objectPair) bool {
			if x.s == nil {
				return false
			}
			jwt := func(d map[string]any) []string {
				p := []string{"jwt_key=/etc/slurm/jwt.key"}
				if mapAt(d, "spec", "jwksKeyRef") != nil {
					p = append(p, "jwks=/etc/slurm/jwks.json")
				}
				return p
			}
			appendMerged := func(file string, extra string, op map[string][]string) bool {
				merged := v12MergedLines(extra, op)
				if len(merged) == 0 {
					return false
				}
				return editFile(x.s, file, func(lines []string) []string {
					for len(lines) > 0 && lines[len(lines)-1] == "" {
						lines = lines[:len(lines)-1]
					}
					return slices.Concat(lines, []string{"#", "### MERGED CONFIG ###"}, merged, []string{""})
				})
			}
			if c := controllerOf(x); c != nil && x.kind == "ConfigMap" {
				return appendMerged("slurm.conf", str(c, "spec", "extraConf"), map[string][]string{
					"SlurmctldParameters": {"enable_configless", "reconfig_on_restart"},
					"AuthInfo":            {"use_client_ids"},
					"AuthAltParameters":   jwt(c),
				})
			}
			if a := accountingOf(x); a != nil && x.kind == "Secret" {
				return appendMerged("slurmdbd.conf", str(a, "spec", "extraConf"), map[string][]string{
					"AuthInfo":          {"use_client_ids"},
					"AuthAltParameters": jwt(a),
				})
			}
			return false
		},
	},
	{
		name: "no gres.conf", class: upstreamChange,
		source: "controllerbuilder/controller_config.go:137-147: the ConfigMap holds slurm.conf and, unless a configFileRefs ConfigMap has one, cgroup.conf (v1.1.0 also wrote gres.conf)",
		apply: func(x *objectPair) bool {
			if x.s == nil || controllerOf(x) == nil || x.kind != "ConfigMap" {
				return false
			}
			return deleteAt(x.s, "data", "gres.conf")
		},
	},
	{
		name: "slurmctld pod hash annotations", class: upstreamChange,
		source: "controllerbuilder/controller_app.go:106-119,144 and 345-393: slurm-key-hash and jwt-key-hash, and slurm-config-hash unless inplaceReconfigure",
		apply: func(x *objectPair) bool {
			c := controllerOf(x)
			if x.s == nil || c == nil || x.kind != "StatefulSet" {
				return false
			}
			keys := []string{"slurm-key-hash", "jwt-key-hash"}
			if path(c, "spec", "inplaceReconfigure") != true {
				keys = append(keys, "slurm-config-hash")
			}
			changed := false
			meta := podTemplateMeta(x.s)
			for _, k := range keys {
				if _, ok := mapAt(meta, "annotations")[hashPrefix+k]; !ok {
					setAt(meta, "<hash>", "annotations", hashPrefix+k)
					changed = true
				}
			}
			return changed
		},
	},
	{
		name: "reconfigure sidecar only with inplaceReconfigure", class: upstreamChange,
		source: "controllerbuilder/controller_app.go:164-170",
		apply: func(x *objectPair) bool {
			c := controllerOf(x)
			if x.s == nil || c == nil || x.kind != "StatefulSet" || path(c, "spec", "inplaceReconfigure") == true {
				return false
			}
			return removeNamed(podSpec(x.s), "reconfigure", "initContainers")
		},
	},
	{
		name: "slurmrestd -s openapi/slurmctld without accounting", class: upstreamChange,
		source: "restapibuilder/restapi_app.go:80,220-226: hasAccounting is controller.Spec.AccountingRef != nil (v1.1.0 compared a pointer with a struct, always unequal, so it never passed -s)",
		apply: func(x *objectPair) bool {
			if x.s == nil || x.kind != "Deployment" || !strings.HasSuffix(x.key, "-restapi") {
				return false
			}
			r := x.input("RestApi", strings.TrimSuffix(strings.TrimPrefix(x.key, "Deployment/"), "-restapi"))
			c := x.input("Controller", str(r, "spec", "controllerRef", "name"))
			if c == nil || mapAt(c, "spec", "accountingRef") != nil {
				return false
			}
			ctr := container(podSpec(x.s), "slurmrestd")
			ctr["args"] = append([]any{"-s", "openapi/slurmctld"}, listAt(ctr, "args")...)
			return true
		},
	},
	{
		name: "slurmd preStop keeps the node", class: upstreamChange,
		source: "workerbuilder/worker_app.go:262-268: state=down with reason 'slurm-operator: Pod is terminating', no scontrol delete",
		apply: func(x *objectPair) bool {
			if x.s == nil || x.kind != "Pod" {
				return false
			}
			cmd := listAt(container(podSpec(x.s), "slurmd"), "lifecycle", "preStop", "exec", "command")
			if len(cmd) != 3 || !strings.Contains(cmd[2].(string), "scontrol delete") {
				return false
			}
			cmd[2] = "scontrol update nodename=$(hostname) state=down reason='slurm-operator: Pod is terminating';"
			return true
		},
	},
	{
		name: "Service nodePort", class: upstreamChange,
		source: "controllerbuilder/controller_service.go:37, restapibuilder/restapi_service.go:34, accountingbuilder/accounting_service.go:35 set the port's nodePort from spec.service.nodePort (loginbuilder did already)",
		apply: func(x *objectPair) bool {
			if x.s == nil || x.kind != "Service" {
				return false
			}
			in := ownerInput(x)
			np, _ := path(in, "spec", "service", "nodePort").(float64)
			if np == 0 {
				return false
			}
			ports := listAt(x.s, "spec", "ports")
			if len(ports) == 0 {
				return false
			}
			p := ports[0].(map[string]any)
			if p["nodePort"] != nil {
				return false
			}
			p["nodePort"] = np
			return true
		},
	},
	{
		name: "Service externalIPs dropped", class: upstreamChange,
		source: "common/service.go:34-35: \"Prevent MitM via CVE-2020-8554\", opts.ExternalIPs = nil",
		apply: func(x *objectPair) bool {
			if x.s == nil || x.kind != "Service" {
				return false
			}
			return deleteAt(x.s, "spec", "externalIPs")
		},
	},
	{
		name: "login port from the login container", class: upstreamChange,
		source: "loginbuilder/login_app.go:265-288: the login container's port named login, when the LoginSet gives one a number, is the base port (v1.1.0 kept 22 and added the user's beside it)",
		apply: func(x *objectPair) bool {
			if x.s == nil || x.kind != "Deployment" {
				return false
			}
			ctr := container(podSpec(x.s), "login")
			ports := listAt(ctr, "ports")
			var login []int
			for i, p := range ports {
				if pm := p.(map[string]any); pm["name"] == "login" {
					login = append(login, i)
				}
			}
			if len(login) < 2 {
				return false
			}
			out := []any{}
			for i, p := range ports {
				if pm := p.(map[string]any); pm["name"] == "login" && pm["containerPort"] == float64(22) {
					continue
				}
				out = append(out, ports[i])
			}
			ctr["ports"] = out
			return true
		},
	},
	{
		name: "slurmdbd.conf without LogTimeFormat", class: upstreamChange,
		source: "accountingbuilder/accounting_config.go:84-86 (LOGGING: LogFile only)",
		apply: func(x *objectPair) bool {
			if x.s == nil || x.kind != "Secret" || accountingOf(x) == nil {
				return false
			}
			return editFile(x.s, "slurmdbd.conf", func(lines []string) []string {
				return removeInSection(lines, "LOGGING", prefixed("LogTimeFormat="))
			})
		},
	},
}

// onSlurmConf edits the slurm.conf of Slinky's ConfigMap of a
// (non-external) Controller.
func onSlurmConf(f func(x *objectPair, lines []string) []string) func(x *objectPair) bool {
	return func(x *objectPair) bool {
		c := controllerOf(x)
		if x.s == nil || c == nil || x.kind != "ConfigMap" || path(c, "spec", "external") == true {
			return false
		}
		return editFile(x.s, "slurm.conf", func(lines []string) []string { return f(x, lines) })
	}
}

// controllerOf is the input Controller whose object x is: its ConfigMap
// (<name>-config), its StatefulSet (<name>-controller) or its Services.
func controllerOf(x *objectPair) map[string]any {
	name := x.key[len(x.kind)+1:]
	for _, c := range x.inputs("Controller") {
		n := str(c, "metadata", "name")
		switch {
		case x.kind == "ConfigMap" && name == n+"-config",
			x.kind == "StatefulSet" && name == n+"-controller",
			x.kind == "Service" && (name == n+"-controller" || name == n+"-controller-internal"),
			x.kind == "ServiceMonitor" && (name == n || name == n+"-controller"):
			return c
		}
	}
	return nil
}

// accountingOf is the input Accounting whose object x is (<name>-accounting).
func accountingOf(x *objectPair) map[string]any {
	name := x.key[len(x.kind)+1:]
	for _, a := range x.inputs("Accounting") {
		if name == str(a, "metadata", "name")+"-accounting" {
			return a
		}
	}
	return nil
}

// ownerInput is the input CR a Service is made for.
func ownerInput(x *objectPair) map[string]any {
	if c := controllerOf(x); c != nil {
		return c
	}
	if a := accountingOf(x); a != nil {
		return a
	}
	name := x.key[len(x.kind)+1:]
	if r := x.input("RestApi", strings.TrimSuffix(name, "-restapi")); r != nil && strings.HasSuffix(name, "-restapi") {
		return r
	}
	return x.input("LoginSet", name)
}
