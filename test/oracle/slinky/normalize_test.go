package slinky_test

import (
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"golang.org/x/crypto/ssh"
)

const (
	managedByLabel = "app.kubernetes.io/managed-by"
	hashPrefix     = "slinky.slurm.net/"
)

// normalizations remove what is not a difference in what the cluster
// runs: Gantry's own by design, or the same object as the API server
// stores it.
var normalizations = []rule{
	{
		name: "managed-by label", class: normalized,
		source: "pkg/framework/builder: every object Gantry makes is labelled managed-by=gantry; its caches are filtered on the label",
		apply: func(x *objectPair) bool {
			// Without Gantry's object (one it names otherwise, see
			// knownDefects), Slinky's alone.
			if x.g != nil && labelsOf(x.g)[managedByLabel] != "gantry" {
				return false
			}
			return x.both(func(m map[string]any) bool {
				changed := deleteAt(m, "metadata", "labels", managedByLabel)
				if t := podTemplateMeta(m); t != nil && m["kind"] != "Pod" {
					changed = deleteAt(t, "labels", managedByLabel) || changed
				}
				return changed
			})
		},
	},
	{
		name: "hash annotation values", class: normalized,
		source: "each operator hashes its own way (Slinky: SHA-256 of a whole Secret or file; Gantry: a prefix of SHA-256 of the key it reads); which hashes a pod carries is compared, not their values",
		apply: func(x *objectPair) bool {
			return x.both(func(m map[string]any) bool {
				changed := false
				for k, v := range mapAt(podTemplateMeta(m), "annotations") {
					if isHashAnnotation(k) && v != "<hash>" {
						mapAt(podTemplateMeta(m), "annotations")[k] = "<hash>"
						changed = true
					}
				}
				return changed
			})
		},
	},
	{
		name: "slurmrestd key hash", class: normalized,
		source: "pkg/controller/slurm/restapi/objects.go DeploymentInputs.SlurmKeyHash: Gantry also rolls slurmrestd when the slurm key changes (a hash annotation of its own; Slinky v1.2.1's restapi_app.go sets none)",
		apply: func(x *objectPair) bool {
			if x.kind != "Deployment" || x.s == nil || x.g == nil || !strings.HasSuffix(x.key, "-restapi") {
				return false
			}
			if _, ok := mapAt(podTemplateMeta(x.s), "annotations")[hashPrefix+"slurm-key-hash"]; ok {
				return false
			}
			return deleteAt(podTemplateMeta(x.g), "annotations", hashPrefix+"slurm-key-hash")
		},
	},
	{
		name: "pod template name and namespace", class: normalized,
		source: "Slinky's metadata builder writes the workload's name and namespace into its pod and claim templates; the API server ignores both there (pods and claims are named and placed by the workload)",
		apply: func(x *objectPair) bool {
			if x.s == nil || (x.kind != "Deployment" && x.kind != "StatefulSet") {
				return false
			}
			t := mapAt(x.s, "spec", "template", "metadata")
			changed := deleteAt(t, "name")
			changed = deleteAt(t, "namespace") || changed
			for _, c := range listAt(x.s, "spec", "volumeClaimTemplates") {
				if cm, ok := c.(map[string]any); ok {
					changed = deleteAt(cm, "metadata", "namespace") || changed
				}
			}
			return changed
		},
	},
	{
		name: "probe defaults", class: normalized,
		source: "k8s.io/api/core/v1 Probe: the API server sets timeoutSeconds 1, successThreshold 1, failureThreshold 3, periodSeconds 10 where unset; Gantry writes them (pkg/controller/slurm/internal/podspec.Probe), Slinky leaves them to the server",
		apply: func(x *objectPair) bool {
			return x.both(func(m map[string]any) bool {
				changed := false
				for _, c := range containers(podSpec(m)) {
					for _, p := range []string{"livenessProbe", "readinessProbe", "startupProbe"} {
						probe := mapAt(c, p)
						if probe == nil {
							continue
						}
						for k, v := range map[string]float64{"timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3, "periodSeconds": 10} {
							if _, ok := probe[k]; !ok {
								probe[k] = v
								changed = true
							}
						}
					}
				}
				return changed
			})
		},
	},
	{
		name: "port protocol", class: normalized,
		source: "k8s.io/api/core/v1 ContainerPort and ServicePort: the API server sets protocol TCP where unset",
		apply: func(x *objectPair) bool {
			set := func(ports []any) bool {
				changed := false
				for _, p := range ports {
					if pm, ok := p.(map[string]any); ok && pm["protocol"] == nil {
						pm["protocol"] = "TCP"
						changed = true
					}
				}
				return changed
			}
			return x.both(func(m map[string]any) bool {
				changed := false
				for _, c := range containers(podSpec(m)) {
					changed = set(listAt(c, "ports")) || changed
				}
				if m["kind"] == "Service" {
					changed = set(listAt(m, "spec", "ports")) || changed
				}
				return changed
			})
		},
	},
	{
		name: "Service type", class: normalized,
		source: "k8s.io/api/core/v1 ServiceSpec: the API server sets type ClusterIP where unset",
		apply: func(x *objectPair) bool {
			if x.kind != "Service" {
				return false
			}
			return x.both(func(m map[string]any) bool {
				if str(m, "spec", "type") != "" {
					return false
				}
				setAt(m, "ClusterIP", "spec", "type")
				return true
			})
		},
	},
	{
		name: "Secret data", class: normalized,
		source: "the API server stores a Secret's stringData as data, and type Opaque where unset (Slinky builds slurmdbd.conf's Secret with stringData)",
		apply: func(x *objectPair) bool {
			if x.kind != "Secret" {
				return false
			}
			return x.both(func(m map[string]any) bool {
				changed := false
				if _, ok := m["stringData"]; ok {
					storeStringData(m)
					changed = true
				}
				if m["type"] == nil {
					m["type"] = "Opaque"
					changed = true
				}
				return changed
			})
		},
	},
	{
		name: "immutable false", class: normalized,
		source: "a ConfigMap or Secret with immutable: false is stored as one without it; Slinky writes false, Gantry leaves it out",
		apply: func(x *objectPair) bool {
			return x.both(func(m map[string]any) bool {
				if m["immutable"] == false {
					delete(m, "immutable")
					return true
				}
				return false
			})
		},
	},
	{
		name: "status", class: normalized,
		source: "a status is never part of what either applies (the API server ignores it on create and update)",
		apply: func(x *objectPair) bool {
			return x.both(func(m map[string]any) bool { return deleteAt(m, "status") })
		},
	},
	{
		name: "generateName beside a name", class: normalized,
		source: "Slinky makes pods from the template with Kubernetes' GetPodFromTemplate, which sets generateName, then names them; the API server uses a name when given and ignores generateName",
		apply: func(x *objectPair) bool {
			if x.kind != "Pod" || x.s == nil || str(x.s, "metadata", "name") == "" {
				return false
			}
			return deleteAt(x.s, "metadata", "generateName")
		},
	},
	{
		name: "empty affinity and pod resources", class: normalized,
		source: "Slinky's chart writes affinity: {} and resources: {} into the pod templates; Gantry's merge keeps the empty objects, Slinky's strategic merge drops them; either way the pod has no affinity and no pod-level resources",
		apply: func(x *objectPair) bool {
			return x.both(func(m map[string]any) bool {
				spec := podSpec(m)
				changed := false
				for _, k := range []string{"affinity", "resources"} {
					if v, ok := spec[k].(map[string]any); ok && len(v) == 0 {
						delete(spec, k)
						changed = true
					}
				}
				return changed
			})
		},
	},
	{
		name: "generated host keys", class: normalized,
		source: "each LoginSet's SSH host keys are generated afresh by either side; the kind of each key and its encodings are compared, not the random bytes",
		apply: func(x *objectPair) bool {
			if x.kind != "Secret" || !strings.HasSuffix(x.key, "-ssh-host-keys") {
				return false
			}
			return x.both(func(m map[string]any) bool {
				data := mapAt(m, "data")
				changed := false
				for k, v := range data {
					s, _ := v.(string)
					if strings.HasPrefix(s, "<") {
						continue
					}
					data[k] = describeHostKey(k, s)
					changed = true
				}
				return changed
			})
		},
	},
	{
		name: "Secret files as text", class: normalized,
		source: "a Secret's data is base64; the files in it (slurmdbd.conf) are compared decoded, line by line",
		apply: func(x *objectPair) bool {
			if x.kind != "Secret" || strings.HasSuffix(x.key, "-ssh-host-keys") {
				return false
			}
			return x.both(func(m map[string]any) bool {
				changed := false
				data := mapAt(m, "data")
				for k, v := range data {
					s, _ := v.(string)
					raw, err := base64.StdEncoding.DecodeString(s)
					if err != nil {
						continue
					}
					data[k] = string(raw)
					changed = true
				}
				return changed
			})
		},
	},
	{
		name: "empty lines in configuration files", class: normalized,
		source: "slurmctld, slurmdbd and sshd skip empty lines; Slinky's config builder leaves some (after a raw block that ends in a newline, and for an empty extraConf)",
		apply: func(x *objectPair) bool {
			if x.kind != "ConfigMap" && x.kind != "Secret" {
				return false
			}
			return x.both(func(m map[string]any) bool {
				changed := false
				data := mapAt(m, "data")
				for k, v := range data {
					s, ok := v.(string)
					if !ok || !strings.Contains(s, "\n") {
						continue
					}
					var kept []string
					for _, l := range strings.Split(s, "\n") {
						if strings.TrimSpace(l) != "" {
							kept = append(kept, l)
						}
					}
					out := strings.Join(kept, "\n") + "\n"
					if out != s {
						data[k] = out
						changed = true
					}
				}
				return changed
			})
		},
	},
	{
		name: "comments in sshd_config and authorized_keys", class: normalized,
		source: "sshd skips comment lines; each side heads its files with comments of its own (Slinky: \"### GENERAL ###\", \"### EXTRA CONFIG ###\", \"### SLINKY ###\"; Gantry: \"# Generated by Gantry ...\", \"# spec.extraSshdConfig\")",
		apply: func(x *objectPair) bool {
			if x.kind != "ConfigMap" || !strings.HasSuffix(x.key, "-ssh-config") {
				return false
			}
			return x.both(func(m map[string]any) bool {
				changed := false
				for _, f := range []string{"sshd_config", "authorized_keys"} {
					changed = editFile(m, f, func(lines []string) []string {
						var out []string
						for _, l := range lines {
							if !strings.HasPrefix(strings.TrimSpace(l), "#") {
								out = append(out, l)
							}
						}
						return out
					}) || changed
				}
				return changed
			})
		},
	},
	{
		name: "privileged: false", class: normalized,
		source: "a container's securityContext.privileged defaults to false; the chart writes privileged: false for the login container, Gantry keeps it, Slinky's merge drops false values from the user's container",
		apply: func(x *objectPair) bool {
			return x.both(func(m map[string]any) bool {
				changed := false
				for _, c := range containers(podSpec(m)) {
					sc := mapAt(c, "securityContext")
					if sc != nil && sc["privileged"] == false {
						delete(sc, "privileged")
						if len(sc) == 0 {
							delete(c, "securityContext")
						}
						changed = true
					}
				}
				return changed
			})
		},
	},
	{
		name: "order of keyed lists", class: normalized,
		source: "Slinky's strategic merge puts the template's env, ports, mounts and volumes before the operator's and Gantry's after them, and the two order the host keys differently; Kubernetes keys volumes, mounts, ports and projected items by name, path or number (env order matters only to $(VAR) references, which Gantry's order lets the user's variables make to the operator's)",
		apply: func(x *objectPair) bool {
			return x.both(func(m map[string]any) bool {
				spec := podSpec(m)
				if spec == nil {
					return false
				}
				changed := sortList(spec, "volumes", "name")
				for _, v := range listAt(spec, "volumes") {
					for _, src := range listAt(v.(map[string]any), "projected", "sources") {
						for _, kind := range []string{"secret", "configMap"} {
							if p := mapAt(src.(map[string]any), kind); p != nil {
								changed = sortList(p, "items", "key") || changed
							}
						}
					}
				}
				for _, c := range containers(spec) {
					changed = sortList(c, "env", "name") || changed
					changed = sortList(c, "ports", "containerPort") || changed
					changed = sortList(c, "volumeMounts", "mountPath") || changed
				}
				return changed
			})
		},
	},
	{
		name: "slurmd --conf key case", class: normalized,
		source: "slurmd reads node parameter names case-insensitively; Slinky title-cases the keys of the NodeSet's extraConf (workerbuilder/worker_app.go slurmdConfArgs, cases.Title: CPUSpecList becomes Cpuspeclist), Gantry keeps them as written",
		apply: func(x *objectPair) bool {
			if x.kind != "Pod" {
				return false
			}
			return x.both(func(m map[string]any) bool {
				args := listAt(container(podSpec(m), "slurmd"), "args")
				for i := 0; i+1 < len(args); i++ {
					if args[i] != "--conf" {
						continue
					}
					s, _ := args[i+1].(string)
					fields := strings.Fields(strings.Trim(s, "'"))
					for j, f := range fields {
						k, v, _ := strings.Cut(f, "=")
						fields[j] = strings.ToLower(k) + "=" + v
					}
					slices.Sort(fields)
					out := "'" + strings.Join(fields, " ") + "'"
					if out != s {
						args[i+1] = out
						return true
					}
				}
				return false
			})
		},
	},
	{
		name: "labels of the workers' Service and PodDisruptionBudget", class: normalized,
		source: "pkg/controller/slurm/nodeset/objects.go workerLabels: Gantry labels the objects all NodeSets of a Controller share (name, component, cluster, managed-by), which its label-filtered caches need; Slinky leaves them unlabelled",
		apply: func(x *objectPair) bool {
			if x.g == nil || x.s == nil || !strings.Contains(x.key, "/slurm-workers-") || labelsOf(x.s) != nil {
				return false
			}
			return deleteAt(x.g, "metadata", "labels")
		},
	},
}

