package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

const testCA = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"

// input mimics `kubectl kustomize config/default` of JobSet: a leading
// separator, a Service to drop, then both webhook configurations (one
// clientConfig already by URL) and a JSON document to drop.
const input = `---
apiVersion: v1
kind: Service
metadata:
  name: jobset-webhook-service
  namespace: jobset-system
spec:
  ports:
  - port: 443
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  labels:
    app.kubernetes.io/name: jobset
  name: jobset-mutating-webhook-configuration
webhooks:
- admissionReviewVersions: [v1]
  clientConfig:
    service:
      name: jobset-webhook-service
      namespace: jobset-system
      path: /mutate-jobset-x-k8s-io-v1alpha2-jobset
  failurePolicy: Fail
  name: mjobset.kb.io
  rules:
  - apiGroups: [jobset.x-k8s.io]
    apiVersions: [v1alpha2]
    operations: [CREATE]
    resources: [jobsets]
  sideEffects: None
- admissionReviewVersions: [v1]
  clientConfig:
    url: https://elsewhere.example:443/mutate--v1-pod
    caBundle: b2xk
  failurePolicy: Fail
  name: mpod.kb.io
  objectSelector:
    matchExpressions:
    - key: jobset.sigs.k8s.io/jobset-name
      operator: Exists
  sideEffects: None
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: jobset-validating-webhook-configuration
webhooks:
- admissionReviewVersions: [v1]
  clientConfig:
    service:
      name: jobset-webhook-service
      namespace: jobset-system
      path: /validate-jobset-x-k8s-io-v1alpha2-jobset
  failurePolicy: Fail
  name: vjobset.kb.io
  sideEffects: None
---
{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
`

func TestRewrite(t *testing.T) {
	var out bytes.Buffer
	if err := rewrite(strings.NewReader(input), &out, options{base: "https://localhost:9446/", ca: []byte(testCA)}); err != nil {
		t.Fatal(err)
	}

	written := out.String()
	var docs [][]byte
	reader := utilyaml.NewYAMLReader(bufio.NewReader(&out))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(bytes.TrimSpace(doc)) > 0 {
			docs = append(docs, doc)
		}
	}
	if len(docs) != 2 {
		t.Fatalf("got %d documents, want the 2 webhook configurations:\n%s", len(docs), written)
	}

	var mutating admissionregistrationv1.MutatingWebhookConfiguration
	if err := yaml.UnmarshalStrict(docs[0], &mutating); err != nil {
		t.Fatal(err)
	}
	var validating admissionregistrationv1.ValidatingWebhookConfiguration
	if err := yaml.UnmarshalStrict(docs[1], &validating); err != nil {
		t.Fatal(err)
	}
	if mutating.Name != "jobset-mutating-webhook-configuration" || mutating.Labels["app.kubernetes.io/name"] != "jobset" {
		t.Errorf("mutating metadata changed: %+v", mutating.ObjectMeta)
	}
	if validating.Name != "jobset-validating-webhook-configuration" {
		t.Errorf("validating name = %q", validating.Name)
	}

	type hook struct {
		name string
		cc   admissionregistrationv1.WebhookClientConfig
	}
	var hooks []hook
	for _, w := range mutating.Webhooks {
		hooks = append(hooks, hook{w.Name, w.ClientConfig})
	}
	for _, w := range validating.Webhooks {
		hooks = append(hooks, hook{w.Name, w.ClientConfig})
	}
	want := map[string]string{
		"mjobset.kb.io": "https://localhost:9446/mutate-jobset-x-k8s-io-v1alpha2-jobset",
		"mpod.kb.io":    "https://localhost:9446/mutate--v1-pod",
		"vjobset.kb.io": "https://localhost:9446/validate-jobset-x-k8s-io-v1alpha2-jobset",
	}
	if len(hooks) != len(want) {
		t.Fatalf("got %d webhooks, want %d", len(hooks), len(want))
	}
	for _, h := range hooks {
		if h.cc.Service != nil {
			t.Errorf("%s: service kept: %+v", h.name, h.cc.Service)
		}
		if h.cc.URL == nil || *h.cc.URL != want[h.name] {
			t.Errorf("%s: url = %v, want %s", h.name, h.cc.URL, want[h.name])
		}
		if string(h.cc.CABundle) != testCA {
			t.Errorf("%s: caBundle = %q, want the CA file", h.name, h.cc.CABundle)
		}
	}

	// Everything but clientConfig is kept.
	if m := mutating.Webhooks[1]; m.ObjectSelector == nil || len(m.ObjectSelector.MatchExpressions) != 1 ||
		m.FailurePolicy == nil || *m.FailurePolicy != admissionregistrationv1.Fail {
		t.Errorf("mpod.kb.io lost fields: %+v", m)
	}
	if r := mutating.Webhooks[0].Rules; len(r) != 1 || r[0].Resources[0] != "jobsets" {
		t.Errorf("mjobset.kb.io rules = %+v", r)
	}
	if !strings.Contains(written, "caBundle: "+base64.StdEncoding.EncodeToString([]byte(testCA))) {
		t.Errorf("caBundle is not the base64 of the CA file:\n%s", written)
	}
}

