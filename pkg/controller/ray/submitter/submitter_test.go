package submitter

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

func TestNames(t *testing.T) {
	for name, generate := range map[string]func(string) string{"ClusterName": ClusterName, "JobID": JobID} {
		t.Run(name, func(t *testing.T) {
			shape := regexp.MustCompile(`^my-job-[a-z0-9]{5}$`)
			seen := map[string]bool{}
			for range 20 {
				got := generate("my-job")
				if !shape.MatchString(got) {
					t.Fatalf("%s = %q, want my-job-<5 lowercase alphanumerics>", name, got)
				}
				seen[got] = true
			}
			if len(seen) < 2 {
				t.Errorf("%s gave the same name 20 times", name)
			}
		})
	}
}

var wantOwner = []metav1.OwnerReference{{APIVersion: "ray.io/v1", Kind: "RayJob", Name: "rj", UID: "uid-1",
	Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}

func TestJob(t *testing.T) {
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "s"}}}}
	tests := []struct {
		name   string
		config *rayv1.SubmitterConfig
		want   int32
	}{
		{"default backoff limit", nil, 2},
		{"submitterConfig without a limit", &rayv1.SubmitterConfig{}, 2},
		{"submitterConfig's limit", &rayv1.SubmitterConfig{BackoffLimit: ptr.To[int32](0)}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := testJob(func(j *rayv1.RayJob) { j.Spec.SubmitterConfig = tt.config })
			got := Job(job, tmpl)
			if got.Name != "rj" || got.Namespace != "ns" {
				t.Errorf("Job is %s/%s, want ns/rj", got.Namespace, got.Name)
			}
			if d := cmp.Diff(wantLabels, got.Labels); d != "" {
				t.Errorf("labels (-want +got):\n%s", d)
			}
			if d := cmp.Diff(wantOwner, got.OwnerReferences); d != "" {
				t.Errorf("owner (-want +got):\n%s", d)
			}
			if got.Spec.BackoffLimit == nil || *got.Spec.BackoffLimit != tt.want {
				t.Errorf("backoffLimit = %v, want %d", got.Spec.BackoffLimit, tt.want)
			}
			if d := cmp.Diff(tmpl, got.Spec.Template); d != "" {
				t.Errorf("template (-want +got):\n%s", d)
			}
		})
	}
}

func TestClusterFor(t *testing.T) {
	withMeta := func(j *rayv1.RayJob) {
		j.Labels = map[string]string{"team": "ml", rayv1.RayOriginatedFromCRDLabelKey: "stale"}
		j.Annotations = map[string]string{"note": "x"}
	}
	sidecarJob := testJob(withMeta, func(j *rayv1.RayJob) { j.Spec.SubmissionMode = rayv1.SidecarMode })
	sidecar, err := SidecarContainer(sidecarJob, testCluster(sidecarJob, nil), Options{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name            string
		job             *rayv1.RayJob
		wantLabels      map[string]string
		wantAnnotations map[string]string
		wantContainers  []corev1.Container
		wantRestart     corev1.RestartPolicy
	}{
		{name: "K8sJobMode: the spec as it is",
			job: testJob(withMeta),
			wantLabels: map[string]string{"team": "ml", "ray.io/originated-from-cr-name": "rj", "ray.io/originated-from-crd": "RayJob",
				"ray.io/job-submission-mode": "K8sJobMode"},
			wantAnnotations: map[string]string{"note": "x"},
			wantContainers:  []corev1.Container{{Name: "ray-head", Image: "rayproject/ray:2.52.0"}}},
		{name: "no labels or annotations on the RayJob",
			job: testJob(),
			wantLabels: map[string]string{"ray.io/originated-from-cr-name": "rj", "ray.io/originated-from-crd": "RayJob",
				"ray.io/job-submission-mode": "K8sJobMode"},
			wantAnnotations: map[string]string{},
			wantContainers:  []corev1.Container{{Name: "ray-head", Image: "rayproject/ray:2.52.0"}}},
		{name: "SidecarMode: the submitter in the head Pod, which is never restarted",
			job: sidecarJob,
			wantLabels: map[string]string{"team": "ml", "ray.io/originated-from-cr-name": "rj", "ray.io/originated-from-crd": "RayJob",
				"ray.io/job-submission-mode": "SidecarMode"},
			wantAnnotations: map[string]string{"note": "x", "ray.io/disable-provisioned-head-restart": "true"},
			wantContainers:  []corev1.Container{{Name: "ray-head", Image: "rayproject/ray:2.52.0"}, sidecar},
			wantRestart:     corev1.RestartPolicyNever},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.job.DeepCopy()
			got, err := ClusterFor(tt.job, "rj-abcde", Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Name != "rj-abcde" || got.Namespace != "ns" {
				t.Errorf("cluster is %s/%s, want ns/rj-abcde", got.Namespace, got.Name)
			}
			if d := cmp.Diff(tt.wantLabels, got.Labels); d != "" {
				t.Errorf("labels (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.wantAnnotations, got.Annotations); d != "" {
				t.Errorf("annotations (-want +got):\n%s", d)
			}
			if d := cmp.Diff(wantOwner, got.OwnerReferences); d != "" {
				t.Errorf("owner (-want +got):\n%s", d)
			}
			head := got.Spec.HeadGroupSpec.Template.Spec
			if d := cmp.Diff(tt.wantContainers, head.Containers); d != "" {
				t.Errorf("head containers (-want +got):\n%s", d)
			}
			if head.RestartPolicy != tt.wantRestart {
				t.Errorf("head restartPolicy = %q, want %q", head.RestartPolicy, tt.wantRestart)
			}
			if got.Spec.RayVersion != "2.52.0" {
				t.Errorf("rayVersion = %q, want the RayJob's 2.52.0", got.Spec.RayVersion)
			}
			if d := cmp.Diff(before, tt.job); d != "" {
				t.Errorf("the RayJob was modified:\n%s", d)
			}
		})
	}
}

func TestClusterForErrors(t *testing.T) {
	tests := []struct {
		name    string
		job     *rayv1.RayJob
		wantErr string
	}{
		{"no rayClusterSpec", testJob(func(j *rayv1.RayJob) {
			j.Spec.RayClusterSpec = nil
			j.Spec.ClusterSelector = map[string]string{rayv1.RayJobClusterSelectorKey: "shared"}
		}), "no spec.rayClusterSpec"},
		{"a SidecarMode submitter that cannot be built", testJob(func(j *rayv1.RayJob) {
			j.Spec.SubmissionMode = rayv1.SidecarMode
			j.Spec.Metadata = map[string]string{"k": "v"}
			j.Spec.RayClusterSpec.RayVersion = "2.4.0"
		}), "needs Ray 2.6.0 or later"},
		{"a SidecarMode cluster without a head container", testJob(func(j *rayv1.RayJob) {
			j.Spec.SubmissionMode = rayv1.SidecarMode
			j.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers = nil
		}), "the head group's Pod template has no containers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ClusterFor(tt.job, "rj-abcde", Options{})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
