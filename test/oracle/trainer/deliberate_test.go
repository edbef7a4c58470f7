package trainer_test

import (
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"sort"
	"strings"

	"golang.org/x/crypto/ssh"
)

// The differences between Gantry and Trainer v2.3.0 that are deliberate,
// each with its reason; docs/trainjob.md ("Checked against Trainer's own
// code") lists the same. normalize removes exactly these from both sides
// before the comparison, and nothing else. The Flux policy's are in
// deliberate_flux_test.go.

// managedByLabel is the label Gantry puts on every object it makes: the
// manager's informers are filtered on it, so they cache only Gantry's own
// JobSets, Secrets and ConfigMaps, not every one in the cluster.
const managedByLabel = "app.kubernetes.io/managed-by"

// normalize edits want (Trainer's objects) and got (Gantry's) in place.
func normalize(in input, want, got map[string]map[string]any) {
	for key, g := range got {
		// Gantry's managed-by label (see managedByLabel).
		if labels, ok := path(g, "metadata", "labels").(map[string]any); ok && labels[managedByLabel] == "gantry" {
			delete(labels, managedByLabel)
			if len(labels) == 0 {
				delete(path(g, "metadata").(map[string]any), "labels")
			}
		}
		// A status is never part of what either applies (the API server
		// ignores it on the main resource); Gantry's typed JobSet marshals
		// an empty one.
		delete(g, "status")
		w := want[key]
		if w == nil {
			continue
		}
		delete(w, "status")
		if g["kind"] == "JobSet" {
			normalizeJobSet(w, g)
			keepRuntimePorts(in, w, g)
			if path(in.runtime.doc, "spec", "mlPolicy", "xgboost") != nil {
				sortEnv(w)
				sortEnv(g)
			}
			if path(in.runtime.doc, "spec", "mlPolicy", "flux") != nil {
				normalizeFluxCommand(in, w, g)
			}
		}
		if g["kind"] == "Secret" && strings.HasSuffix(key, "-mpi-ssh-auth") {
			normalizeSSHKeys(w, g)
		}
		if g["kind"] == "Secret" && strings.HasSuffix(key, fluxCurveSuffix) {
			normalizeCurveSecret(w, g)
		}
		if g["kind"] == "ConfigMap" && strings.HasSuffix(key, fluxConfigMapSuffix) {
			normalizeFluxConfigMap(w, g)
		}
	}
}

// normalizeJobSet removes the deliberate JobSet differences.
func normalizeJobSet(want, got map[string]any) {
	// spec.suspend: Gantry states it on every apply, false unless the
	// TrainJob is suspended, so that the JobSet runs exactly when the
	// TrainJob says; Trainer leaves it unset unless the TrainJob sets it.
	// Unset and false both mean running.
	if ws, gs := path(want, "spec").(map[string]any), path(got, "spec").(map[string]any); ws != nil && gs != nil {
		if _, set := ws["suspend"]; !set && gs["suspend"] == false {
			delete(gs, "suspend")
		}
	}
	// replicatedJobs[].replicas: JobSet's CRD defaults it to 1, and
	// Gantry's typed JobSet always carries the number; Trainer leaves it
	// unset for steps it does not force to 1. The stored object is the same.
	rjs, _ := path(want, "spec", "replicatedJobs").([]any)
	for _, rj := range rjs {
		if m, ok := rj.(map[string]any); ok {
			if _, set := m["replicas"]; !set {
				m["replicas"] = float64(1)
			}
		}
	}
	// An empty resources object on a container: Gantry's typed containers
	// always marshal one (corev1.Container.Resources is a struct), and the
	// API server stores every container with one, so the stored object is
	// the same. Seen on the init container the Flux plugin adds, which
	// Trainer builds from scratch.
	grjs, _ := path(got, "spec", "replicatedJobs").([]any)
	if len(rjs) != len(grjs) {
		return
	}
	for i := range rjs {
		wm, _ := rjs[i].(map[string]any)
		gm, _ := grjs[i].(map[string]any)
		for _, kind := range []string{"containers", "initContainers"} {
			wcs, _ := path(wm, "template", "spec", "template", "spec", kind).([]any)
			gcs, _ := path(gm, "template", "spec", "template", "spec", kind).([]any)
			for j := range min(len(wcs), len(gcs)) {
				wc, _ := wcs[j].(map[string]any)
				gc, _ := gcs[j].(map[string]any)
				if res, ok := gc["resources"].(map[string]any); ok && len(res) == 0 && wc != nil {
					if _, set := wc["resources"]; !set {
						delete(gc, "resources")
					}
				}
			}
		}
	}
}

