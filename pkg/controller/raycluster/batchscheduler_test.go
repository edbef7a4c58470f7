package raycluster

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

// gangCluster: a head of 1 CPU / 2Gi, a "cpu" group of 2 replicas (min 1)
// of 2 CPU / 4Gi, and a two-host "tpu" group of 1 replica (min 1) of 1 CPU.
func gangCluster() *raytesting.RayClusterWrapper {
	w := raytesting.MakeRayCluster("rc", "ns").
		HeadLimits(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi")}).
		WorkerGroup("cpu", 2).
		WorkerLimits("cpu", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")}).
		MultiHostWorkerGroup("tpu", 1, 2).
		WorkerLimits("tpu", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")})
	w.Group("cpu").MinReplicas = ptr.To[int32](1)
	w.Group("tpu").MinReplicas = ptr.To[int32](1)
	return w
}

func TestValidateBatchScheduler(t *testing.T) {
	for _, tc := range []struct {
		name   string
		legacy bool
		want   string
		err    string
	}{
		{name: "", want: ""},
		{name: "volcano", want: "volcano"},
		{name: "yunikorn", want: "yunikorn"},
		{name: "scheduler-plugins", want: "scheduler-plugins"},
		{name: "kai-scheduler", want: "kai-scheduler"},
		{legacy: true, want: "volcano"},
		{name: "yunikorn", legacy: true, err: "both"},
		{name: "kueue", err: `"kueue" is not supported`},
	} {
		got, err := ValidateBatchScheduler(tc.name, tc.legacy)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("(%q, %v): error %v, want one containing %q", tc.name, tc.legacy, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("(%q, %v) = %q, %v; want %q", tc.name, tc.legacy, got, err, tc.want)
		}
	}
}

// TestBatchSchedulerPodMetadata: each scheduler's Pods carry what KubeRay
// v1.6 puts on them (batchscheduler/*: AddMetadataToChildResource).
func TestBatchSchedulerPodMetadata(t *testing.T) {
	w := gangCluster().
		Label(VolcanoQueueNameLabelKey, "q1").
		Label(rayv1.RayPriorityClassName, "high").
		Label(YuniKornAppIDLabelKey, "app-1").
		Label(YuniKornQueueLabelKey, "root.ray").
		Label(KAIQueueLabelKey, "team-a").
		Label(rayv1.RayGangSchedulingEnabled, "true")
	w.Spec.HeadGroupSpec.Template.Spec.SchedulerName = "my-scheduler"
	build := func(scheduler string) (head, worker corev1.Pod) {
		opts := DefaultBuildOptions()
		opts.BatchScheduler = scheduler
		return BuildHeadPod(w.Obj(), opts), BuildWorkerPod(w.Obj(), w.Group("cpu"), WorkerReplica{}, opts)
	}

	head, worker := build("")
	if head.Spec.SchedulerName != "my-scheduler" || worker.Spec.SchedulerName != "" {
		t.Errorf("no batch scheduler: schedulerName %q/%q, want the templates'", head.Spec.SchedulerName, worker.Spec.SchedulerName)
	}
	if _, ok := head.Annotations[VolcanoGroupNameAnnotationKey]; ok {
		t.Error("no batch scheduler: Volcano annotation set")
	}

	head, worker = build(BatchSchedulerVolcano)
	for _, p := range []struct {
		pod  corev1.Pod
		task string
	}{{head, "headgroup"}, {worker, "cpu"}} {
		if p.pod.Spec.SchedulerName != "volcano" || p.pod.Labels[VolcanoQueueNameLabelKey] != "q1" || p.pod.Labels[rayv1.RayPriorityClassName] != "high" ||
			p.pod.Annotations[VolcanoGroupNameAnnotationKey] != "ray-rc-pg" || p.pod.Annotations[VolcanoTaskSpecAnnotationKey] != p.task {
			t.Errorf("volcano %s Pod: schedulerName %q labels %v annotations %v", p.task, p.pod.Spec.SchedulerName, p.pod.Labels, p.pod.Annotations)
		}
	}

	head, worker = build(BatchSchedulerYuniKorn)
	for _, p := range []struct {
		pod   corev1.Pod
		group string
	}{{head, "headgroup"}, {worker, "cpu"}} {
		if p.pod.Spec.SchedulerName != "yunikorn" || p.pod.Labels[YuniKornPodAppIDLabelKey] != "app-1" || p.pod.Labels[YuniKornPodQueueLabelKey] != "root.ray" ||
			p.pod.Annotations[YuniKornTaskGroupNameAnnotation] != p.group || p.pod.Annotations[YuniKornTaskGroupsAnnotation] == "" {
			t.Errorf("yunikorn %s Pod: schedulerName %q labels %v annotations %v", p.group, p.pod.Spec.SchedulerName, p.pod.Labels, p.pod.Annotations)
		}
	}

	head, worker = build(BatchSchedulerSchedulerPlugins)
	for _, p := range []corev1.Pod{head, worker} {
		if p.Spec.SchedulerName != "scheduler-plugins-scheduler" || p.Labels[SchedulerPluginsPodGroupLabelKey] != "rc" {
			t.Errorf("scheduler-plugins Pod %s: schedulerName %q labels %v", p.GenerateName, p.Spec.SchedulerName, p.Labels)
		}
	}

	head, worker = build(BatchSchedulerKAI)
	for _, p := range []corev1.Pod{head, worker} {
		if p.Spec.SchedulerName != "kai-scheduler" || p.Labels[KAIQueueLabelKey] != "team-a" {
			t.Errorf("kai Pod %s: schedulerName %q labels %v", p.GenerateName, p.Spec.SchedulerName, p.Labels)
		}
	}

	// Without the gang label, YuniKorn and scheduler-plugins leave the gang out.
	plain := gangCluster().Obj()
	opts := DefaultBuildOptions()
	opts.BatchScheduler = BatchSchedulerYuniKorn
	if p := BuildHeadPod(plain, opts); p.Annotations[YuniKornTaskGroupsAnnotation] != "" || p.Labels[YuniKornPodQueueLabelKey] != "" {
		t.Errorf("yunikorn without gang label or queue: labels %v annotations %v", p.Labels, p.Annotations)
	}
	opts.BatchScheduler = BatchSchedulerSchedulerPlugins
	if p := BuildHeadPod(plain, opts); p.Labels[SchedulerPluginsPodGroupLabelKey] != "" || p.Spec.SchedulerName != "scheduler-plugins-scheduler" {
		t.Errorf("scheduler-plugins without gang label: schedulerName %q labels %v", p.Spec.SchedulerName, p.Labels)
	}
}

func TestYuniKornTaskGroups(t *testing.T) {
	w := gangCluster()
	w.Group("tpu").Template.Spec.NodeSelector = map[string]string{"cloud.google.com/gke-tpu-topology": "2x2"}
	var groups []yuniKornTaskGroup
	if err := json.Unmarshal([]byte(yuniKornTaskGroups(&w.Obj().Spec)), &groups); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name    string
		members int32
		cpu     string
	}{{"headgroup", 1, "1"}, {"cpu", 1, "2"}, {"tpu", 2, "1"}}
	if len(groups) != len(want) {
		t.Fatalf("task groups %+v", groups)
	}
	for i, g := range groups {
		cpu := g.MinResource["cpu"]
		if g.Name != want[i].name || g.MinMember != want[i].members || cpu.String() != want[i].cpu {
			t.Errorf("group %d = %s/%d cpu %s, want %+v", i, g.Name, g.MinMember, cpu.String(), want[i])
		}
	}
	if groups[2].NodeSelector["cloud.google.com/gke-tpu-topology"] != "2x2" {
		t.Errorf("tpu group's nodeSelector %v", groups[2].NodeSelector)
	}
	// A task-groups annotation on the cluster is passed on as written.
	opts := DefaultBuildOptions()
	opts.BatchScheduler = BatchSchedulerYuniKorn
	mine := `[{"name":"headgroup","minMember":1,"minResource":{}}]`
	p := BuildHeadPod(w.Label(rayv1.RayGangSchedulingEnabled, "").Annotation(YuniKornTaskGroupsAnnotation, mine).Obj(), opts)
	if p.Annotations[YuniKornTaskGroupsAnnotation] != mine {
		t.Errorf("task groups %s, want the cluster's", p.Annotations[YuniKornTaskGroupsAnnotation])
	}
}

func specOf(t *testing.T, pg *unstructured.Unstructured) (int64, map[string]any) {
	t.Helper()
	m, _, _ := unstructured.NestedInt64(pg.Object, "spec", "minMember")
	r, _, _ := unstructured.NestedMap(pg.Object, "spec", "minResources")
	return m, r
}

func TestDesiredPodGroup(t *testing.T) {
	// Volcano: head + 2 cpu + 1×2 tpu = 5 members; 1+4+2 CPU, 2Gi+8Gi.
	w := gangCluster().Label(VolcanoQueueNameLabelKey, "q1").Label(rayv1.RayPriorityClassName, "high").
		Label(VolcanoNetworkTopologyModeLabelKey, "hard").Label(VolcanoNetworkTopologyHighestTierLabelKey, "2").
		Annotation("team", "ml")
	plan, err := desiredPodGroup(BatchSchedulerVolcano, w.Obj())
	if err != nil || plan == nil || !plan.resize {
		t.Fatalf("volcano plan %+v, %v", plan, err)
	}
	pg := plan.obj
	if pg.GroupVersionKind() != VolcanoPodGroupGVK || pg.GetName() != "ray-rc-pg" || pg.GetNamespace() != "ns" || pg.GetAnnotations()["team"] != "ml" {
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
	plan, _ = desiredPodGroup(BatchSchedulerVolcano, w.Clone().Autoscaling().Obj())
	if members, res := specOf(t, plan.obj); members != 4 || res["cpu"] != "5" || res["memory"] != "6Gi" {
		t.Errorf("volcano autoscaling minMember %d minResources %v, want 4, cpu 5, memory 6Gi", members, res)
	}
	// A suspended group counts in neither members nor resources.
	suspended := w.Clone().Autoscaling()
	suspended.Group("cpu").Suspend = ptr.To(true)
	plan, _ = desiredPodGroup(BatchSchedulerVolcano, suspended.Obj())
	if members, res := specOf(t, plan.obj); members != 3 || res["cpu"] != "3" || res["memory"] != "2Gi" {
		t.Errorf("volcano with a suspended group: minMember %d minResources %v, want 3, cpu 3, memory 2Gi", members, res)
	}
	// Replicas above maxReplicas count as maxReplicas, in members and resources alike.
	over := w.Clone()
	over.Group("cpu").Replicas = ptr.To[int32](50)
	plan, _ = desiredPodGroup(BatchSchedulerVolcano, over.Obj())
	if members, res := specOf(t, plan.obj); members != 13 || res["cpu"] != "23" {
		t.Errorf("volcano over maxReplicas: minMember %d minResources %v, want 13, cpu 23", members, res)
	}
	// A bad tier label is an error, not a silent default.
	if _, err := desiredPodGroup(BatchSchedulerVolcano, w.Clone().Label(VolcanoNetworkTopologyHighestTierLabelKey, "two").Obj()); err == nil {
		t.Error("highest tier \"two\" accepted")
	}
	// A RayJob's cluster gets none: KubeRay's RayJob controller makes it.
	if plan, _ := desiredPodGroup(BatchSchedulerVolcano, w.Clone().Label(rayv1.RayOriginatedFromCRDLabelKey, "RayJob").Obj()); plan != nil {
		t.Errorf("PodGroup for a RayJob's cluster: %v", plan.obj)
	}

	// scheduler-plugins: only with the gang label; named after the cluster, never resized.
	if plan, _ := desiredPodGroup(BatchSchedulerSchedulerPlugins, gangCluster().Obj()); plan != nil {
		t.Errorf("scheduler-plugins PodGroup without the gang label: %v", plan.obj)
	}
	plan, _ = desiredPodGroup(BatchSchedulerSchedulerPlugins, gangCluster().Label(rayv1.RayGangSchedulingEnabled, "true").Obj())
	if plan == nil || plan.resize || plan.obj.GroupVersionKind() != SchedulerPluginsPodGroupGVK || plan.obj.GetName() != "rc" {
		t.Fatalf("scheduler-plugins plan %+v", plan)
	}
	if members, res := specOf(t, plan.obj); members != 5 || res["cpu"] != "7" {
		t.Errorf("scheduler-plugins minMember %d minResources %v", members, res)
	}
	for _, s := range []string{"", BatchSchedulerYuniKorn, BatchSchedulerKAI} {
		if plan, _ := desiredPodGroup(s, gangCluster().Label(rayv1.RayGangSchedulingEnabled, "true").Obj()); plan != nil {
			t.Errorf("%q made a PodGroup", s)
		}
	}
}

func TestPodGroupSameSize(t *testing.T) {
	plan, _ := desiredPodGroup(BatchSchedulerVolcano, gangCluster().Obj())
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
