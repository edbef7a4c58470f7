package raycluster

import (
	"slices"
	"testing"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

// TestRedisCleanupJobHasNoGangMetadata: KubeRay v1.7.0 builds the cleanup
// Job from buildHeadPod, and the batch scheduler's metadata
// (AddMetadataToChildResource) is added in createHeadPod only, so the Job
// carries none of it. With the gang's PodGroup annotation, task-spec or
// pod-group label the Job's Pod would wait for a gang that is gone (the
// cluster is being deleted) and never be scheduled. The head template's
// own schedulerName is kept, as in KubeRay.
func TestRedisCleanupJobHasNoGangMetadata(t *testing.T) {
	gangAnnotations := []string{
		podspec.VolcanoGroupNameAnnotationKey, podspec.VolcanoTaskSpecAnnotationKey,
		podspec.YuniKornTaskGroupsAnnotation, podspec.YuniKornTaskGroupNameAnnotation,
	}
	gangLabels := []string{
		podspec.VolcanoQueueNameLabelKey, rayv1.RayPriorityClassName,
		podspec.SchedulerPluginsPodGroupLabelKey,
		podspec.YuniKornPodAppIDLabelKey, podspec.YuniKornPodQueueLabelKey, podspec.KAIQueueLabelKey,
	}
	for _, scheduler := range podspec.BatchSchedulers {
		for _, templateScheduler := range []string{"", "my-scheduler"} {
			t.Run(scheduler+"/template schedulerName "+templateScheduler, func(t *testing.T) {
				w := raytesting.GangCluster().GCSFaultTolerance("redis:6379").
					Label(podspec.VolcanoQueueNameLabelKey, "q1").
					Label(rayv1.RayPriorityClassName, "high").
					Label(podspec.YuniKornAppIDLabelKey, "app-1").
					Label(podspec.YuniKornQueueLabelKey, "root.ray").
					Label(podspec.KAIQueueLabelKey, "team-a").
					Label(rayv1.RayGangSchedulingEnabled, "true")
				w.Spec.HeadGroupSpec.Template.Spec.SchedulerName = templateScheduler
				cluster := w.Obj()
				opts := podspec.DefaultBuildOptions()
				opts.BatchScheduler = scheduler

				// The head Pod itself does get the gang's metadata.
				if head := podspec.BuildHeadPod(cluster, opts); head.Spec.SchedulerName == templateScheduler {
					t.Fatalf("the head Pod kept schedulerName %q under %s: the test does not exercise the scheduler", templateScheduler, scheduler)
				}

				job := BuildRedisCleanupJob(cluster, opts)
				tmpl := job.Spec.Template
				if got := tmpl.Spec.SchedulerName; got != templateScheduler {
					t.Errorf("schedulerName = %q, want the head template's %q", got, templateScheduler)
				}
				for _, k := range gangAnnotations {
					if v, ok := tmpl.Annotations[k]; ok {
						t.Errorf("Pod template annotation %s=%q", k, v)
					}
					if v, ok := job.Annotations[k]; ok {
						t.Errorf("Job annotation %s=%q", k, v)
					}
				}
				for _, k := range gangLabels {
					if v, ok := tmpl.Labels[k]; ok {
						t.Errorf("Pod template label %s=%q", k, v)
					}
					if v, ok := job.Labels[k]; ok {
						t.Errorf("Job label %s=%q", k, v)
					}
				}
			})
		}
	}
}

// TestRedisCleanupJobShell: KubeRay v1.7.0 runs the cleanup with
// utils.GetContainerCommand: `/bin/bash -c --`, with a login shell only
// when ENABLE_LOGIN_SHELL is true. A login shell sources the image's
// profile, which can change PATH or print to stdout; without the setting
// the cleanup must not use one.
func TestRedisCleanupJobShell(t *testing.T) {
	for _, tc := range []struct {
		loginShell bool
		want       []string
	}{
		{loginShell: false, want: []string{"/bin/bash", "-c", "--"}},
		{loginShell: true, want: []string{"/bin/bash", "-lc", "--"}},
	} {
		opts := podspec.DefaultBuildOptions()
		opts.LoginShell = tc.loginShell
		job := BuildRedisCleanupJob(raytesting.MakeRayCluster("rc", "ns").GCSFaultTolerance("redis:6379").Obj(), opts)
		if got := job.Spec.Template.Spec.Containers[0].Command; !slices.Equal(got, tc.want) {
			t.Errorf("ENABLE_LOGIN_SHELL=%v: command %q, want %q", tc.loginShell, got, tc.want)
		}
	}
}
