package v1_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/test/testenv"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

// TestRayServiceCRD checks config/crd/bases/ray.io_rayservices.yaml on a
// real API server: every RayService of KubeRay v1.7.0's samples
// (test/wrappers/ray/testdata/rayservice-samples) is stored under strict
// field validation, so a field the schema lacks fails instead of being
// pruned, with every field written kept. The CRD alone, as KubeRay's: what
// Gantry's webhook and reconciler refuse (the incremental upgrade sample)
// is pkg/webhook's test.
func TestRayServiceCRD(t *testing.T) {
	env := testenv.Start(t, testenv.Options{
		AddToScheme:      []func(*runtime.Scheme) error{rayv1.AddToScheme, apiextensionsv1.AddToScheme},
		WithoutJobSetCRD: true,
	})
	c := env.Client
	ctx := context.Background()

	t.Run("CRD shape matches KubeRay", func(t *testing.T) {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := c.Get(ctx, client.ObjectKey{Name: "rayservices.ray.io"}, &crd); err != nil {
			t.Fatal(err)
		}
		if crd.Spec.Names.Kind != rayv1.RayServiceKind || crd.Spec.Names.Singular != "rayservice" || crd.Spec.Scope != apiextensionsv1.NamespaceScoped {
			t.Errorf("names/scope = %+v %s, want kind RayService, singular rayservice, Namespaced", crd.Spec.Names, crd.Spec.Scope)
		}
		if got := strings.Join(crd.Spec.Names.Categories, ","); got != "all" {
			t.Errorf("categories %q, want all", got)
		}
		var storage *apiextensionsv1.CustomResourceDefinitionVersion
		for i := range crd.Spec.Versions {
			if v := &crd.Spec.Versions[i]; v.Name == "v1" {
				storage = v
			}
		}
		if storage == nil || !storage.Served || !storage.Storage || storage.Subresources == nil || storage.Subresources.Status == nil {
			t.Fatalf("v1 is not a served storage version with a status subresource: %+v", storage)
		}
		var columns []string
		for _, col := range storage.AdditionalPrinterColumns {
			columns = append(columns, col.Name+"="+col.JSONPath)
		}
		if got, want := strings.Join(columns, " "), "service status=.status.serviceStatus num serve endpoints=.status.numServeEndpoints"; !strings.HasPrefix(got, want) {
			t.Errorf("printer columns %q, want KubeRay's %q first", got, want)
		}
	})

	t.Run("KubeRay v1.7.0's samples are stored as written", func(t *testing.T) {
		samples := raytesting.SampleRayServices(t)
		if len(samples) != 16 {
			t.Errorf("%d RayService documents in the samples, want KubeRay v1.7.0's 16", len(samples))
		}
		stored := 0
		for i, s := range samples {
			obj := map[string]any{}
			if err := yaml.Unmarshal(s.YAML, &obj); err != nil {
				t.Fatalf("%s: %v", s.File, err)
			}
			sample := &unstructured.Unstructured{Object: obj}
			// Several samples share a name: a namespace each.
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("rayservice-sample-%d", i)}}
			if err := c.Create(ctx, ns); err != nil {
				t.Fatal(err)
			}
			sample.SetNamespace(ns.Name)
			original := sample.DeepCopy()
			if err := c.Create(ctx, sample, client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
				t.Errorf("%s: %v", s.File, err)
				continue
			}
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(rayv1.RayServiceGroupVersionKind)
			if err := c.Get(ctx, client.ObjectKeyFromObject(sample), got); err != nil {
				t.Fatal(err)
			}
			if missing := missingLeaves(original.Object["spec"], got.Object["spec"], ".spec"); len(missing) > 0 {
				t.Errorf("%s: fields not stored as written:\n  %s", s.File, strings.Join(missing, "\n  "))
			}
			if missing := missingLeaves(original.Object["metadata"], got.Object["metadata"], ".metadata"); len(missing) > 0 {
				t.Errorf("%s: metadata not stored as written:\n  %s", s.File, strings.Join(missing, "\n  "))
			}
			// And it reads back into Gantry's type.
			typed := &rayv1.RayService{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(sample), typed); err != nil {
				t.Errorf("%s: reading back typed: %v", s.File, err)
			}
			stored++
		}
		t.Logf("%d RayServices of KubeRay v1.7.0's samples stored", stored)
	})

	t.Run("strict field validation refuses an unknown field", func(t *testing.T) {
		// The control of the test above: an unknown field is refused, not
		// pruned.
		obj := map[string]any{}
		if err := yaml.Unmarshal(raytesting.SampleRayServices(t)[0].YAML, &obj); err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: obj}
		u.SetNamespace("default")
		u.SetName("bogus")
		if err := unstructured.SetNestedField(u.Object, "x", "spec", "notAField"); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, u, client.FieldValidation(metav1.FieldValidationStrict)); err == nil || !strings.Contains(err.Error(), "notAField") {
			t.Errorf("an unknown field was not refused: %v", err)
		}
	})

	t.Run("the CRD's rules", func(t *testing.T) {
		base := raytesting.BaseRayService()
		base.Namespace = "default"
		for _, tc := range []struct {
			name   string
			mutate func(*rayv1.RayService)
			want   string
		}{
			{name: "negative rayClusterDeletionDelaySeconds", want: "spec.rayClusterDeletionDelaySeconds",
				mutate: func(s *rayv1.RayService) { v := int32(-1); s.Spec.RayClusterDeletionDelaySeconds = &v }},
			{name: "managedBy another controller", want: "the managedBy field value must be either",
				mutate: func(s *rayv1.RayService) { m := "example.com/mine"; s.Spec.ManagedBy = &m }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				svc := base.DeepCopy()
				svc.Name = "crd-rule-" + strings.ReplaceAll(strings.ToLower(tc.name), " ", "-")
				tc.mutate(svc)
				if err := c.Create(ctx, svc); err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("got %v, want refused with %q", err, tc.want)
				}
			})
		}
		svc := base.DeepCopy()
		svc.Name = "managed-by-kueue"
		m := rayv1.MultiKueueController
		svc.Spec.ManagedBy = &m
		if err := c.Create(ctx, svc); err != nil {
			t.Fatal(err)
		}
		other := rayv1.KubeRayController
		svc.Spec.ManagedBy = &other
		if err := c.Update(ctx, svc); err == nil || !strings.Contains(err.Error(), "the managedBy field is immutable") {
			t.Errorf("changing managedBy: %v, want refused as immutable", err)
		}
	})
}
