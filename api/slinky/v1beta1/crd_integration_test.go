package v1beta1_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/test/testenv"
)

// One control plane serves every subtest; each subtest works in its own
// namespace so they cannot see each other's objects.
func TestSlinkyCRDs(t *testing.T) {
	env := testenv.Start(t, testenv.Options{
		AddToScheme: []func(*runtime.Scheme) error{slinkyv1beta1.AddToScheme, apiextensionsv1.AddToScheme},
	})
	c := env.Client

	t.Run("samples are accepted and get upstream defaults", func(t *testing.T) { testSamples(t, c) })
	t.Run("minimal objects get upstream defaults", func(t *testing.T) { testMinimalDefaults(t, c) })
	t.Run("upstream-style manifests are accepted unchanged", func(t *testing.T) { testUpstreamManifests(t, c) })
	t.Run("slinky v1.2 and v1.3 fields round-trip", func(t *testing.T) { testSlinkyV12Fields(t, c) })
	t.Run("slinky v1.2 and v1.3 fields get upstream defaults", func(t *testing.T) { testSlinkyV12Defaults(t, c) })
	t.Run("invalid objects are rejected", func(t *testing.T) { testRejections(t, c) })
	t.Run("nodeset controllerRef is immutable", func(t *testing.T) { testControllerRefImmutable(t, c) })
	t.Run("nodeset scale subresource", func(t *testing.T) { testScaleSubresource(t, c) })
	t.Run("crd names, columns and subresources", func(t *testing.T) { testCRDShape(t, c) })
}

func testSamples(t *testing.T, c client.Client) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, c)
	samples := filepath.Join(testenv.RepoRoot(), "config", "samples")

	for _, file := range []string{"slinky_v1beta1_controller.yaml", "slinky_v1beta1_restapi.yaml", "slinky_v1beta1_nodeset.yaml"} {
		raw, err := os.ReadFile(filepath.Join(samples, file))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(createFromYAML(ctx, c, ns, string(raw))).To(Succeed(), file)
	}

	controller := &slinkyv1beta1.Controller{}
	g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "slurm"}, controller)).To(Succeed())
	g.Expect(controller.Spec.External).To(BeFalse())
	g.Expect(controller.Spec.Persistence.Enabled).To(HaveValue(BeTrue()), "persistence.enabled defaults to true")
	g.Expect(controller.Spec.Persistence.Resources.Requests.Storage().String()).To(Equal("4Gi"))
	g.Expect(controller.Spec.SlurmKeyRef).To(HaveValue(HaveField("Key", "slurm.key")))
	g.Expect(controller.Spec.EffectiveJwtKeyRef()).To(HaveValue(HaveField("Key", "jwt.key")))
	g.Expect(controller.Spec.Slurmctld.Image).To(Equal("ghcr.io/slinkyproject/slurmctld:25.11-ubuntu24.04"))
	g.Expect(controller.Spec.Service.Spec.Type).To(Equal(corev1.ServiceTypeClusterIP))
	g.Expect(controller.ClusterName()).To(Equal(ns + "_slurm"))

	restapi := &slinkyv1beta1.RestApi{}
	g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "slurm"}, restapi)).To(Succeed())
	g.Expect(restapi.Spec.Replicas).To(HaveValue(BeEquivalentTo(1)))
	g.Expect(restapi.Spec.ControllerRef.Name).To(Equal("slurm"))

	nodeset := &slinkyv1beta1.NodeSet{}
	g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "slinky"}, nodeset)).To(Succeed())
	g.Expect(nodeset.Spec.Replicas).To(HaveValue(BeEquivalentTo(1)))
	g.Expect(nodeset.Spec.UpdateStrategy.Type).To(Equal(slinkyv1beta1.RollingUpdateNodeSetStrategyType))
	g.Expect(nodeset.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable).To(HaveValue(Equal(intstr.FromString("25%"))))
	g.Expect(nodeset.Spec.WorkloadDisruptionProtection).To(HaveValue(BeTrue()))
	g.Expect(nodeset.Spec.Partition).To(Equal(slinkyv1beta1.NodeSetPartition{Enabled: true, Config: "State=UP MaxTime=UNLIMITED"}))
	g.Expect(nodeset.Spec.Slurmd.Resources.Limits.Memory().String()).To(Equal("1Gi"))
	g.Expect(nodeset.Spec.Template.Spec.Hostname).To(Equal("slinky-"))
	g.Expect(nodeset.ControllerKey()).To(Equal(types.NamespacedName{Namespace: ns, Name: "slurm"}))
}

