package webhook

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// slinkyChartOutcome is what Gantry does with one object of Slinky's
// rendered chart: "admitted", or the refusal's message.
type slinkyChartOutcome struct {
	object  string // Kind/name
	refusal string // empty when admitted
}

// applySlinkyChart creates every object of one rendered Slinky chart
// (testdata/slinky-chart) in namespace ns through the API server, with
// strict field validation, so that a field the schema would prune fails
// the create instead of vanishing. Each object must be admitted or refused
// by a Gantry webhook saying what Gantry does not support; anything else
// (an unknown field, a schema error, a webhook error) fails the test.
func applySlinkyChart(t *testing.T, c client.Client, file, ns string) []slinkyChartOutcome {
	t.Helper()
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	var out []slinkyChartOutcome
	for _, obj := range documentsIn(t, filepath.Join("testdata", "slinky-chart", file)) {
		obj.SetNamespace(ns)
		what := obj.GetKind() + "/" + obj.GetName()
		err := c.Create(ctx, obj, client.FieldValidation("Strict"))
		switch {
		case err == nil:
			out = append(out, slinkyChartOutcome{object: what})
		case isNotSupportedRefusal(err):
			out = append(out, slinkyChartOutcome{object: what, refusal: err.Error()})
		default:
			t.Errorf("%s %s: neither admitted nor refused as unsupported: %v", file, what, err)
		}
	}
	return out
}

// isNotSupportedRefusal: a webhook denied the object because a field asks
// for something Gantry does not do.
func isNotSupportedRefusal(err error) bool {
	return (apierrors.IsInvalid(err) || apierrors.IsForbidden(err)) &&
		strings.Contains(err.Error(), "denied the request") && strings.Contains(err.Error(), "not supported")
}

// documentsIn reads every YAML document of a file.
func documentsIn(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		obj := map[string]any{}
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(obj) > 0 {
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
	}
}
