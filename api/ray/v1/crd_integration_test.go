package v1_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/test/testenv"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

// One control plane for the whole file: starting kube-apiserver dominates
// the run time, and the subtests use distinct object names.
func TestRayClusterCRD(t *testing.T) {
	env := testenv.Start(t, testenv.Options{
		AddToScheme: []func(*runtime.Scheme) error{rayv1.AddToScheme, apiextensionsv1.AddToScheme},
	})
	c := env.Client

	t.Run("CRD shape matches KubeRay", func(t *testing.T) { testCRDShape(t, c) })
	t.Run("samples are accepted unchanged and defaulted", func(t *testing.T) { testSamples(t, c) })
	t.Run("invalid specs are rejected", func(t *testing.T) { testInvalidSpecs(t, c) })
	t.Run("managedBy is immutable", func(t *testing.T) { testManagedByImmutable(t, c) })
	t.Run("rayStartParams may be null", func(t *testing.T) { testRayStartParamsNull(t, c) })
	t.Run("status is a subresource", func(t *testing.T) { testStatusSubresource(t, c) })
	t.Run("KubeRay v1.7.0's samples are stored as written", func(t *testing.T) { testKubeRaySamples(t, c) })
	t.Run("v1alpha1 is served and stored as v1", func(t *testing.T) { testV1alpha1Served(t, c) })
	t.Run("a CRD that stored v1alpha1 can be replaced", func(t *testing.T) { testStoredVersionsTakeover(t, c) })
	t.Run("kubectl explain raycluster.spec describes the fields", func(t *testing.T) {
		// What `kubectl explain` shows; the CRD was generated without
		// descriptions before (KubeRay's has them).
		missing, err := testenv.UndescribedFields(t.Context(), env.Config, "ray.io", "v1", "RayCluster",
			"spec", "spec.headGroupSpec", "spec.workerGroupSpecs", "spec.rayVersion", "spec.suspend", "status.state")
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range missing {
			t.Errorf("raycluster.%s has no description", f)
		}
	})
}

func testCRDShape(t *testing.T, c client.Client) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := c.Get(context.Background(), client.ObjectKey{Name: "rayclusters.ray.io"}, &crd); err != nil {
		t.Fatalf("getting the RayCluster CRD: %v", err)
	}
	if crd.Spec.Names.Kind != "RayCluster" || crd.Spec.Names.Singular != "raycluster" || crd.Spec.Scope != apiextensionsv1.NamespaceScoped {
		t.Errorf("names/scope = %+v %s, want kind RayCluster, singular raycluster, Namespaced", crd.Spec.Names, crd.Spec.Scope)
	}
	if got := strings.Join(crd.Spec.Names.Categories, ","); got != "all" {
		t.Errorf("categories = %q, want all (kubectl get all lists RayClusters)", got)
	}
	// v1 stored; v1alpha1 served, deprecated, not stored, as in KubeRay
	// v1.7.0's CRD (hack/crddesc -serve-deprecated).
	if len(crd.Spec.Versions) != 2 || crd.Spec.Versions[0].Name != "v1" || crd.Spec.Versions[1].Name != "v1alpha1" {
		var names []string
		for _, v := range crd.Spec.Versions {
			names = append(names, v.Name)
		}
		t.Fatalf("versions = %v, want [v1 v1alpha1]", names)
	}
	if v := crd.Spec.Versions[0]; !v.Served || !v.Storage || v.Deprecated {
		t.Errorf("v1: served %v storage %v deprecated %v, want served and stored", v.Served, v.Storage, v.Deprecated)
	}
	if a := crd.Spec.Versions[1]; !a.Served || a.Storage || !a.Deprecated ||
		ptr.Deref(a.DeprecationWarning, "") != "ray.io/v1alpha1 RayCluster is deprecated; use ray.io/v1 RayCluster." {
		t.Errorf("v1alpha1: served %v storage %v deprecated %v warning %q, want served, deprecated, not stored, with KubeRay's warning",
			a.Served, a.Storage, a.Deprecated, ptr.Deref(a.DeprecationWarning, ""))
	}
	v := crd.Spec.Versions[0]
	if v.Subresources == nil || v.Subresources.Status == nil {
		t.Errorf("status subresource missing")
	}
	var columns []string
	for _, col := range v.AdditionalPrinterColumns {
		if col.Priority == 0 {
			columns = append(columns, col.Name+"="+col.JSONPath)
		}
	}
	want := "desired workers=.status.desiredWorkerReplicas,available workers=.status.availableWorkerReplicas," +
		"cpus=.status.desiredCPU,memory=.status.desiredMemory,gpus=.status.desiredGPU,status=.status.state,age=.metadata.creationTimestamp"
	if got := strings.Join(columns, ","); got != want {
		t.Errorf("default printer columns =\n  %s\nwant\n  %s", got, want)
	}
}

