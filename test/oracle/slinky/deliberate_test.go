package slinky_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// deliberateDifferences (b) are where Gantry differs from Slinky v1.2.1 on
// purpose, each as docs/slurm.md says (its section named in source). Each
// turns Slinky's object into what Gantry builds instead, for that one
// difference. The first is a normalization that must come after the
// upstream changes.
var deliberateDifferences = []rule{
	{
		name: "merged option lists as sets", class: normalized,
		source: "slurmctld and slurmdbd read AuthAltParameters, AuthInfo and SlurmctldParameters as sets of options, names case-insensitively; in the MERGED CONFIG lines Slinky v1.2.1 sorts and lower-cases the options, Gantry keeps its own then the user's as written",
		apply: func(x *objectPair) bool {
			return x.both(func(m map[string]any) bool {
				changed := false
				for _, f := range []string{"slurm.conf", "slurmdbd.conf"} {
					changed = editFile(m, f, func(lines []string) []string {
						start, end, ok := section(lines, "MERGED CONFIG")
						if !ok {
							return lines
						}
						out := slices.Clone(lines)
						for i := start; i < end; i++ {
							k, v, _ := strings.Cut(out[i], "=")
							opts := strings.Split(strings.ToLower(v), ",")
							slices.Sort(opts)
							out[i] = k + "=" + strings.Join(opts, ",")
						}
						return out
					}) || changed
				}
				return changed
			})
		},
	},

	// slurmctld's addresses.
	{
		name: "slurmctld's headless Service", class: deliberate,
		source: "docs/slurm.md, Controller — slurmctld: an internal headless Service (port 6817) governs the StatefulSet and names each slurmctld pod",
		apply: func(x *objectPair) bool {
			c := controllerOf(x)
			if x.s != nil || x.g == nil || c == nil || x.key != "Service/"+str(c, "metadata", "name")+"-controller-internal" {
				return false
			}
			x.g = nil
			return true
		},
	},
	{
		name: "StatefulSet governed by the headless Service", class: deliberate,
		source: "docs/slurm.md, Controller — slurmctld (Slinky's serviceName is the client Service, controllerbuilder/controller_app.go:59)",
		apply: func(x *objectPair) bool {
			c := controllerOf(x)
			if x.s == nil || c == nil || x.kind != "StatefulSet" {
				return false
			}
			want := str(c, "metadata", "name") + "-controller-internal"
			if str(x.s, "spec", "serviceName") == want {
				return false
			}
			setAt(x.s, want, "spec", "serviceName")
			return true
		},
	},
	{
		name: "SlurmctldHost names the pod, SlurmctldAddr the Service", class: deliberate,
		source: "docs/slurm.md, Controller — slurmctld: one SlurmctldHost per replica by FQDN (Slinky: SlurmctldHost=<pod>(<Service>.<namespace>), controllerbuilder/controller_config.go:177,185)",
		apply: onSlurmConf(func(x *objectPair, lines []string) []string {
			c := controllerOf(x)
			name, ns := str(c, "metadata", "name"), str(c, "metadata", "namespace")
			pod := name + "-controller-0"
			lines = replaceLine(lines, oneOf(fmt.Sprintf("SlurmctldHost=%s(%s-controller.%s)", pod, name, ns)),
				fmt.Sprintf("SlurmctldHost=%s(%s.%s-controller-internal.%s)", pod, pod, name, ns))
			if !slices.ContainsFunc(lines, prefixed("SlurmctldAddr=")) {
				lines = replaceLine(lines, prefixed("SlurmctldPort="), "SlurmctldPort=6817", fmt.Sprintf("SlurmctldAddr=%s-controller.%s", name, ns))
			}
			return lines
		}),
	},
	{
		name: "--conf-server names the slurmctld pod", class: deliberate,
		source: "docs/slurm.md, Controller — slurmctld: slurmd and sackd fetch slurm.conf from the slurmctld pod through the headless Service (Slinky: from the client Service, common/common.go ConfiglessArgs)",
		apply: func(x *objectPair) bool {
			if x.s == nil || (x.kind != "Pod" && x.kind != "Deployment") {
				return false
			}
			changed := false
			for _, c := range x.inputs("Controller") {
				if path(c, "spec", "external") == true {
					continue
				}
				name, ns := str(c, "metadata", "name"), str(c, "metadata", "namespace")
				from := fmt.Sprintf("%s-controller.%s:6817", name, ns)
				to := fmt.Sprintf("%s-controller-0.%s-controller-internal.%s:6817", name, name, ns)
				for _, ctr := range containers(podSpec(x.s)) {
					for i, a := range listAt(ctr, "args") {
						if a == from {
							listAt(ctr, "args")[i] = to
							changed = true
						}
					}
					for _, e := range listAt(ctr, "env") {
						if em := e.(map[string]any); em["name"] == "SACKD_OPTIONS" && em["value"] == "--conf-server "+from {
							em["value"] = "--conf-server " + to
							changed = true
						}
					}
				}
			}
			return changed
		},
	},

	// slurm.conf and gres.conf.
	{
		name: "slurm.conf DYNAMIC NODES section", class: deliberate,
		source: "docs/slurm.md, Controller — slurmctld: before extraConf, ReturnToService=2, ProctrackType=proctrack/cgroup, TaskPlugin=task/cgroup,task/affinity, JobAcctGatherType=jobacct_gather/cgroup, PrologFlags=Contain and GresTypes=gpu, which Slinky's chart leaves commented out",
		apply: onSlurmConf(func(x *objectPair, lines []string) []string {
			if slices.Contains(lines, "### DYNAMIC NODES ###") {
				return lines
			}
			return insertBeforeSection(lines, "ACCOUNTING", "#", "### DYNAMIC NODES ###",
				"ReturnToService=2", "ProctrackType=proctrack/cgroup", "TaskPlugin=task/cgroup,task/affinity",
				"JobAcctGatherType=jobacct_gather/cgroup", "PrologFlags=Contain", "GresTypes=gpu")
		}),
	},
	{
		name: "gres.conf AutoDetect=full", class: deliberate,
		source: "docs/slurm.md, Controller — slurmctld: the ConfigMap holds gres.conf (AutoDetect=full) unless a configFileRefs ConfigMap supplies one (Slinky v1.2.1 writes none)",
		apply: func(x *objectPair) bool {
			c := controllerOf(x)
			if x.s == nil || x.g == nil || c == nil || x.kind != "ConfigMap" || path(c, "spec", "external") == true {
				return false
			}
			if _, ok := mapAt(x.s, "data")["gres.conf"]; ok || mapAt(x.g, "data")["gres.conf"] != "AutoDetect=full\n" {
				return false
			}
			mapAt(x.s, "data")["gres.conf"] = "AutoDetect=full\n"
			return true
		},
	},
	{
		name: "accounting host and port from the Accounting", class: deliberate,
		source: "docs/slurm.md, Accounting — slurmdbd: with spec.service.port set slurm.conf uses that port, and an external Accounting is reached at externalConfig.host and port (Slinky: always <name>-accounting:6819)",
		apply: onSlurmConf(func(x *objectPair, lines []string) []string {
			c := controllerOf(x)
			a := x.input("Accounting", str(c, "spec", "accountingRef", "name"))
			if a == nil {
				return lines
			}
			host, port := str(a, "metadata", "name")+"-accounting", fmt.Sprint(6819)
			if p, ok := path(a, "spec", "service", "port").(float64); ok && p != 0 {
				port = fmt.Sprint(p)
			}
			if path(a, "spec", "external") == true {
				host, port = str(a, "spec", "externalConfig", "host"), fmt.Sprint(path(a, "spec", "externalConfig", "port"))
			}
			lines = replaceLine(lines, prefixed("AccountingStorageHost="), "AccountingStorageHost="+host)
			return replaceLine(lines, prefixed("AccountingStoragePort="), "AccountingStoragePort="+port)
		}),
	},

	// Pods.
	{
		name: "slurmrestd -a rest_auth/jwt", class: deliberate,
		source: "docs/slurm.md, RestApi — slurmrestd: slurmrestd with JWT auth (rest_auth/jwt only; Slinky passes no -a, restapibuilder/restapi_app.go:220-226)",
		apply: func(x *objectPair) bool {
			if x.s == nil || x.kind != "Deployment" || !strings.HasSuffix(x.key, "-restapi") {
				return false
			}
			ctr := container(podSpec(x.s), "slurmrestd")
			args := listAt(ctr, "args")
			if len(args) > 1 && args[0] == "-a" {
				return false
			}
			ctr["args"] = append([]any{"-a", "rest_auth/jwt"}, args...)
			return true
		},
	},
	{
		name: "worker toleration kept beside the template's", class: deliberate,
		source: "docs/slurm.md, NodeSet — slurmd pods, Tolerations (and Beyond upstream): Slinky's merge drops the worker toleration when the template has tolerations of its own; Gantry keeps it",
		apply: func(x *objectPair) bool {
			if x.s == nil || x.g == nil || x.kind != "Pod" {
				return false
			}
			worker := map[string]any{"key": "nodeset.slinky.slurm.net/worker", "operator": "Equal", "effect": "NoExecute"}
			st := listAt(podSpec(x.s), "tolerations")
			if slices.ContainsFunc(st, func(t any) bool { return reflect.DeepEqual(t, worker) }) {
				return false
			}
			podSpec(x.s)["tolerations"] = append(st, worker)
			return true
		},
	},
	{
		name: "DaemonSet-mode pods tolerate not-ready and unreachable nodes", class: deliberate,
		source: "docs/slurm.md, NodeSet — scalingMode: DaemonSet (and Beyond upstream): NoExecute tolerations of node.kubernetes.io/not-ready and unreachable, as Kubernetes' DaemonSets have",
		apply: func(x *objectPair) bool {
			if x.s == nil || x.kind != "Pod" || !strings.Contains(x.key, "@worker-") {
				return false
			}
			add := []any{}
			for _, k := range []string{"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"} {
				add = append(add, map[string]any{"key": k, "operator": "Exists", "effect": "NoExecute"})
			}
			podSpec(x.s)["tolerations"] = append(listAt(podSpec(x.s), "tolerations"), add...)
			return true
		},
	},
	{
		name: "DaemonSet-mode pod named by Gantry", class: deliberate,
		source: "docs/slurm.md, NodeSet — scalingMode: DaemonSet: <nodeset>-<5 random characters> with generateName <nodeset>-; Gantry completes the name itself (pkg/controller/slurm/nodeset/daemon.go BuildDaemonPod) so the pod-name label can carry it, Slinky leaves it to the API server",
		apply: func(x *objectPair) bool {
			if x.s == nil || x.g == nil || x.kind != "Pod" || str(x.s, "metadata", "name") != "" {
				return false
			}
			name := str(x.g, "metadata", "name")
			if !strings.HasPrefix(name, str(x.s, "metadata", "generateName")) {
				return false
			}
			setAt(x.s, name, "metadata", "name")
			setAt(x.s, name, "metadata", "labels", "nodeset.slinky.slurm.net/pod-name")
			return true
		},
	},
	{
		name: "slurmd preStop drains, then downs", class: deliberate,
		source: "docs/slurm.md, NodeSet — Pods that go and come back: DRAIN then DOWN with reason 'slurm-operator: Pod is terminating', an administrator's reason left alone (Slinky's preStop sets only DOWN, workerbuilder/worker_app.go:262-268)",
		apply: func(x *objectPair) bool {
			if x.s == nil || x.g == nil || x.kind != "Pod" {
				return false
			}
			scmd := listAt(container(podSpec(x.s), "slurmd"), "lifecycle", "preStop", "exec", "command")
			gcmd := listAt(container(podSpec(x.g), "slurmd"), "lifecycle", "preStop", "exec", "command")
			if len(scmd) != 3 || len(gcmd) != 3 || scmd[2] != "scontrol update nodename=$(hostname) state=down reason='slurm-operator: Pod is terminating';" {
				return false
			}
			gs, _ := gcmd[2].(string)
			if !strings.Contains(gs, "state=drain reason='slurm-operator: Pod is terminating'") || !strings.Contains(gs, "state=down reason='slurm-operator: Pod is terminating'") {
				return false
			}
			scmd[2] = gs
			return true
		},
	},
	{
		name: "ssh hashes only with ssh enabled", class: deliberate,
		source: "docs/slurm.md, NodeSet — SSH into slurmd pods: the pods carry sshd-conf-hash and sssd-conf-hash when ssh is enabled (Slinky puts both, of empty files, on every pod: workerbuilder/worker_app.go:36-46,330-353)",
		apply: func(x *objectPair) bool {
			if x.s == nil || x.kind != "Pod" {
				return false
			}
			n := x.input("NodeSet", strings.SplitN(x.key[len("Pod/"):], "@", 2)[0])
			if path(n, "spec", "ssh", "enabled") == true {
				return false
			}
			a := mapAt(x.s, "metadata", "annotations")
			changed := deleteAt(a, hashPrefix+"sshd-conf-hash")
			return deleteAt(a, hashPrefix+"sssd-conf-hash") || changed
		},
	},
	{
		name: "LoginSet slurm-key-hash", class: deliberate,
		source: "docs/slurm.md, LoginSet — ssh login pods: a change of the Controller's slurm key rolls the login pods (slinky.slurm.net/slurm-key-hash; Slinky's login pods have no such hash, loginbuilder/login_app.go:322-355)",
		apply: func(x *objectPair) bool {
			if x.s == nil || x.kind != "Deployment" || x.input("LoginSet", x.key[len("Deployment/"):]) == nil {
				return false
			}
			meta := podTemplateMeta(x.s)
			if _, ok := mapAt(meta, "annotations")[hashPrefix+"slurm-key-hash"]; ok {
				return false
			}
			setAt(meta, "<hash>", "annotations", hashPrefix+"slurm-key-hash")
			return true
		},
	},
	{
		name: "sshd Port follows a moved login port", class: deliberate,
		source: "docs/slurm.md, LoginSet — Beyond Slinky: a login port moved with a container port named login (for hostNetwork) also moves sshd (Port)",
		apply: func(x *objectPair) bool {
			if x.s == nil || x.kind != "ConfigMap" {
				return false
			}
			l := x.input("LoginSet", strings.TrimSuffix(x.key[len("ConfigMap/"):], "-ssh-config"))
			port := 0.0
			for _, p := range listAt(l, "spec", "login", "ports") {
				if pm := p.(map[string]any); pm["name"] == "login" {
					port, _ = pm["containerPort"].(float64)
				}
			}
			if port == 0 || port == 22 {
				return false
			}
			return editFile(x.s, "sshd_config", func(lines []string) []string {
				i := slices.IndexFunc(lines, prefixed("Include "))
				return slices.Insert(lines, i+1, fmt.Sprintf("Port %v", port))
			})
		},
	},
	{
		name: "sshd default the user sets is left out", class: deliberate,
		source: "docs/slurm.md, LoginSet — Beyond Slinky (and NodeSet ssh): a default that extraSshdConfig sets outside a Match block is left out of the generated part (sshd keeps the first value it reads)",
		apply: func(x *objectPair) bool {
			if x.s == nil || x.kind != "ConfigMap" || !strings.HasSuffix(x.key, "-ssh-config") {
				return false
			}
			name := strings.TrimSuffix(x.key[len("ConfigMap/"):], "-ssh-config")
			extra := str(x.input("LoginSet", name), "spec", "extraSshdConfig")
			if n := x.input("NodeSet", name); n != nil {
				extra = str(n, "spec", "ssh", "extraSshdConfig")
			}
			userSet := map[string]bool{}
			for _, l := range strings.Split(extra, "\n") {
				k, _, _ := strings.Cut(strings.TrimSpace(l), " ")
				if strings.EqualFold(k, "Match") {
					break
				}
				userSet[strings.ToLower(k)] = true
			}
			return editFile(x.s, "sshd_config", func(lines []string) []string {
				out := slices.Clone(lines)
				for _, d := range []string{"UsePAM yes", "X11Forwarding yes", "Subsystem sftp internal-sftp", "AuthenticationMethods publickey password"} {
					k, _, _ := strings.Cut(d, " ")
					if i := slices.Index(out, d); i >= 0 && userSet[strings.ToLower(k)] {
						out = slices.Delete(out, i, i+1)
					}
				}
				return out
			})
		},
	},

	{
		name: "slurmdbd.conf StorageUser and StoragePass", class: deliberate,
		source: "docs/slurm.md, Accounting — slurmdbd: unlike Slinky, an empty username or password is left out instead of written empty, and # and \\ in the password are escaped so slurmdbd reads the password itself",
		apply: func(x *objectPair) bool {
			a := accountingOf(x)
			if x.s == nil || x.kind != "Secret" || a == nil {
				return false
			}
			return editFile(x.s, "slurmdbd.conf", func(lines []string) []string {
				out := slices.Clone(lines)
				if i := slices.Index(out, "StorageUser="); i >= 0 {
					out = slices.Delete(out, i, i+1)
				}
				if i := slices.IndexFunc(out, prefixed("StoragePass=")); i >= 0 {
					pass := strings.TrimPrefix(out[i], "StoragePass=")
					switch {
					case pass == "":
						out = slices.Delete(out, i, i+1)
					case strings.ContainsAny(pass, "#\\"):
						out[i] = "StoragePass=" + strings.NewReplacer("\\", "\\\\", "#", "\\#").Replace(pass)
					}
				}
				return out
			})
		},
	},

	// Containers.
	{
		name: "Gantry's own container scripts", class: deliberate,
		source: "docs/slurm.md, Checked against Slinky's own builders: the logfile sidecar, the LoginSet's initconf and the reconfigure sidecar run Gantry's scripts (pkg/controller/slurm/internal/podspec logfileScript, loginset initconfScript, slurmctld/reconfigure.sh) to the same effect as Slinky's (common/scripts/logfile.sh, initconf.sh, controllerbuilder/scripts/reconfigure.sh); the preStop is the rule above",
		apply: func(x *objectPair) bool {
			if x.s == nil || x.g == nil {
				return false
			}
			changed := false
			for _, name := range []string{"logfile", "initconf", "reconfigure"} {
				sc, gc := container(podSpec(x.s), name), container(podSpec(x.g), name)
				if sc == nil || gc == nil {
					continue
				}
				scmd, gcmd := listAt(sc, "command"), listAt(gc, "command")
				if len(scmd) == 0 || len(scmd) != len(gcmd) || !reflect.DeepEqual(scmd[:len(scmd)-1], gcmd[:len(gcmd)-1]) {
					continue
				}
				if !reflect.DeepEqual(scmd[len(scmd)-1], gcmd[len(gcmd)-1]) {
					scmd[len(scmd)-1] = gcmd[len(gcmd)-1]
					changed = true
				}
				if name == "initconf" && !reflect.DeepEqual(sc["env"], gc["env"]) {
					// SLURM_USER (Slinky's, which its script does not read)
					// or SLURM_USER_UID/GID (Gantry's, which its script does).
					sc["env"] = gc["env"]
					changed = true
				}
			}
			return changed
		},
	},
	{
		name: "reconfigure sidecar's securityContext", class: normalized,
		source: "Gantry's reconfigure sidecar states runAsNonRoot, runAsUser 401 and runAsGroup 401, which the slurmctld pod's securityContext already gives every container (both sides)",
		apply: func(x *objectPair) bool {
			if x.s == nil || x.g == nil || x.kind != "StatefulSet" {
				return false
			}
			sc, gc := container(podSpec(x.s), "reconfigure"), container(podSpec(x.g), "reconfigure")
			if sc == nil || gc == nil || sc["securityContext"] != nil {
				return false
			}
			pod := mapAt(podSpec(x.g), "securityContext")
			want := map[string]any{"runAsNonRoot": pod["runAsNonRoot"], "runAsUser": pod["runAsUser"], "runAsGroup": pod["runAsGroup"]}
			if !reflect.DeepEqual(gc["securityContext"], want) {
				return false
			}
			sc["securityContext"] = want
			return true
		},
	},
	{
		name: "default images", class: deliberate,
		source: "docs/slurm.md, Checked against Slinky's own builders: a container whose image the CR leaves empty gets the image Slinky's chart installs (pkg/controller/slurm/slinky/images.go, loginset.DefaultImages); Slinky leaves it empty",
		apply: func(x *objectPair) bool {
			if x.s == nil || x.g == nil {
				return false
			}
			changed := false
			for _, sc := range containers(podSpec(x.s)) {
				gc := container(podSpec(x.g), fmt.Sprint(sc["name"]))
				if gc != nil && sc["image"] == nil && gc["image"] != nil {
					sc["image"] = gc["image"]
					changed = true
				}
			}
			return changed
		},
	},
	{
		name: "each ConfigMap projected once", class: deliberate,
		source: "docs/slurm.md, Checked against Slinky's own builders: a ConfigMap named by several of the Controller's script and config refs is projected into /etc/slurm once (Slinky projects it once per ref, controllerbuilder/controller_app.go:121-137,234-244)",
		apply: func(x *objectPair) bool {
			if x.s == nil || x.kind != "StatefulSet" {
				return false
			}
			v := named(listAt(podSpec(x.s), "volumes"), "slurm-etc")
			sources := listAt(v, "projected", "sources")
			var out []any
			for _, s := range sources {
				if !slices.ContainsFunc(out, func(o any) bool { return reflect.DeepEqual(o, s) }) {
					out = append(out, s)
				}
			}
			if len(out) == len(sources) {
				return false
			}
			setAt(v, out, "projected", "sources")
			return true
		},
	},
	{
		name: "RestApi labels on its Service", class: deliberate,
		source: "docs/slurm.md, Checked against Slinky's own builders: every object Gantry makes for a CR carries the CR's labels; Slinky's slurmrestd Service has only spec.service.metadata's (restapibuilder/restapi_service.go:17-27)",
		apply: func(x *objectPair) bool {
			if x.s == nil || x.kind != "Service" || !strings.HasSuffix(x.key, "-restapi") {
				return false
			}
			r := x.input("RestApi", strings.TrimSuffix(x.key[len("Service/"):], "-restapi"))
			changed := false
			labels := mapAt(x.s, "metadata", "labels")
			for k, v := range mapAt(r, "metadata", "labels") {
				if _, ok := labels[k]; !ok && k != managedByLabel {
					labels[k] = v
					changed = true
				}
			}
			return changed
		},
	},
	{
		name: "the CR's annotations and template metadata not carried over", class: deliberate,
		source: "docs/slurm.md, kept on purpose: the CR's annotations include kubectl's last-applied-configuration, which would roll slurmctld, slurmrestd and the login pods on every kubectl apply of the CR. Slinky gives the objects it makes for a CR the CR's annotations, and the workload its pod template's metadata too (controllerbuilder/controller_app.go:35-41,138-143, controller_config.go:133-135, controller_service.go:20-22; restapibuilder/restapi_app.go:39-44,81-86; loginbuilder/login_app.go:75-80,121-126, login_config.go:20-23; accountingbuilder/accounting_app.go, accounting_config.go:26-29, accounting_service.go:20-22; workerbuilder/worker_config.go:20-24 also the NodeSet's labels); Gantry gives them only its ServiceMonitor and the slurmd pods (pkg/controller/slurm/*/objects.go objectMeta: WithLabels(cr.Labels) only; nodeset/ssh.go BuildSshConfigMap: no CR labels)",
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
