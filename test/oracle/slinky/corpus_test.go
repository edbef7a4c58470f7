package slinky_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"sigs.k8s.io/yaml"
)

// oracleCase is one cluster's worth of objects, as a user submits them
// (Slinky v1.2's manifests), and the slurmd pods to build.
type oracleCase struct {
	name string
	docs []map[string]any
	pods []renderPod
	// hostKeys: the LoginSets' host keys are generated and compared too
	// (an RSA key takes a while, so only in the chart's case).
	hostKeys bool
}

// builtKinds are the kinds either operator builds from; other documents
// (a Token, for one) are left out of the cases.
var builtKinds = map[string]bool{
	"Controller": true, "NodeSet": true, "RestApi": true, "LoginSet": true, "Accounting": true,
	"Secret": true, "ConfigMap": true,
}

// revision is the NodeSet revision both sides are given for every pod.
const revision = "oracle-rev"

// corpus is every case: Slinky's own chart rendered at v1.2.1 and
// v1.3.0-rc1 (pkg/webhook/testdata/slinky-chart, with the database
// password Secret the chart leaves to MariaDB's), Gantry's samples
// (config/samples/slinky_v1beta1_*.yaml), and the variants below, each a
// change of the v1.2.1 chart's cluster that exercises some fields.
func corpus(t *testing.T) []oracleCase {
	t.Helper()
	root := repoRoot(t)
	var out []oracleCase
	chart := func(version string) []map[string]any {
		docs, err := readDocs(filepath.Join(root, "pkg", "webhook", "testdata", "slinky-chart", version+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		return append(keep(docs), mustDoc(t, databasePassword))
	}
	base := chart("v1.2.1")
	full := newCase("chart v1.2.1", base, nil)
	full.hostKeys = true
	out = append(out, full)
	out = append(out, newCase("chart v1.3.0-rc1", chart("v1.3.0-rc1"), nil))

	var samples []map[string]any
	files, err := filepath.Glob(filepath.Join(root, "config", "samples", "slinky_v1beta1_*.yaml"))
	if err != nil || len(files) < 5 {
		t.Fatalf("samples: %v (%d files)", err, len(files))
	}
	for _, f := range files {
		docs, err := readDocs(f)
		if err != nil {
			t.Fatal(err)
		}
		samples = append(samples, keep(docs)...)
	}
	// The sample Controller has Gantry generate its keys
	// (gantry.dev/generate-auth-keys); Slinky's chart makes them. Both
	// exist before the daemons' objects are built.
	keys, err := parseDocs(sampleKeys)
	if err != nil {
		t.Fatal(err)
	}
	samples = append(samples, keys...)
	for _, d := range samples {
		if mapAt(d, "metadata")["namespace"] == nil {
			mapAt(d, "metadata")["namespace"] = "default"
		}
	}
	out = append(out, newCase("samples", samples, nil))

	for _, v := range variants {
		docs, err := v.apply(base)
		if err != nil {
			t.Fatalf("variant %s: %v", v.name, err)
		}
		c := newCase("chart v1.2.1 + "+v.name, docs, v.pods)
		out = append(out, c)
	}
	return out
}

// keep drops the documents neither side builds from.
func keep(docs []map[string]any) []map[string]any {
	var out []map[string]any
	for _, d := range docs {
		if builtKinds[fmt.Sprint(d["kind"])] {
			out = append(out, d)
		}
	}
	return out
}

// newCase asks for pod 0 of every StatefulSet-mode NodeSet (and the last
// ordinal when ordinals are padded), the pod for node worker-1.example.com
// of every DaemonSet-mode one, and any pods the variant names.
func newCase(name string, docs []map[string]any, extra []renderPod) oracleCase {
	c := oracleCase{name: name, docs: docs}
	for _, d := range docs {
		if d["kind"] != "NodeSet" {
			continue
		}
		n := str(d, "metadata", "name")
		if str(d, "spec", "scalingMode") == "DaemonSet" {
			c.pods = append(c.pods, renderPod{NodeSet: n, Node: "worker-1.example.com", Revision: revision})
			continue
		}
		c.pods = append(c.pods, renderPod{NodeSet: n, Revision: revision})
	}
	for _, p := range extra {
		p.Revision = revision
		c.pods = append(c.pods, p)
	}
	return c
}

func mustDoc(t *testing.T, text string) map[string]any {
	t.Helper()
	docs, err := parseDocs(text)
	if err != nil || len(docs) != 1 {
		t.Fatalf("%v (%d documents) in %s", err, len(docs), text)
	}
	return docs[0]
}

const databasePassword = `apiVersion: v1
kind: Secret
metadata: {name: mariadb-password, namespace: slurm}
stringData: {password: s3cr3t-Pass}
`

const sampleKeys = `apiVersion: v1
kind: Secret
metadata: {name: slurm-auth-slurm, namespace: default}
stringData: {slurm.key: a-generated-slurm-key}
---
apiVersion: v1
kind: Secret
metadata: {name: slurm-auth-jwt, namespace: default}
stringData: {jwt.key: a-generated-jwt-key}
`

// variant is a change of the v1.2.1 chart's cluster: JSON merge patches
// (RFC 7386, in YAML) of its objects by "Kind/name", objects added, and
// pods to build beyond the default ones.
type variant struct {
	name  string
	patch map[string]string
	add   []string
	drop  []string
	pods  []renderPod
}

func (v variant) apply(base []map[string]any) ([]map[string]any, error) {
	var out []map[string]any
	seen := map[string]bool{}
	for _, d := range base {
		key := fmt.Sprintf("%v/%v", d["kind"], str(d, "metadata", "name"))
		if contains(v.drop, key) {
			seen[key] = true
			continue
		}
		d = deepCopy(d)
		if p, ok := v.patch[key]; ok {
			seen[key] = true
			patched, err := mergePatch(d, p)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
			d = patched
		}
		out = append(out, d)
	}
	for key := range v.patch {
		if !seen[key] {
			return nil, fmt.Errorf("patch of %s, which the cluster does not have", key)
		}
	}
	for _, key := range v.drop {
		if !seen[key] {
			return nil, fmt.Errorf("drop of %s, which the cluster does not have", key)
		}
	}
	for _, text := range v.add {
		docs, err := parseDocs(text)
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			if mapAt(d, "metadata")["namespace"] == nil {
				mapAt(d, "metadata")["namespace"] = "slurm"
			}
			out = append(out, d)
		}
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

func mergePatch(doc map[string]any, patchYAML string) (map[string]any, error) {
	patch, err := yaml.YAMLToJSON([]byte(patchYAML))
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	merged, err := jsonpatch.MergePatch(raw, patch)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	return out, json.Unmarshal(merged, &out)
}