// sortEnv sorts every container's env by name. For the XGBoost policy
// Trainer v2.3's order is random: its framework runs plugins in map order,
// and both its plainml plugin (which skips only torch, MPI and JAX) and its
// xgboost plugin upsert env, so the TrainJob's variables land before or
// after the DMLC_* ones from one build to the next. Gantry's order is
// fixed (the DMLC_* variables, then the TrainJob's). The set must match.
func sortEnv(jobSet map[string]any) {
	rjs, _ := path(jobSet, "spec", "replicatedJobs").([]any)
	for _, rj := range rjs {
		m, _ := rj.(map[string]any)
		for _, kind := range []string{"containers", "initContainers"} {
			cs, _ := path(m, "template", "spec", "template", "spec", kind).([]any)
			for _, c := range cs {
				env, _ := c.(map[string]any)["env"].([]any)
				sort.SliceStable(env, func(i, j int) bool {
					return fmt.Sprint(env[i].(map[string]any)["name"]) < fmt.Sprint(env[j].(map[string]any)["name"])
				})
			}
		}
	}
}

// keepRuntimePorts removes one difference in container ports: Gantry adds
// the 29500 port next to the runtime's own ports (replacing only a port of
// that number); Trainer's upsert replaces the first port that has the same
// number or, both being unnamed, the same (empty) name, so a runtime's
// first unnamed port is lost, and a runtime that also declares a named
// 29500 port ends up with that number twice, which the API server refuses
// (ports are a list keyed by number and protocol). Where Gantry's ports are
// Trainer's plus ports the runtime itself declares, Trainer's list is
// replaced by Gantry's; any other difference stays.
func keepRuntimePorts(in input, want, got map[string]any) {
	declared := map[string]map[float64]bool{} // replicated job/container -> runtime's port numbers
	rjs, _ := path(in.runtime.doc, "spec", "template", "spec", "replicatedJobs").([]any)
	for _, rj := range rjs {
		m, _ := rj.(map[string]any)
		cs, _ := path(m, "template", "spec", "template", "spec", "containers").([]any)
		for _, c := range cs {
			cm, _ := c.(map[string]any)
			key := fmt.Sprint(m["name"], "/", cm["name"])
			declared[key] = map[float64]bool{}
			ports, _ := cm["ports"].([]any)
			for _, p := range ports {
				n, _ := p.(map[string]any)["containerPort"].(float64)
				declared[key][n] = true
			}
		}
	}
	wrjs, _ := path(want, "spec", "replicatedJobs").([]any)
	grjs, _ := path(got, "spec", "replicatedJobs").([]any)
	if len(wrjs) != len(grjs) {
		return
	}
	for i := range wrjs {
		wm, _ := wrjs[i].(map[string]any)
		gm, _ := grjs[i].(map[string]any)
		wcs, _ := path(wm, "template", "spec", "template", "spec", "containers").([]any)
		gcs, _ := path(gm, "template", "spec", "template", "spec", "containers").([]any)
		if len(wcs) != len(gcs) {
			continue
		}
		for j := range wcs {
			wc, _ := wcs[j].(map[string]any)
			gc, _ := gcs[j].(map[string]any)
			if wc["name"] != gc["name"] {
				continue
			}
			wp, _ := wc["ports"].([]any)
			gp, _ := gc["ports"].([]any)
			numbers := func(ports []any) map[float64]bool {
				out := map[float64]bool{}
				for _, p := range ports {
					n, _ := p.(map[string]any)["containerPort"].(float64)
					out[n] = true
				}
				return out
			}
			wn, gn := numbers(wp), numbers(gp)
			ok := len(gp) > 0
			for n := range wn {
				ok = ok && gn[n]
			}
			for n := range gn {
				ok = ok && (wn[n] || declared[fmt.Sprint(wm["name"], "/", wc["name"])][n])
			}
			if ok && len(gn) > len(wn) || ok && len(wp) > len(gn) {
				wc["ports"] = gp
			}
		}
	}
}

// normalizeSSHKeys replaces the MPI SSH key pair of both Secrets with a
// description of it: each run generates a fresh key, so the bytes differ,
// but the kind of key and its encodings must not.
func normalizeSSHKeys(want, got map[string]any) {
	for _, s := range []map[string]any{want, got} {
		data, _ := s["data"].(map[string]any)
		for _, k := range []string{"ssh-privatekey", "ssh-publickey"} {
			v, _ := data[k].(string)
			data[k] = describeKey(k, v)
		}
	}
}

// describeKey is what is compared of a key: its PEM block type or SSH
// public key type, and for the private key the type of SSH public key it
// yields.
func describeKey(name, b64 string) string {
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return "not base64: " + err.Error()
	}
	switch name {
	case "ssh-privatekey":
		block, _ := pem.Decode(raw)
		if block == nil {
			return "no PEM block"
		}
		signer, err := ssh.ParsePrivateKey(raw)
		if err != nil {
			return fmt.Sprintf("PEM %s, not an SSH private key: %v", block.Type, err)
		}
		return fmt.Sprintf("PEM %s, %s", block.Type, signer.PublicKey().Type())
	default:
		pub, _, _, rest, err := ssh.ParseAuthorizedKey(raw)
		if err != nil {
			return "not an authorized_keys line: " + err.Error()
		}
		return fmt.Sprintf("%s, %d bytes after", pub.Type(), len(rest))
	}
}

// path walks nested maps; nil when a step is missing.
func path(m map[string]any, keys ...string) any {
	var cur any = m
	for _, k := range keys {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[k]
	}
	return cur
}