type groupDefaults struct {
	replicas, minReplicas, maxReplicas, numOfHosts int32
}

func testSamples(t *testing.T, c client.Client) {
	cases := []struct {
		file   string
		groups map[string]groupDefaults
	}{
		{"ray_v1_raycluster_minimal.yaml", map[string]groupDefaults{
			"workergroup": {replicas: 1, minReplicas: 0, maxReplicas: math.MaxInt32, numOfHosts: 1},
		}},
		{"ray_v1_raycluster_autoscaler.yaml", map[string]groupDefaults{
			"small-group": {replicas: 1, minReplicas: 1, maxReplicas: 10, numOfHosts: 1},
			"gpu-group":   {replicas: 0, minReplicas: 0, maxReplicas: 4, numOfHosts: 1},
		}},
		{"ray_v1_raycluster_gcs_ft.yaml", map[string]groupDefaults{
			"small-group": {replicas: 1, minReplicas: 1, maxReplicas: 10, numOfHosts: 1},
		}},
		{"ray_v1_raycluster_tpu_multihost.yaml", map[string]groupDefaults{
			"tpu-group": {replicas: 1, minReplicas: 1, maxReplicas: 1, numOfHosts: 4},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			ctx := context.Background()
			sample := loadSample(t, tc.file)
			sample.SetNamespace("default")
			original := sample.DeepCopy()

			// Strict field validation fails the create if the schema lacks
			// any field the user wrote, instead of silently pruning it.
			if err := c.Create(ctx, sample, client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
				t.Fatalf("creating the sample: %v", err)
			}

			stored := &unstructured.Unstructured{}
			stored.SetGroupVersionKind(rayv1.RayClusterGroupVersionKind)
			if err := c.Get(ctx, client.ObjectKeyFromObject(sample), stored); err != nil {
				t.Fatalf("reading the sample back: %v", err)
			}
			// Pod template metadata is nested ObjectMeta: without embedded
			// metadata in the schema the API server prunes its labels.
			if missing := missingLeaves(original.Object["spec"], stored.Object["spec"], ".spec"); len(missing) > 0 {
				t.Errorf("fields written by the user were not stored as written:\n  %s", strings.Join(missing, "\n  "))
			}

			var rc rayv1.RayCluster
			if err := c.Get(ctx, client.ObjectKeyFromObject(sample), &rc); err != nil {
				t.Fatalf("reading the sample back typed: %v", err)
			}
			if len(rc.Spec.WorkerGroupSpecs) != len(tc.groups) {
				t.Fatalf("got %d worker groups, want %d", len(rc.Spec.WorkerGroupSpecs), len(tc.groups))
			}
			for _, g := range rc.Spec.WorkerGroupSpecs {
				want, ok := tc.groups[g.GroupName]
				if !ok {
					t.Errorf("unexpected worker group %q", g.GroupName)
					continue
				}
				got := groupDefaults{
					replicas:    ptr.Deref(g.Replicas, -1),
					minReplicas: ptr.Deref(g.MinReplicas, -1),
					maxReplicas: ptr.Deref(g.MaxReplicas, -1),
					numOfHosts:  g.NumOfHosts,
				}
				if got != want {
					t.Errorf("group %q stored as %+v, want %+v", g.GroupName, got, want)
				}
			}
		})
	}
}

