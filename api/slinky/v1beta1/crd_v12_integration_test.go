package v1beta1_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
)

// What Slinky's Helm chart (v1.2/v1.3) renders for a Controller and a
// NodeSet, with every field added in v1.2 and v1.3 set away from its
// default. Admission would refuse several of these values; the schema must
// keep all of them, so that the webhook, not pruning, decides.
const (
	upstreamChartController = `
apiVersion: slinky.slurm.net/v1beta1
kind: Controller
metadata: {name: chart}
spec:
  configFileRefs: null
  epilogScriptRefs: null
  epilogSlurmctldScriptRefs: null
  ha:
    backups: 2
    enabled: true
  inplaceReconfigure: true
  jwtKeyRef: {key: jwt.key, name: slurm-auth-jwt}
  logfile: {image: docker.io/library/alpine:latest, imagePullPolicy: IfNotPresent, resources: {}}
  metrics:
    enabled: false
    serviceMonitor:
      annotations: {}
      enabled: false
      endpoints: [{path: /metrics/jobs}, {path: /metrics/nodes}]
      interval: 30s
      labels: {}
      scrapeTimeout: 25s
  persistence:
    accessModes: [ReadWriteMany]
    enabled: true
    existingClaim: slurmctld-state
    resources: {requests: {storage: 4Gi}}
  prologScriptRefs: null
  prologSlurmctldScriptRefs: null
  reconfigure: {image: ghcr.io/slinkyproject/slurmctld:25.11-ubuntu24.04, imagePullPolicy: IfNotPresent, resources: {}}
  service: {metadata: {}, spec: {}}
  slurmKeyRef: {key: slurm.key, name: slurm-auth-slurm}
`
	upstreamChartNodeSet = `
apiVersion: slinky.slurm.net/v1beta1
kind: NodeSet
metadata: {name: chart}
spec:
  controllerRef: {name: chart}
  logfile: {image: docker.io/library/alpine:latest, imagePullPolicy: IfNotPresent, resources: {}}
  ordinalPadding: 0
  oversubscribeNode: true
  partition: {enabled: false}
  pinToNode: true
  pruneSlurmNodeRecords: NodeNotFound
  replicas: 1
  scalingMode: StatefulSet
  slurmd: {args: [], env: [], image: ghcr.io/slinkyproject/slurmd:25.11-ubuntu24.04, imagePullPolicy: IfNotPresent, resources: {}, volumeMounts: []}
  ssh:
    enabled: true
    extraSshdConfig: X11Forwarding no
    sssdConfRef: {name: sssd, key: sssd.conf}
  taintKubeNodes: true
  template:
    metadata: {labels: {app.kubernetes.io/part-of: slurm}}
    spec: {affinity: {}, hostname: slinky-, initContainers: [], nodeSelector: {kubernetes.io/os: linux}, tolerations: [], volumes: []}
  updateStrategy:
    rollingUpdate: {maxUnavailable: 25%}
    scheduledUpdate:
      startTime: "2026-06-01T22:00:00Z"
      duration: 2h
      flags: [IGNORE_JOBS, MAGNETIC]
    type: ScheduledUpdate
  workloadDisruptionProtection: true
`
)

// testSlinkyV12Fields creates upstream-shaped objects with strict field
// validation (an unknown field fails the request instead of being pruned)
// and checks that every value sent is stored and read back by Gantry's
// types; status.ordinalToNode goes through the status subresource.
func testSlinkyV12Fields(t *testing.T, c client.Client) {
	ctx := context.Background()
	ns := newNamespace(t, c)

	for _, manifest := range []string{upstreamChartController, upstreamChartNodeSet} {
		sent := objectFromYAML(t, manifest)
		t.Run(sent.GetKind(), func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(createFromYAML(ctx, c, ns, manifest)).To(Succeed())
			stored := &unstructured.Unstructured{}
			stored.SetGroupVersionKind(sent.GroupVersionKind())
			g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: sent.GetName()}, stored)).To(Succeed())
			g.Expect(missingFrom(sent.Object["spec"], stored.Object["spec"], "spec")).To(BeEmpty(), "fields pruned or changed")
		})
	}

	g := NewWithT(t)
	controller := &slinkyv1beta1.Controller{}
	g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "chart"}, controller)).To(Succeed())
	g.Expect(controller.Spec.HighAvailability).To(Equal(slinkyv1beta1.ControllerHighAvailability{Enabled: true, Backups: ptr.To[int32](2)}))
	g.Expect(controller.Spec.InplaceReconfigure).To(BeTrue())

	nodeset := &slinkyv1beta1.NodeSet{}
	g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "chart"}, nodeset)).To(Succeed())
	g.Expect(nodeset.Spec.PinToNode).To(BeTrue())
	g.Expect(nodeset.Spec.PruneSlurmNodeRecords).To(Equal(slinkyv1beta1.NodeSetPruneNodeRecordTypeNodeNotFound))
	g.Expect(nodeset.Spec.OversubscribeNode).To(BeTrue())
	g.Expect(nodeset.Spec.TaintKubeNodes).To(BeTrue())
	g.Expect(nodeset.Spec.Ssh.Enabled).To(BeTrue())
	g.Expect(nodeset.Spec.UpdateStrategy.Type).To(Equal(slinkyv1beta1.ScheduledUpdateNodeSetStrategyType))
	g.Expect(nodeset.Spec.UpdateStrategy.ScheduledUpdate.StartTime.Time).To(BeTemporally("==", time.Date(2026, 6, 1, 22, 0, 0, 0, time.UTC)))
	g.Expect(nodeset.Spec.UpdateStrategy.ScheduledUpdate.Duration).To(Equal(metav1.Duration{Duration: 2 * time.Hour}))
	g.Expect(nodeset.Spec.UpdateStrategy.ScheduledUpdate.Flags).To(Equal([]string{"IGNORE_JOBS", "MAGNETIC"}))

	status := client.RawPatch(types.MergePatchType, []byte(`{"status":{"ordinalToNode":{"0":"node-a","1":"node-b"}}}`))
	g.Expect(c.Status().Patch(ctx, nodeset, status, client.FieldValidation("Strict"))).To(Succeed())
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(nodeset), nodeset)).To(Succeed())
	g.Expect(nodeset.Status.OrdinalToNode).To(Equal(map[string]string{"0": "node-a", "1": "node-b"}))
}

