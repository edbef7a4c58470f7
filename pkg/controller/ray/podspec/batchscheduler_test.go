package podspec

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

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
	w := raytesting.GangCluster().
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
	plain := raytesting.GangCluster().Obj()
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
	w := raytesting.GangCluster()
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