func testInvalidSpecs(t *testing.T, c client.Client) {
	cases := []struct {
		name    string
		mutate  func(obj map[string]any)
		wantMsg string
	}{
		{
			name:    "unknown managedBy",
			mutate:  setField("my-own-controller", "spec", "managedBy"),
			wantMsg: "the managedBy field value must be either 'ray.io/kuberay-operator' or 'kueue.x-k8s.io/multikueue'",
		},
		{
			name:    "unknown upgrade strategy",
			mutate:  setField("RollingUpdate", "spec", "upgradeStrategy", "type"),
			wantMsg: `spec.upgradeStrategy.type: Unsupported value: "RollingUpdate"`,
		},
		{
			name:    "unknown upscaling mode",
			mutate:  setField("Eager", "spec", "autoscalerOptions", "upscalingMode"),
			wantMsg: `spec.autoscalerOptions.upscalingMode: Unsupported value: "Eager"`,
		},
		{
			name:    "unknown autoscaler version",
			mutate:  setField("v3", "spec", "autoscalerOptions", "version"),
			wantMsg: `spec.autoscalerOptions.version: Unsupported value: "v3"`,
		},
		{
			name:    "unknown auth mode",
			mutate:  setField("password", "spec", "authOptions", "mode"),
			wantMsg: `spec.authOptions.mode: Unsupported value: "password"`,
		},
		// gcsFaultToleranceOptions without redisAddress passes the schema
		// since KubeRay v1.7 (the rocksdb backend has none); Gantry's
		// validation refuses it for the redis backend.
		{
			name:    "an unknown GCS fault tolerance backend",
			mutate:  setField(map[string]any{"backend": "etcd"}, "spec", "gcsFaultToleranceOptions"),
			wantMsg: `spec.gcsFaultToleranceOptions.backend: Unsupported value: "etcd"`,
		},
		{
			name:    "head group without template",
			mutate:  func(obj map[string]any) { unstructured.RemoveNestedField(obj, "spec", "headGroupSpec", "template") },
			wantMsg: "spec.headGroupSpec.template: Required value",
		},
		{
			name: "worker group without name",
			mutate: func(obj map[string]any) {
				groups, _, _ := unstructured.NestedSlice(obj, "spec", "workerGroupSpecs")
				delete(groups[0].(map[string]any), "groupName")
				_ = unstructured.SetNestedSlice(obj, groups, "spec", "workerGroupSpecs")
			},
			wantMsg: "spec.workerGroupSpecs[0].groupName: Required value",
		},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := loadSample(t, "ray_v1_raycluster_minimal.yaml")
			obj.SetNamespace("default")
			obj.SetName(fmt.Sprintf("invalid-%d", i))
			tc.mutate(obj.Object)
			err := c.Create(context.Background(), obj)
			if !apierrors.IsInvalid(err) {
				t.Fatalf("create error = %v, want an Invalid error", err)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("create error = %q, want it to mention %q", err.Error(), tc.wantMsg)
			}
		})
	}
}

// testRayStartParamsNull: Kueue's RayCluster webhook (v0.17, built on
// KubeRay v1.6.0's Go types, whose rayStartParams has no omitempty) answers
// a cluster created without rayStartParams, which is optional, with a patch
// that sets it to null. The API server prunes a null from a request body
// but not from a webhook's patch, which it validates as it is: the schema
// must allow null there (the kueue e2e specs create RayClusters that way).
func testRayStartParamsNull(t *testing.T, c client.Client) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := c.Get(context.Background(), client.ObjectKey{Name: "rayclusters.ray.io"}, &crd); err != nil {
		t.Fatal(err)
	}
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	head := spec.Properties["headGroupSpec"].Properties["rayStartParams"]
	worker := spec.Properties["workerGroupSpecs"].Items.Schema.Properties["rayStartParams"]
	if !head.Nullable || !worker.Nullable {
		t.Errorf("rayStartParams nullable: head %v, worker %v; want both", head.Nullable, worker.Nullable)
	}

	obj := loadSample(t, "ray_v1_raycluster_minimal.yaml")
	obj.SetNamespace("default")
	obj.SetName("null-start-params")
	setField(nil, "spec", "headGroupSpec", "rayStartParams")(obj.Object)
	if err := c.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating a cluster whose rayStartParams are null: %v", err)
	}
	var rc rayv1.RayCluster
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), &rc); err != nil {
		t.Fatal(err)
	}
	if len(rc.Spec.HeadGroupSpec.RayStartParams) != 0 {
		t.Errorf("rayStartParams read back as %v, want none", rc.Spec.HeadGroupSpec.RayStartParams)
	}
}

