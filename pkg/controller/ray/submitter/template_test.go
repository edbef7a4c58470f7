package submitter

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

// testCluster is the RayJob's cluster as ClusterFor makes it.
func testCluster(job *rayv1.RayJob, auth *rayv1.AuthOptions) *rayv1.RayCluster {
	c := &rayv1.RayCluster{Spec: *job.Spec.RayClusterSpec.DeepCopy()}
	c.Name, c.Namespace = "rj-abcde", job.Namespace
	c.Spec.AuthOptions = auth
	return c
}

var (
	wantLabels = map[string]string{
		"ray.io/originated-from-cr-name": "rj",
		"ray.io/originated-from-crd":     "RayJob",
		"app.kubernetes.io/created-by":   "kuberay-operator",
	}
	wantEnv = []corev1.EnvVar{
		{Name: "PYTHONUNBUFFERED", Value: "1"},
		{Name: "RAY_DASHBOARD_ADDRESS", Value: testDashboard},
		{Name: "RAY_JOB_SUBMISSION_ID", Value: testID},
	}
	tokenMount = corev1.VolumeMount{Name: "ray-token", MountPath: "/var/run/secrets/ray.io/serviceaccount", ReadOnly: true}
)

func secretTokenEnv(secret string) []corev1.EnvVar {
	return []corev1.EnvVar{{Name: "RAY_AUTH_MODE", Value: "token"}, {Name: "RAY_AUTH_TOKEN", ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: "auth_token"}}}}
}

func k8sTokenEnv() []corev1.EnvVar {
	return []corev1.EnvVar{{Name: "RAY_AUTH_MODE", Value: "token"}, {Name: "RAY_ENABLE_K8S_TOKEN_AUTH", Value: "true"}}
}

func defaultSubmitter(env []corev1.EnvVar, line string) corev1.Container {
	return corev1.Container{
		Name: "ray-job-submitter", Image: "rayproject/ray:2.52.0",
		Command: []string{"/bin/bash", "-ce", "--"}, Args: []string{line},
		Env: env,
		Resources: corev1.ResourceRequirements{
			Limits:   corev1.ResourceList{"cpu": resource.MustParse("1"), "memory": resource.MustParse("1Gi")},
			Requests: corev1.ResourceList{"cpu": resource.MustParse("500m"), "memory": resource.MustParse("200Mi")},
		},
	}
}

func TestTemplate(t *testing.T) {
	line := k8sJobLine("--submission-id " + testID)
	tokenVolume := corev1.Volume{Name: "ray-token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}}
	userTemplate := func(c corev1.Container) func(*rayv1.RayJob) {
		return func(j *rayv1.RayJob) {
			j.Spec.SubmitterPodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{c}, RestartPolicy: corev1.RestartPolicyOnFailure}}
			j.Spec.SubmitterPodTemplate.Labels = map[string]string{"team": "ml", "ray.io/originated-from-crd": "mine"}
		}
	}
	tests := []struct {
		name string
		job  *rayv1.RayJob
		auth *rayv1.AuthOptions
		opts Options
		want corev1.PodTemplateSpec
	}{
		{name: "default: the head's image, a small request, restartPolicy Never",
			job: testJob(),
			want: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{defaultSubmitter(wantEnv, line)}}}},
		{name: "a login shell",
			job: testJob(), opts: Options{LoginShell: true},
			want: func() corev1.PodTemplateSpec {
				c := defaultSubmitter(wantEnv, line)
				c.Command = []string{"/bin/bash", "-cel", "--"}
				return corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{c}}}
			}()},
		{name: "the user's command is kept; the variables are appended after theirs",
			job: testJob(userTemplate(corev1.Container{Name: "mine", Image: "me/submit", Command: []string{"sh", "-c", "ray job submit -- x"},
				Env: []corev1.EnvVar{{Name: "PYTHONUNBUFFERED", Value: "0"}}})),
			want: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure,
				Containers: []corev1.Container{{Name: "mine", Image: "me/submit", Command: []string{"sh", "-c", "ray job submit -- x"},
					Env: append([]corev1.EnvVar{{Name: "PYTHONUNBUFFERED", Value: "0"}}, wantEnv...)}}}}},
		{name: "args without a command are replaced",
			job: testJob(userTemplate(corev1.Container{Name: "mine", Image: "me/submit", Args: []string{"ignored"}})),
			want: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure,
				Containers: []corev1.Container{{Name: "mine", Image: "me/submit", Command: []string{"/bin/bash", "-ce", "--"}, Args: []string{line}, Env: wantEnv}}}}},
		{name: "token auth: the cluster's Secret",
			job: testJob(), auth: &rayv1.AuthOptions{Mode: rayv1.AuthModeToken},
			want: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{defaultSubmitter(append(wantEnv, secretTokenEnv("rj-abcde")...), line)}}}},
		{name: "token auth: the user's Secret",
			job: testJob(), auth: &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, SecretName: ptr.To("tok")},
			want: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{defaultSubmitter(append(wantEnv, secretTokenEnv("tok")...), line)}}}},
		{name: "Kubernetes token auth: the projected token",
			job: testJob(), auth: &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, EnableK8sTokenAuth: ptr.To(true)},
			want: func() corev1.PodTemplateSpec {
				c := defaultSubmitter(append(wantEnv, k8sTokenEnv()...), line)
				c.VolumeMounts = []corev1.VolumeMount{tokenMount}
				return corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{c}, Volumes: []corev1.Volume{tokenVolume}}}
			}()},
		{name: "auth mode disabled: nothing",
			job: testJob(), auth: &rayv1.AuthOptions{Mode: rayv1.AuthModeDisabled},
			want: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{defaultSubmitter(wantEnv, line)}}}},
		{name: "token auth keeps the user's own settings",
			job: testJob(userTemplate(corev1.Container{Name: "mine", Image: "me/submit", Env: []corev1.EnvVar{{Name: "RAY_AUTH_MODE", Value: "token"}},
				VolumeMounts: []corev1.VolumeMount{{Name: "ray-token", MountPath: "/elsewhere"}}})),
			auth: &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, EnableK8sTokenAuth: ptr.To(true)},
			want: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure,
				Volumes: []corev1.Volume{tokenVolume},
				Containers: []corev1.Container{{Name: "mine", Image: "me/submit", Command: []string{"/bin/bash", "-ce", "--"}, Args: []string{line},
					Env:          append(append([]corev1.EnvVar{{Name: "RAY_AUTH_MODE", Value: "token"}}, wantEnv...), corev1.EnvVar{Name: "RAY_ENABLE_K8S_TOKEN_AUTH", Value: "true"}),
					VolumeMounts: []corev1.VolumeMount{{Name: "ray-token", MountPath: "/elsewhere"}}}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.job.DeepCopy()
			got, err := Template(tt.job, testCluster(tt.job, tt.auth), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			want.Labels = map[string]string{}
			if tt.job.Spec.SubmitterPodTemplate != nil {
				want.Labels["team"] = "ml"
			}
			for k, v := range wantLabels {
				want.Labels[k] = v
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("template (-want +got):\n%s", d)
			}
			if d := cmp.Diff(before, tt.job); d != "" {
				t.Errorf("the RayJob was modified:\n%s", d)
			}
		})
	}
}