func labelsOf(m map[string]any) map[string]any { return mapAt(m, "metadata", "labels") }

func isHashAnnotation(k string) bool {
	return strings.HasPrefix(k, hashPrefix) && strings.HasSuffix(k, "-hash")
}

// describeHostKey is what is compared of a host key file: for a private
// key its PEM type and the SSH key type it holds, for a public key its
// type (and that it is one line).
func describeHostKey(name, b64 string) string {
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return "<not base64>"
	}
	if strings.HasSuffix(name, ".pub") {
		pub, _, _, rest, err := ssh.ParseAuthorizedKey(raw)
		if err != nil {
			return "<not a public key: " + err.Error() + ">"
		}
		return fmt.Sprintf("<public %s, %d bytes after>", pub.Type(), len(rest))
	}
	block, _ := pem.Decode(raw)
	if block == nil {
		return "<no PEM block>"
	}
	signer, err := ssh.ParsePrivateKey(raw)
	if err != nil {
		return fmt.Sprintf("<PEM %s, not an SSH private key>", block.Type)
	}
	return fmt.Sprintf("<PEM %s, %s>", block.Type, signer.PublicKey().Type())
}

// sortList sorts m[key], a list of objects, by field; it reports a change.
func sortList(m map[string]any, key, field string) bool {
	list := listAt(m, key)
	if len(list) < 2 {
		return false
	}
	sorted := slices.Clone(list)
	slices.SortStableFunc(sorted, func(a, b any) int {
		return strings.Compare(fmt.Sprint(a.(map[string]any)[field]), fmt.Sprint(b.(map[string]any)[field]))
	})
	if reflect.DeepEqual(sorted, list) {
		return false
	}
	m[key] = sorted
	return true
}