func testManagedByImmutable(t *testing.T, c client.Client) {
	ctx := context.Background()
	obj := loadSample(t, "ray_v1_raycluster_minimal.yaml")
	obj.SetNamespace("default")
	obj.SetName("managed-by-kuberay")
	setField(rayv1.KubeRayController, "spec", "managedBy")(obj.Object)
	if err := c.Create(ctx, obj); err != nil {
		t.Fatalf("creating a cluster with managedBy %s: %v", rayv1.KubeRayController, err)
	}

	var rc rayv1.RayCluster
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), &rc); err != nil {
		t.Fatal(err)
	}
	// An unrelated spec change must still go through: the rule only guards
	// managedBy itself.
	rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](2)
	if err := c.Update(ctx, &rc); err != nil {
		t.Fatalf("updating replicas with managedBy unchanged: %v", err)
	}

	rc.Spec.ManagedBy = ptr.To(rayv1.MultiKueueController)
	err := c.Update(ctx, &rc)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "the managedBy field is immutable") {
		t.Fatalf("changing managedBy: error = %v, want Invalid mentioning immutability", err)
	}
}

func testStatusSubresource(t *testing.T, c client.Client) {
	ctx := context.Background()
	obj := loadSample(t, "ray_v1_raycluster_minimal.yaml")
	obj.SetNamespace("default")
	obj.SetName("status-subresource")
	if err := c.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	var rc rayv1.RayCluster
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), &rc); err != nil {
		t.Fatal(err)
	}
	generation := rc.Generation

	now := metav1.Now()
	rc.Status = rayv1.RayClusterStatus{
		State:                   rayv1.Ready,
		DesiredWorkerReplicas:   1,
		AvailableWorkerReplicas: 1,
		ReadyWorkerReplicas:     1,
		MaxWorkerReplicas:       math.MaxInt32,
		DesiredCPU:              resource.MustParse("2"),
		DesiredMemory:           resource.MustParse("3G"),
		Endpoints:               map[string]string{"dashboard": "8265"},
		Head:                    rayv1.HeadInfo{PodName: "status-subresource-head-x", PodIP: "10.0.0.1", ServiceName: "status-subresource-head-svc"},
		ObservedGeneration:      generation,
		LastUpdateTime:          &now,
		StateTransitionTimes:    map[rayv1.ClusterState]*metav1.Time{rayv1.Ready: &now},
		Conditions: []metav1.Condition{{
			Type: string(rayv1.HeadPodReady), Status: metav1.ConditionTrue,
			Reason: rayv1.HeadPodRunningAndReady, LastTransitionTime: now,
		}},
	}
	// A spec change smuggled into a status write must be ignored.
	rc.Spec.Suspend = ptr.To(true)
	if err := c.Status().Update(ctx, &rc); err != nil {
		t.Fatalf("updating status: %v", err)
	}

	var got rayv1.RayCluster
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), &got); err != nil {
		t.Fatal(err)
	}
	if got.Status.State != rayv1.Ready || got.Status.Head.PodName != "status-subresource-head-x" ||
		got.Status.MaxWorkerReplicas != math.MaxInt32 || got.Status.DesiredCPU.Cmp(resource.MustParse("2")) != 0 ||
		got.Status.StateTransitionTimes[rayv1.Ready] == nil || got.Status.ObservedGeneration != generation {
		t.Errorf("status not stored as written: %+v", got.Status)
	}
	if !meta.IsStatusConditionTrue(got.Status.Conditions, string(rayv1.HeadPodReady)) {
		t.Errorf("HeadPodReady condition not stored: %+v", got.Status.Conditions)
	}
	if got.Spec.IsSuspended() {
		t.Errorf("a status write changed spec.suspend")
	}
	if got.Generation != generation {
		t.Errorf("a status write bumped generation %d -> %d", generation, got.Generation)
	}

	// And the other way round: a main-resource write cannot change status.
	got.Status.State = rayv1.Suspended
	got.Labels = map[string]string{"touched": "yes"}
	if err := c.Update(ctx, &got); err != nil {
		t.Fatalf("updating the main resource: %v", err)
	}
	var after rayv1.RayCluster
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), &after); err != nil {
		t.Fatal(err)
	}
	if after.Labels["touched"] != "yes" {
		t.Errorf("main-resource update lost its label change")
	}
	if after.Status.State != rayv1.Ready {
		t.Errorf("main-resource update changed status.state to %q", after.Status.State)
	}
}