// testSlinkyV12Defaults: the new fields default as upstream's CRDs do —
// scalar fields always, fields inside ha and scheduledUpdate only when the
// user gives that object (upstream declares no default for the objects).
func testSlinkyV12Defaults(t *testing.T, c client.Client) {
	ctx := context.Background()
	ns := newNamespace(t, c)
	g := NewWithT(t)
	const keys = "  slurmKeyRef: {name: keys, key: slurm.key}\n  jwtKeyRef: {name: keys, key: jwt.key}\n"
	for _, manifest := range []string{
		"apiVersion: slinky.slurm.net/v1beta1\nkind: Controller\nmetadata: {name: bare}\nspec:\n" + keys,
		"apiVersion: slinky.slurm.net/v1beta1\nkind: Controller\nmetadata: {name: empty-ha}\nspec:\n" + keys + "  ha: {}\n",
		"apiVersion: slinky.slurm.net/v1beta1\nkind: NodeSet\nmetadata: {name: bare}\nspec:\n  controllerRef: {name: bare}\n",
		"apiVersion: slinky.slurm.net/v1beta1\nkind: NodeSet\nmetadata: {name: empty-schedule}\nspec:\n  controllerRef: {name: bare}\n  updateStrategy: {scheduledUpdate: {}}\n",
	} {
		g.Expect(createFromYAML(ctx, c, ns, manifest)).To(Succeed(), manifest)
	}

	bare := &slinkyv1beta1.Controller{}
	g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "bare"}, bare)).To(Succeed())
	g.Expect(bare.Spec.InplaceReconfigure).To(BeFalse())
	g.Expect(bare.Spec.HighAvailability).To(BeZero(), "no ha object, no backups default")
	emptyHA := &slinkyv1beta1.Controller{}
	g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "empty-ha"}, emptyHA)).To(Succeed())
	g.Expect(emptyHA.Spec.HighAvailability).To(Equal(slinkyv1beta1.ControllerHighAvailability{Enabled: false, Backups: ptr.To[int32](1)}))

	// Read untyped, so a default the API server did not write cannot hide
	// behind a Go zero value.
	bareNodeSet := getSpec(t, c, ns, "NodeSet", "bare")
	g.Expect(bareNodeSet).To(HaveKeyWithValue("pruneSlurmNodeRecords", "Never"))
	g.Expect(bareNodeSet).To(HaveKeyWithValue("pinToNode", false))
	g.Expect(bareNodeSet).To(HaveKeyWithValue("oversubscribeNode", false))
	g.Expect(bareNodeSet).To(HaveKeyWithValue("updateStrategy", Not(HaveKey("scheduledUpdate"))))
	emptySchedule := getSpec(t, c, ns, "NodeSet", "empty-schedule")
	g.Expect(emptySchedule).To(HaveKeyWithValue("updateStrategy",
		HaveKeyWithValue("scheduledUpdate", Equal(map[string]any{"duration": "30m"}))))
	g.Expect(getSpec(t, c, ns, "Controller", "bare")).To(HaveKeyWithValue("inplaceReconfigure", false))
	g.Expect(getSpec(t, c, ns, "Controller", "empty-ha")).To(HaveKeyWithValue("ha",
		Equal(map[string]any{"enabled": false, "backups": int64(1)})))
}

func objectFromYAML(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	raw, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(raw); err != nil {
		t.Fatal(err)
	}
	return obj
}

func getSpec(t *testing.T, c client.Client, ns, kind, name string) map[string]any {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(slinkyv1beta1.GroupVersion.WithKind(kind))
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, obj); err != nil {
		t.Fatal(err)
	}
	spec, _ := obj.Object["spec"].(map[string]any)
	return spec
}

// missingFrom lists the paths of sent whose value stored lacks or changed;
// stored may hold more (defaults). A null sent for a nullable field may be
// stored as absent.
func missingFrom(sent, stored any, path string) []string {
	switch s := sent.(type) {
	case map[string]any:
		m, ok := stored.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: sent an object, stored %v", path, stored)}
		}
		var out []string
		for k, v := range s {
			got, present := m[k]
			if !present {
				if v == nil {
					continue
				}
				out = append(out, path+"."+k+": pruned")
				continue
			}
			out = append(out, missingFrom(v, got, path+"."+k)...)
		}
		return out
	case []any:
		l, ok := stored.([]any)
		if !ok || len(l) != len(s) {
			return []string{fmt.Sprintf("%s: sent %v, stored %v", path, s, stored)}
		}
		var out []string
		for i := range s {
			out = append(out, missingFrom(s[i], l[i], fmt.Sprintf("%s[%d]", path, i))...)
		}
		return out
	default:
		if !reflect.DeepEqual(sent, stored) {
			return []string{fmt.Sprintf("%s: sent %v (%T), stored %v (%T)", path, sent, sent, stored, stored)}
		}
		return nil
	}
}