// Users applying YAML omit whole sub-objects; the defaults must still appear,
// exactly as they do for Go clients that always send the sub-objects.
func testMinimalDefaults(t *testing.T, c client.Client) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, c)

	g.Expect(createFromYAML(ctx, c, ns, `
apiVersion: slinky.slurm.net/v1beta1
kind: Controller
metadata: {name: minimal}
spec:
  slurmKeyRef: {name: keys, key: slurm.key}
  jwtKeyRef: {name: keys, key: jwt.key}
`)).To(Succeed())
	g.Expect(createFromYAML(ctx, c, ns, `
apiVersion: slinky.slurm.net/v1beta1
kind: NodeSet
metadata: {name: minimal}
spec:
  controllerRef: {name: minimal}
`)).To(Succeed())

	controller := &slinkyv1beta1.Controller{}
	g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "minimal"}, controller)).To(Succeed())
	g.Expect(controller.Spec.Persistence.Enabled).To(HaveValue(BeTrue()))

	nodeset := &slinkyv1beta1.NodeSet{}
	g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "minimal"}, nodeset)).To(Succeed())
	g.Expect(nodeset.Spec.Replicas).To(HaveValue(BeEquivalentTo(1)))
	g.Expect(nodeset.Spec.ScalingMode).To(Equal(slinkyv1beta1.ScalingModeStatefulset))
	g.Expect(nodeset.Spec.UpdateStrategy.Type).To(Equal(slinkyv1beta1.RollingUpdateNodeSetStrategyType))
	g.Expect(nodeset.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable).To(HaveValue(Equal(intstr.FromString("25%"))))
	g.Expect(nodeset.Spec.PersistentVolumeClaimRetentionPolicy).To(Equal(slinkyv1beta1.NodeSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: slinkyv1beta1.RetainPersistentVolumeClaimRetentionPolicyType,
		WhenScaled:  slinkyv1beta1.RetainPersistentVolumeClaimRetentionPolicyType,
	}))
	g.Expect(nodeset.Spec.WorkloadDisruptionProtection).To(HaveValue(BeTrue()))
	g.Expect(nodeset.Spec.Partition.Enabled).To(BeFalse())
}