// testKubeRaySamples creates every RayCluster of KubeRay v1.7.0's samples
// (test/wrappers/ray/testdata/samples) with strict field validation, so a
// field the schema lacks fails instead of being pruned, and checks every
// field written is stored. The CRD alone: what Gantry's webhook and
// reconciler refuse is pkg/webhook's test.
func testKubeRaySamples(t *testing.T, c client.Client) {
	ctx := context.Background()
	samples := raytesting.SampleClusters(t)
	for i, doc := range samples {
		obj := map[string]any{}
		if err := json.Unmarshal(doc, &obj); err != nil {
			t.Fatal(err)
		}
		sample := &unstructured.Unstructured{Object: obj}
		// Several samples share a name: a namespace each.
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("kuberay-sample-%d", i)}}
		if err := c.Create(ctx, ns); err != nil {
			t.Fatal(err)
		}
		sample.SetNamespace(ns.Name)
		original := sample.DeepCopy()
		if err := c.Create(ctx, sample, client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
			t.Errorf("sample %s: %v", original.GetName(), err)
			continue
		}
		stored := &unstructured.Unstructured{}
		stored.SetGroupVersionKind(rayv1.RayClusterGroupVersionKind)
		if err := c.Get(ctx, client.ObjectKeyFromObject(sample), stored); err != nil {
			t.Fatal(err)
		}
		if missing := missingLeaves(original.Object["spec"], stored.Object["spec"], ".spec"); len(missing) > 0 {
			t.Errorf("sample %s: fields not stored as written:\n  %s", original.GetName(), strings.Join(missing, "\n  "))
		}
	}
	t.Logf("%d RayClusters of KubeRay v1.7.0's samples stored", len(samples))
	if len(samples) < 46 {
		t.Errorf("%d RayCluster documents in the samples, want KubeRay v1.7.0's 46", len(samples))
	}
}

// testV1alpha1Served: a RayCluster written as ray.io/v1alpha1 (clients of
// KubeRay before 1.0) is admitted, stored as v1 and read back either way.
func testV1alpha1Served(t *testing.T, c client.Client) {
	ctx := context.Background()
	sample := loadSample(t, "ray_v1_raycluster_minimal.yaml")
	sample.SetAPIVersion("ray.io/v1alpha1")
	sample.SetName("old-client")
	sample.SetNamespace("default")
	original := sample.DeepCopy()
	if err := c.Create(ctx, sample, client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
		t.Fatalf("creating as v1alpha1: %v", err)
	}
	var rc rayv1.RayCluster
	if err := c.Get(ctx, client.ObjectKeyFromObject(sample), &rc); err != nil {
		t.Fatalf("reading as v1: %v", err)
	}
	if len(rc.Spec.WorkerGroupSpecs) != 1 || rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Image == "" {
		t.Errorf("read as v1: %+v", rc.Spec)
	}
	back := &unstructured.Unstructured{}
	back.SetAPIVersion("ray.io/v1alpha1")
	back.SetKind("RayCluster")
	if err := c.Get(ctx, client.ObjectKeyFromObject(sample), back); err != nil {
		t.Fatalf("reading as v1alpha1: %v", err)
	}
	if missing := missingLeaves(original.Object["spec"], back.Object["spec"], ".spec"); len(missing) > 0 {
		t.Errorf("fields not stored as written:\n  %s", strings.Join(missing, "\n  "))
	}
	// The schema is v1's: an unknown field is refused under strict
	// validation, not stored.
	bad := original.DeepCopy()
	bad.SetName("old-client-typo")
	if err := unstructured.SetNestedField(bad.Object, "x", "spec", "notAField"); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, bad, client.FieldValidation(metav1.FieldValidationStrict)); err == nil || !strings.Contains(err.Error(), "notAField") {
		t.Errorf("an unknown field through v1alpha1: %v, want it refused", err)
	}
}