func TestSidecarContainer(t *testing.T) {
	job := testJob(func(j *rayv1.RayJob) { j.Spec.SubmissionMode = rayv1.SidecarMode })
	once := waitLoop("http://localhost:8265/api/gcs_healthz", "http://127.0.0.1:8265") +
		"ray job submit --address http://127.0.0.1:8265 --submission-id " + testID + " -- python main.py ;"
	restarting := func() corev1.Container {
		words, err := Options{SidecarSubmitterRestart: true}.Command(job, rayv1.SidecarMode)
		if err != nil {
			t.Fatal(err)
		}
		c := defaultSubmitter(wantEnv, strings.Join(words, " "))
		c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyOnFailure)
		return c
	}
	tests := []struct {
		name string
		auth *rayv1.AuthOptions
		opts Options
		want corev1.Container
	}{
		{name: "runs once", want: defaultSubmitter(wantEnv, once)},
		{name: "restarts on failure with SidecarSubmitterRestart", opts: Options{SidecarSubmitterRestart: true}, want: restarting()},
		{name: "token auth", auth: &rayv1.AuthOptions{Mode: rayv1.AuthModeToken}, want: defaultSubmitter(append(wantEnv, secretTokenEnv("rj-abcde")...), once)},
		{name: "Kubernetes token auth mounts the head Pod's token volume", auth: &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, EnableK8sTokenAuth: ptr.To(true)},
			want: func() corev1.Container {
				c := defaultSubmitter(append(wantEnv, k8sTokenEnv()...), once)
				c.VolumeMounts = []corev1.VolumeMount{tokenMount}
				return c
			}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SidecarContainer(job, testCluster(job, tt.auth), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("container (-want +got):\n%s", d)
			}
		})
	}
}

func TestTemplateErrors(t *testing.T) {
	job := testJob()
	noContainers := testJob(func(j *rayv1.RayJob) { j.Spec.SubmitterPodTemplate = &corev1.PodTemplateSpec{} })
	noHead := testCluster(job, nil)
	noHead.Spec.HeadGroupSpec.Template.Spec.Containers = nil
	badYAML := testJob(func(j *rayv1.RayJob) {
		j.Spec.RuntimeEnvYAML = "a: b: c"
		j.Spec.SubmitterPodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "s", Command: []string{"true"}}}}}
	})
	tests := []struct {
		name    string
		build   func() error
		wantErr string
	}{
		{"no cluster", func() error { _, err := Template(job, nil, Options{}); return err }, "there is none"},
		{"no cluster for the sidecar", func() error { _, err := SidecarContainer(job, nil, Options{}); return err }, "there is none"},
		{"a submitter template without containers", func() error { _, err := Template(noContainers, testCluster(job, nil), Options{}); return err },
			"spec.submitterPodTemplate has no containers"},
		{"a cluster without a head container", func() error { _, err := Template(job, noHead, Options{}); return err },
			"RayCluster rj-abcde: the head group's Pod template has no containers"},
		{"a bad runtime env even under the user's own command", func() error { _, err := Template(badYAML, testCluster(job, nil), Options{}); return err },
			"spec.runtimeEnvYAML is not valid YAML"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.build(); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