// Field sets used by slurm-operator v1.0 and v1.1 manifests (deprecated
// fields included) pass strict field validation, so nothing is silently pruned.
func testUpstreamManifests(t *testing.T, c client.Client) {
	ctx := context.Background()
	ns := newNamespace(t, c)
	manifests := map[string]string{
		"v1.0 controller with jwtHs256KeyRef, accounting, scripts and metrics": `
apiVersion: slinky.slurm.net/v1beta1
kind: Controller
metadata: {name: v10}
spec:
  clusterName: hpc
  slurmKeyRef: {name: keys, key: slurm.key}
  jwtHs256KeyRef: {name: keys, key: jwt_hs256.key}
  accountingRef: {name: slurm}
  prologScriptRefs: [{name: prolog}]
  epilogScriptRefs: [{name: epilog}]
  prologSlurmctldScriptRefs: [{name: prolog-ctld}]
  epilogSlurmctldScriptRefs: [{name: epilog-ctld}]
  persistence: {enabled: true, existingClaim: slurmctld-state}
  service: {port: 6817, nodePort: 30817, metadata: {labels: {a: b}}, spec: {type: NodePort}}
  template: {metadata: {annotations: {a: b}}, spec: {priorityClassName: high}}
  metrics:
    enabled: true
    serviceMonitor:
      enabled: true
      labels: {release: prometheus}
      interval: 30s
      scrapeTimeout: 25s
      endpoints: [{path: /metrics/jobs, interval: 1m}]
`,
		"external controller": `
apiVersion: slinky.slurm.net/v1beta1
kind: Controller
metadata: {name: external}
spec:
  external: true
  externalConfig: {host: slurmctld.example.com, port: 6817}
`,
		"v1.1 nodeset with every field": `
apiVersion: slinky.slurm.net/v1beta1
kind: NodeSet
metadata: {name: v11}
spec:
  controllerRef: {name: slurm, namespace: ` + ns + `}
  replicas: 4
  scalingMode: StatefulSet
  slurmd: {image: slurmd:25.11, env: [{name: A, value: b}]}
  logfile: {image: alpine}
  ssh: {enabled: true, extraSshdConfig: "X11Forwarding no", sssdConfRef: {name: sssd, key: sssd.conf}}
  template: {spec: {tolerations: [{key: gpu, operator: Exists}]}}
  extraConf: Gres=gpu:1
  partition: {enabled: true, config: MaxTime=60}
  volumeClaimTemplates:
  - metadata: {name: scratch}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
  updateStrategy: {type: OnDelete, rollingUpdate: {maxUnavailable: 2}}
  revisionHistoryLimit: 3
  persistentVolumeClaimRetentionPolicy: {whenDeleted: Delete, whenScaled: Delete}
  minReadySeconds: 10
  ordinalPadding: 3
  taintKubeNodes: false
  workloadDisruptionProtection: false
`,
		"restapi with replicas": `
apiVersion: slinky.slurm.net/v1beta1
kind: RestApi
metadata: {name: rest}
spec:
  controllerRef: {name: slurm}
  replicas: 2
  template: {metadata: {labels: {a: b}}}
  service: {port: 6820}
`,
	}
	for name, manifest := range manifests {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(createFromYAML(ctx, c, ns, manifest)).To(Succeed())
		})
	}

	// Values the user set must survive defaulting untouched.
	g := NewWithT(t)
	nodeset := &slinkyv1beta1.NodeSet{}
	g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "v11"}, nodeset)).To(Succeed())
	g.Expect(nodeset.Spec.UpdateStrategy.Type).To(Equal(slinkyv1beta1.OnDeleteNodeSetStrategyType))
	g.Expect(nodeset.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable).To(HaveValue(Equal(intstr.FromInt32(2))))
	g.Expect(nodeset.Spec.WorkloadDisruptionProtection).To(HaveValue(BeFalse()))
	g.Expect(nodeset.Spec.VolumeClaimTemplates).To(HaveLen(1))
	g.Expect(nodeset.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests.Storage().String()).To(Equal("1Gi"))
}

