package raycluster

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

func specOf(t *testing.T, pg *unstructured.Unstructured) (int64, map[string]any) {
	t.Helper()
	m, _, _ := unstructured.NestedInt64(pg.Object, "spec", "minMember")
	r, _, _ := unstructured.NestedMap(pg.Object, "spec", "minResources")
	return m, r
}

func TestDesiredPodGroup(t *testing.T) {
	// Volcano: head + 2 cpu + 1×2 tpu = 5 members; 1+4+2 CPU, 2Gi+8Gi.
	w := raytesting.GangCluster().Label(podspec.VolcanoQueueNameLabelKey, "q1").Label(rayv1.RayPriorityClassName, "high").
		Label(podspec.VolcanoNetworkTopologyModeLabelKey, "hard").Label(podspec.VolcanoNetworkTopologyHighestTierLabelKey, "2").
		Annotation("team", "ml")
	plan, err := desiredPodGroup(podspec.BatchSchedulerVolcano, w.Obj())
	if err != nil || plan == nil || !plan.resize {
		t.Fatalf("volcano plan %+v, %v", plan, err)
	}
	pg := plan.obj
	if pg.GroupVersionKind() != podspec.VolcanoPodGroupGVK || pg.GetName() != "ray-rc-pg" || pg.GetNamespace() != "ns" || pg.GetAnnotations()["team"] != "ml" {
		t.Errorf("volcano PodGroup %v %s/%s annotations %v", pg.GroupVersionKind(), pg.GetNamespace(), pg.GetName(), pg.GetAnnotations())
	}
	if refs := pg.GetOwnerReferences(); len(refs) != 1 || refs[0].Kind != "RayCluster" || !ptr.Deref(refs[0].Controller, false) {
		t.Errorf("owner references %+v", refs)
	}
	members, res := specOf(t, pg)
	if members != 5 || res["cpu"] != "7" || res["memory"] != "10Gi" {
		t.Errorf("volcano minMember %d minResources %v, want 5, cpu 7, memory 10Gi", members, res)
	}
	queue, _, _ := unstructured.NestedString(pg.Object, "spec", "queue")
	priority, _, _ := unstructured.NestedString(pg.Object, "spec", "priorityClassName")
	mode, _, _ := unstructured.NestedString(pg.Object, "spec", "networkTopology", "mode")
	tier, _, _ := unstructured.NestedInt64(pg.Object, "spec", "networkTopology", "highestTierAllowed")
	if queue != "q1" || priority != "high" || mode != "hard" || tier != 2 {
		t.Errorf("queue %q priorityClassName %q networkTopology %q/%d", queue, priority, mode, tier)
	}

	// With autoscaling, the minimum: head + 1 cpu + 1×2 tpu = 4; 1+2+2 CPU.
	plan, _ = desiredPodGroup(podspec.BatchSchedulerVolcano, w.Clone().Autoscaling().Obj())
	if members, res := specOf(t, plan.obj); members != 4 || res["cpu"] != "5" || res["memory"] != "6Gi" {
		t.Errorf("volcano autoscaling minMember %d minResources %v, want 4, cpu 5, memory 6Gi", members, res)
	}
	// A suspended group counts in neither members nor resources.
	suspended := w.Clone().Autoscaling()
	suspended.Group("cpu").Suspend = ptr.To(true)
	plan, _ = desiredPodGroup(podspec.BatchSchedulerVolcano, suspended.Obj())
	if members, res := specOf(t, plan.obj); members != 3 || res["cpu"] != "3" || res["memory"] != "2Gi" {
		t.Errorf("volcano with a suspended group: minMember %d minResources %v, want 3, cpu 3, memory 2Gi", members, res)
	}
	// Replicas above maxReplicas count as maxReplicas, in members and resources alike.
	over := w.Clone()
	over.Group("cpu").Replicas = ptr.To[int32](50)
	plan, _ = desiredPodGroup(podspec.BatchSchedulerVolcano, over.Obj())
	if members, res := specOf(t, plan.obj); members != 13 || res["cpu"] != "23" {
		t.Errorf("volcano over maxReplicas: minMember %d minResources %v, want 13, cpu 23", members, res)
	}
	// A bad tier label is an error, not a silent default.
	if _, err := desiredPodGroup(podspec.BatchSchedulerVolcano, w.Clone().Label(podspec.VolcanoNetworkTopologyHighestTierLabelKey, "two").Obj()); err == nil {
		t.Error("highest tier \"two\" accepted")
	}
	// A RayJob's cluster gets none: KubeRay's RayJob controller makes it.
	if plan, _ := desiredPodGroup(podspec.BatchSchedulerVolcano, w.Clone().Label(rayv1.RayOriginatedFromCRDLabelKey, "RayJob").Obj()); plan != nil {
		t.Errorf("PodGroup for a RayJob's cluster: %v", plan.obj)
	}

	// scheduler-plugins: only with the gang label; named after the cluster, never resized.
	if plan, _ := desiredPodGroup(podspec.BatchSchedulerSchedulerPlugins, raytesting.GangCluster().Obj()); plan != nil {
		t.Errorf("scheduler-plugins PodGroup without the gang label: %v", plan.obj)
	}
	plan, _ = desiredPodGroup(podspec.BatchSchedulerSchedulerPlugins, raytesting.GangCluster().Label(rayv1.RayGangSchedulingEnabled, "true").Obj())
	if plan == nil || plan.resize || plan.obj.GroupVersionKind() != podspec.SchedulerPluginsPodGroupGVK || plan.obj.GetName() != "rc" {
		t.Fatalf("scheduler-plugins plan %+v", plan)
	}
	if members, res := specOf(t, plan.obj); members != 5 || res["cpu"] != "7" {
		t.Errorf("scheduler-plugins minMember %d minResources %v", members, res)
	}
	for _, s := range []string{"", podspec.BatchSchedulerYuniKorn, podspec.BatchSchedulerKAI} {
		if plan, _ := desiredPodGroup(s, raytesting.GangCluster().Label(rayv1.RayGangSchedulingEnabled, "true").Obj()); plan != nil {
			t.Errorf("%q made a PodGroup", s)
		}
	}
}

func TestPodGroupSameSize(t *testing.T) {
	plan, _ := desiredPodGroup(podspec.BatchSchedulerVolcano, raytesting.GangCluster().Obj())
	live := plan.obj.DeepCopy()
	_ = unstructured.SetNestedField(live.Object, "7000m", "spec", "minResources", "cpu")
	if !sameSize(live, plan.obj) {
		t.Error("7000m and 7 CPU differ")
	}
	_ = unstructured.SetNestedField(live.Object, int64(4), "spec", "minMember")
	if sameSize(live, plan.obj) {
		t.Error("minMember 4 and 5 agree")
	}
	live = plan.obj.DeepCopy()
	_ = unstructured.SetNestedField(live.Object, "1", "spec", "minResources", "nvidia.com/gpu")
	if sameSize(live, plan.obj) {
		t.Error("an extra resource agrees")
	}
}