func TestRewriteErrors(t *testing.T) {
	noPath := strings.Replace(input, "      path: /validate-jobset-x-k8s-io-v1alpha2-jobset\n", "", 1)
	for name, tc := range map[string]struct {
		in, url, ca, want string
	}{
		"no webhook configurations": {"apiVersion: v1\nkind: Service\nmetadata: {name: s}\n", "https://localhost:1", testCA, "no MutatingWebhookConfiguration"},
		"empty input":               {"", "https://localhost:1", testCA, "no MutatingWebhookConfiguration"},
		"http url":                  {input, "http://localhost:1", testCA, "want https://"},
		"url with a path":           {input, "https://localhost:1/x", testCA, "without a path"},
		"not a PEM CA":              {input, "https://localhost:1", "nope", "no PEM certificate"},
		"webhook without a path":    {noPath, "https://localhost:1", testCA, "vjobset.kb.io: clientConfig has no absolute path"},
		"bad yaml":                  {"a: [\n", "https://localhost:1", testCA, "parsing document"},
	} {
		t.Run(name, func(t *testing.T) {
			err := rewrite(strings.NewReader(tc.in), io.Discard, options{base: tc.url, ca: []byte(tc.ca)})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestKeepGroupsAndCRDs: the Kueue shape. Only the webhooks of the kept
// groups remain (a configuration left empty is dropped), and with crds a
// CRD's conversion webhook is pointed at the local server too.
func TestKeepGroupsAndCRDs(t *testing.T) {
	crd := `---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: workloads.kueue.x-k8s.io
spec:
  conversion:
    strategy: Webhook
    webhook:
      clientConfig:
        service: {name: kueue-webhook-service, namespace: kueue-system, path: /convert}
      conversionReviewVersions: [v1]
  group: kueue.x-k8s.io
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: topologies.kueue.x-k8s.io
spec:
  group: kueue.x-k8s.io
`
	var out bytes.Buffer
	err := rewrite(strings.NewReader(input+crd), &out, options{base: "https://localhost:9447", ca: []byte(testCA), keepGroups: []string{"jobset.x-k8s.io"}, crds: true,
		requireLabel: map[string]string{"jobset.x-k8s.io": "kueue.x-k8s.io/queue-name"}})
	if err != nil {
		t.Fatal(err)
	}
	written := out.String()
	for _, want := range []string{"name: mjobset.kb.io", "url: https://localhost:9447/convert", "name: topologies.kueue.x-k8s.io",
		"objectSelector:\n    matchExpressions:\n    - key: kueue.x-k8s.io/queue-name\n      operator: Exists"} {
		if !strings.Contains(written, want) {
			t.Errorf("missing %q in:\n%s", want, written)
		}
	}
	// mpod.kb.io has no rules naming jobset.x-k8s.io, vjobset.kb.io no rules
	// at all: both go, and with it the validating configuration.
	for _, gone := range []string{"mpod.kb.io", "vjobset.kb.io", "ValidatingWebhookConfiguration", "kueue-webhook-service"} {
		if strings.Contains(written, gone) {
			t.Errorf("%q was kept:\n%s", gone, written)
		}
	}
	out.Reset()
	if err := rewrite(strings.NewReader(input+crd), &out, options{base: "https://localhost:9447", ca: []byte(testCA)}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "CustomResourceDefinition") {
		t.Error("CRDs written without crds")
	}
}