func testRejections(t *testing.T, c client.Client) {
	ctx := context.Background()
	ns := newNamespace(t, c)
	tests := []struct {
		name     string
		manifest string
		message  string
	}{
		{
			name: "controller without slurmKeyRef",
			manifest: `
apiVersion: slinky.slurm.net/v1beta1
kind: Controller
metadata: {name: no-slurm-key}
spec:
  jwtKeyRef: {name: keys, key: jwt.key}
`,
			message: "slurmKeyRef must be set when external is false",
		},
		{
			name: "controller without any jwt key",
			manifest: `
apiVersion: slinky.slurm.net/v1beta1
kind: Controller
metadata: {name: no-jwt-key}
spec:
  slurmKeyRef: {name: keys, key: slurm.key}
`,
			message: "jwtKeyRef or jwtHs256KeyRef must be set when external is false",
		},
		{
			name: "external controller without externalConfig",
			manifest: `
apiVersion: slinky.slurm.net/v1beta1
kind: Controller
metadata: {name: external-unset}
spec:
  external: true
`,
			message: "externalConfig must be set when external is true",
		},
		{
			name: "bad metrics interval",
			manifest: `
apiVersion: slinky.slurm.net/v1beta1
kind: Controller
metadata: {name: bad-interval}
spec:
  slurmKeyRef: {name: keys, key: slurm.key}
  jwtKeyRef: {name: keys, key: jwt.key}
  metrics: {serviceMonitor: {interval: 5 minutes}}
`,
			message: "spec.metrics.serviceMonitor.interval",
		},
		{
			name: "nodeset without controllerRef",
			manifest: `
apiVersion: slinky.slurm.net/v1beta1
kind: NodeSet
metadata: {name: no-ref}
spec: {replicas: 1}
`,
			message: "spec.controllerRef: Required value",
		},
		{
			name: "nodeset with an unknown update strategy",
			manifest: `
apiVersion: slinky.slurm.net/v1beta1
kind: NodeSet
metadata: {name: recreate}
spec:
  controllerRef: {name: slurm}
  updateStrategy: {type: Recreate}
`,
			message: `spec.updateStrategy.type: Unsupported value: "Recreate"`,
		},
		{
			name: "nodeset with an unknown claim retention policy",
			manifest: `
apiVersion: slinky.slurm.net/v1beta1
kind: NodeSet
metadata: {name: keep}
spec:
  controllerRef: {name: slurm}
  persistentVolumeClaimRetentionPolicy: {whenScaled: Keep}
`,
			message: `spec.persistentVolumeClaimRetentionPolicy.whenScaled: Unsupported value: "Keep"`,
		},
		{
			name: "nodeset with negative replicas",
			manifest: `
apiVersion: slinky.slurm.net/v1beta1
kind: NodeSet
metadata: {name: negative}
spec:
  controllerRef: {name: slurm}
  replicas: -1
`,
			message: "spec.replicas",
		},
		{
			name: "nodeset with an unknown scaling mode",
			manifest: `
apiVersion: slinky.slurm.net/v1beta1
kind: NodeSet
metadata: {name: replicaset}
spec:
  controllerRef: {name: slurm}
  scalingMode: ReplicaSet
`,
			message: `spec.scalingMode: Unsupported value: "ReplicaSet"`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := createFromYAML(ctx, c, ns, tc.manifest)
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid error, got %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tc.message))
		})
	}
}

func testControllerRefImmutable(t *testing.T, c client.Client) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, c)
	nodeset := &slinkyv1beta1.NodeSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "workers"},
		Spec:       slinkyv1beta1.NodeSetSpec{ControllerRef: slinkyv1beta1.ObjectReference{Name: "slurm"}},
	}
	g.Expect(c.Create(ctx, nodeset)).To(Succeed())

	// Other fields stay mutable; only the reference is frozen.
	nodeset.Spec.Replicas = ptr.To[int32](2)
	g.Expect(c.Update(ctx, nodeset)).To(Succeed())

	tests := []struct {
		name string
		ref  slinkyv1beta1.ObjectReference
	}{
		{name: "another name", ref: slinkyv1beta1.ObjectReference{Name: "other"}},
		{name: "an explicit namespace", ref: slinkyv1beta1.ObjectReference{Name: "slurm", Namespace: ns}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			changed := nodeset.DeepCopy()
			changed.Spec.ControllerRef = tc.ref
			err := c.Update(ctx, changed)
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid error, got %v", err)
			g.Expect(err.Error()).To(ContainSubstring("controllerRef is immutable"))
		})
	}
}