// testStoredVersionsTakeover: a CRD that KubeRay installed long ago lists
// v1alpha1 in status.storedVersions. The API server refuses an update of
// the CRD whose versions leave out a stored one; Gantry's keeps v1alpha1,
// so applying it over such a CRD succeeds.
func testStoredVersionsTakeover(t *testing.T, c client.Client) {
	ctx := context.Background()
	var crd apiextensionsv1.CustomResourceDefinition
	if err := c.Get(ctx, client.ObjectKey{Name: "rayclusters.ray.io"}, &crd); err != nil {
		t.Fatal(err)
	}
	crd.Status.StoredVersions = []string{"v1alpha1", "v1"}
	if err := c.Status().Update(ctx, &crd); err != nil {
		t.Fatalf("recording v1alpha1 as stored: %v", err)
	}
	// Gantry's CRD as generated, applied over it.
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "crd", "bases", "ray.io_rayclusters.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var ours apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(raw, &ours); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "rayclusters.ray.io"}, &crd); err != nil {
		t.Fatal(err)
	}
	crd.Spec = ours.Spec
	if err := c.Update(ctx, &crd); err != nil {
		t.Errorf("updating a CRD that stored v1alpha1 with Gantry's: %v", err)
	}
	// The control: without v1alpha1 the same update is refused.
	withoutAlpha := crd.DeepCopy()
	withoutAlpha.Spec.Versions = withoutAlpha.Spec.Versions[:1]
	if err := c.Update(ctx, withoutAlpha, client.DryRunAll); err == nil || !strings.Contains(err.Error(), "storedVersions") {
		t.Errorf("dropping v1alpha1 from a CRD that stored it: %v, want it refused for storedVersions", err)
	}
}

func loadSample(t *testing.T, file string) *unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "samples", file))
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{}
	if err := yaml.Unmarshal(raw, &obj); err != nil {
		t.Fatalf("parsing %s: %v", file, err)
	}
	return &unstructured.Unstructured{Object: obj}
}

func setField(value any, path ...string) func(map[string]any) {
	return func(obj map[string]any) {
		if err := unstructured.SetNestedField(obj, value, path...); err != nil {
			panic(err)
		}
	}
}

// missingLeaves lists every scalar in want that got lacks or holds with a
// different value. Numbers compare by value because YAML decodes to float64
// and the API server's JSON to int64.
func missingLeaves(want, got any, path string) []string {
	switch w := want.(type) {
	case map[string]any:
		g, _ := got.(map[string]any)
		var out []string
		for k, v := range w {
			out = append(out, missingLeaves(v, g[k], path+"."+k)...)
		}
		return out
	case []any:
		g, _ := got.([]any)
		var out []string
		for i, v := range w {
			var gv any
			if i < len(g) {
				gv = g[i]
			}
			out = append(out, missingLeaves(v, gv, fmt.Sprintf("%s[%d]", path, i))...)
		}
		return out
	default:
		if fmt.Sprint(want) != fmt.Sprint(got) {
			return []string{fmt.Sprintf("%s: want %v, got %v", path, want, got)}
		}
		return nil
	}
}