func testScaleSubresource(t *testing.T, c client.Client) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, c)
	nodeset := &slinkyv1beta1.NodeSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "workers"},
		Spec:       slinkyv1beta1.NodeSetSpec{ControllerRef: slinkyv1beta1.ObjectReference{Name: "slurm"}},
	}
	g.Expect(c.Create(ctx, nodeset)).To(Succeed())

	scale := &autoscalingv1.Scale{}
	g.Expect(c.SubResource("scale").Patch(ctx, nodeset,
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":3}}`)),
		client.WithSubResourceBody(scale))).To(Succeed())
	g.Expect(scale.Spec.Replicas).To(BeEquivalentTo(3))
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(nodeset), nodeset)).To(Succeed())
	g.Expect(nodeset.Spec.Replicas).To(HaveValue(BeEquivalentTo(3)))

	// The controller publishes the selector in status; HPAs read it via /scale.
	const selector = "app.kubernetes.io/instance=workers,app.kubernetes.io/name=slurmd"
	nodeset.Status.Replicas = 2
	nodeset.Status.Selector = selector
	g.Expect(c.Status().Update(ctx, nodeset)).To(Succeed())

	scale = &autoscalingv1.Scale{}
	g.Expect(c.SubResource("scale").Get(ctx, nodeset, scale)).To(Succeed())
	g.Expect(scale.Status.Selector).To(Equal(selector))
	g.Expect(scale.Status.Replicas).To(BeEquivalentTo(2))
	g.Expect(scale.Spec.Replicas).To(BeEquivalentTo(3))
}

func testCRDShape(t *testing.T, c client.Client) {
	ctx := context.Background()
	type column struct {
		Name     string
		Priority int32
	}
	tests := []struct {
		crd        string
		shortNames []string
		columns    []column
		scale      *apiextensionsv1.CustomResourceSubresourceScale
	}{
		{
			crd:        "controllers.slinky.slurm.net",
			shortNames: []string{"slurmctld"},
			columns:    []column{{"AGE", 0}},
		},
		{
			crd:        "restapis.slinky.slurm.net",
			shortNames: []string{"slurmrestd"},
			columns:    []column{{"AGE", 0}},
		},
		{
			crd:        "nodesets.slinky.slurm.net",
			shortNames: []string{"nodesets", "nss", "slurmd"},
			columns: []column{
				{"DESIRED", 0}, {"REPLICAS", 0}, {"UPDATED", 0}, {"READY", 0},
				{"IDLE", 1}, {"ALLOCATED", 1}, {"DOWN", 1}, {"DRAIN", 1}, {"AGE", 0},
			},
			scale: &apiextensionsv1.CustomResourceSubresourceScale{
				SpecReplicasPath:   ".spec.replicas",
				StatusReplicasPath: ".status.replicas",
				LabelSelectorPath:  ptr.To(".status.selector"),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.crd, func(t *testing.T) {
			g := NewWithT(t)
			crd := &apiextensionsv1.CustomResourceDefinition{}
			g.Expect(c.Get(ctx, types.NamespacedName{Name: tc.crd}, crd)).To(Succeed())
			g.Expect(crd.Spec.Names.ShortNames).To(Equal(tc.shortNames))
			g.Expect(crd.Spec.Versions).To(HaveLen(1))
			version := crd.Spec.Versions[0]
			g.Expect(version.Name).To(Equal("v1beta1"))
			var columns []column
			for _, col := range version.AdditionalPrinterColumns {
				columns = append(columns, column{col.Name, col.Priority})
			}
			g.Expect(columns).To(Equal(tc.columns))
			g.Expect(version.Subresources).NotTo(BeNil())
			g.Expect(version.Subresources.Status).NotTo(BeNil())
			g.Expect(version.Subresources.Scale).To(Equal(tc.scale))
		})
	}
}

// createFromYAML creates a manifest the way `kubectl apply` would: as
// untyped JSON (so Go's zero values are not added) with strict field
// validation (so unknown fields fail instead of being pruned).
func createFromYAML(ctx context.Context, c client.Client, namespace, manifest string) error {
	raw, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(raw); err != nil {
		return err
	}
	obj.SetNamespace(namespace)
	return c.Create(ctx, obj, client.FieldValidation("Strict"))
}

func newNamespace(t *testing.T, c client.Client) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "slinky-"}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}
