package kuberay

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/submitter"
)

// corpusCase is one RayJob of the corpus. cluster is the existing cluster
// of a clusterSelector RayJob; otherwise the RayJob's own is built.
// wantErr: neither mode can be built, by either side.
type corpusCase struct {
	name    string
	job     *rayv1.RayJob
	cluster *rayv1.RayCluster
	opts    submitter.Options
	wantErr bool
}

func handJob(name string, edit ...func(*rayv1.RayJob)) *rayv1.RayJob {
	job := &rayv1.RayJob{}
	job.Name, job.Namespace, job.UID = name, "team-a", types.UID("uid-"+name)
	job.Spec.Entrypoint = "python /home/ray/samples/sample_code.py"
	job.Spec.RayClusterSpec = &rayv1.RayClusterSpec{RayVersion: "2.52.0"}
	job.Spec.RayClusterSpec.HeadGroupSpec.RayStartParams = map[string]string{}
	job.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers = []corev1.Container{{
		Name: "ray-head", Image: "rayproject/ray:2.52.0",
		Ports: []corev1.ContainerPort{{Name: "gcs-server", ContainerPort: 6379}, {Name: "dashboard", ContainerPort: 8265}},
	}}
	for _, e := range edit {
		e(job)
	}
	return job
}

func existingCluster(name string, auth *rayv1.AuthOptions) *rayv1.RayCluster {
	c := &rayv1.RayCluster{}
	c.Name, c.Namespace = name, "team-a"
	c.Spec.RayVersion = "2.55.0"
	c.Spec.AuthOptions = auth
	c.Spec.HeadGroupSpec.Template.Spec.Containers = []corev1.Container{{Name: "ray-head", Image: "rayproject/ray:2.55.0"}}
	return c
}

func selectorJob(name, cluster string, edit ...func(*rayv1.RayJob)) *rayv1.RayJob {
	return handJob(name, append([]func(*rayv1.RayJob){func(j *rayv1.RayJob) {
		j.Spec.RayClusterSpec = nil
		j.Spec.ClusterSelector = map[string]string{rayv1.RayJobClusterSelectorKey: cluster}
	}}, edit...)...)
}

func userTemplate(c corev1.Container, labels map[string]string) func(*rayv1.RayJob) {
	return func(j *rayv1.RayJob) {
		j.Spec.SubmitterPodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{c, {Name: "helper", Image: "busybox"}}, RestartPolicy: corev1.RestartPolicyNever}}
		j.Spec.SubmitterPodTemplate.Labels = labels
	}
}

func withAuth(a *rayv1.AuthOptions) func(*rayv1.RayJob) {
	return func(j *rayv1.RayJob) {
		j.Spec.RayClusterSpec.AuthOptions = a
		j.Spec.RayClusterSpec.RayVersion = "2.55.0"
	}
}

func metadata(version string) func(*rayv1.RayJob) {
	return func(j *rayv1.RayJob) {
		j.Spec.Metadata = map[string]string{"owner": "ml", "run": "7", "quote": `a "b" $c`}
		if j.Spec.RayClusterSpec != nil {
			j.Spec.RayClusterSpec.RayVersion = version
		}
	}
}

func handCorpus() []corpusCase {
	token := &rayv1.AuthOptions{Mode: rayv1.AuthModeToken}
	k8sToken := &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, EnableK8sTokenAuth: ptr.To(true)}
	runtimeEnv := "working_dir: \"https://example.com/repo.zip\"\npip:\n  - requests==2.26.0\n  - \"pendulum>=2.1\"\nenv_vars:\n  counter_name: \"test_counter\"\n  HOME_AGAIN: \"$HOME\"\n  note: \"été \\\"quoted\\\"\\n\"\n"
	userEnv := []corev1.EnvVar{{Name: "PYTHONUNBUFFERED", Value: "0"}, {Name: "EXTRA", Value: "x"}}
	return []corpusCase{
		{name: "plain", job: handJob("plain")},
		{name: "sidecar", job: handJob("sidecar", func(j *rayv1.RayJob) { j.Spec.SubmissionMode = rayv1.SidecarMode })},
		{name: "sidecar restarting", job: handJob("sidecar-restart"), opts: submitter.Options{SidecarSubmitterRestart: true}},
		{name: "own dashboard port", job: handJob("port", func(j *rayv1.RayJob) {
			j.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Ports[1].ContainerPort = 9265
		}), opts: submitter.Options{SidecarSubmitterRestart: true}},
		{name: "no dashboard port", job: handJob("noport", func(j *rayv1.RayJob) { j.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Ports = nil })},
		{name: "dashboard URL with a scheme", job: handJob("scheme", func(j *rayv1.RayJob) { j.Status.DashboardURL = "http://10.0.0.7:8265" })},
		{name: "login shell", job: handJob("login"), opts: submitter.Options{LoginShell: true}},
		{name: "runtime env", job: handJob("renv", func(j *rayv1.RayJob) { j.Spec.RuntimeEnvYAML = runtimeEnv })},
		{name: "runtime env JSON", job: handJob("renv-json", func(j *rayv1.RayJob) { j.Spec.RuntimeEnvYAML = `{"pip": ["emoji"], "env_vars": {"A": "1"}}` })},
		{name: "metadata", job: handJob("meta", metadata("2.52.0"))},
		{name: "metadata at 2.6.0", job: handJob("meta-26", metadata("2.6.0"))},
		{name: "metadata without rayVersion", job: handJob("meta-nover", metadata(""))},
		{name: "metadata on an existing cluster", job: selectorJob("meta-sel", "shared", metadata("")), cluster: existingCluster("shared", nil)},
		{name: "entrypoint resources", job: handJob("res", func(j *rayv1.RayJob) {
			j.Spec.EntrypointNumCpus, j.Spec.EntrypointNumGpus = 0.1, 2
			j.Spec.EntrypointResources = `{"TPU": 4, "custom": 0.5}`
		})},
		{name: "entrypoint with shell syntax", job: handJob("shell", func(j *rayv1.RayJob) {
			j.Spec.Entrypoint = "  cd /app && python -c 'print(1)' | tee out.txt\n"
		})},
		{name: "everything", job: handJob("all", metadata("2.46.0"), func(j *rayv1.RayJob) {
			j.Spec.RuntimeEnvYAML = runtimeEnv
			j.Spec.EntrypointNumCpus, j.Spec.EntrypointResources = 1.5, `{"a": 1}`
			j.Spec.JobId = "fixed-id"
			j.Status.JobId = "fixed-id"
		}), opts: submitter.Options{SidecarSubmitterRestart: true, LoginShell: true}},
		{name: "user template with a command", job: handJob("tmpl-cmd", userTemplate(corev1.Container{
			Name: "my-submitter", Image: "me/ray-cli:1", Command: []string{"sh", "-c", "ray job submit --address http://$RAY_DASHBOARD_ADDRESS --submission-id $RAY_JOB_SUBMISSION_ID -- echo hi"},
			Env: userEnv}, map[string]string{"team": "ml"}))},
		{name: "user template without a command", job: handJob("tmpl-args", userTemplate(corev1.Container{
			Name: "my-submitter", Image: "me/ray-cli:1", Args: []string{"replaced"}, Env: userEnv},
			map[string]string{"ray.io/originated-from-crd": "theirs", "app.kubernetes.io/created-by": "me"}))},
		{name: "token auth", job: handJob("auth", withAuth(token))},
		{name: "token auth, own Secret", job: handJob("auth-secret", withAuth(&rayv1.AuthOptions{Mode: rayv1.AuthModeToken, SecretName: ptr.To("my-token")}))},
		{name: "token auth, user template with own settings", job: handJob("auth-tmpl", withAuth(k8sToken), userTemplate(corev1.Container{
			Name: "s", Image: "me/ray-cli:1", Env: []corev1.EnvVar{{Name: "RAY_AUTH_MODE", Value: "token"}},
			VolumeMounts: []corev1.VolumeMount{{Name: "ray-token", MountPath: "/elsewhere"}}}, nil), func(j *rayv1.RayJob) {
			j.Spec.SubmitterPodTemplate.Spec.Volumes = []corev1.Volume{{Name: "ray-token", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		})},
		{name: "Kubernetes token auth", job: handJob("k8s-auth", withAuth(k8sToken)), opts: submitter.Options{SidecarSubmitterRestart: true}},
		{name: "auth disabled", job: handJob("auth-off", withAuth(&rayv1.AuthOptions{Mode: rayv1.AuthModeDisabled}))},
		{name: "existing cluster", job: selectorJob("sel", "shared"), cluster: existingCluster("shared", nil)},
		{name: "existing token auth cluster", job: selectorJob("sel-auth", "secure"), cluster: existingCluster("secure", token)},
		{name: "existing Kubernetes token auth cluster", job: selectorJob("sel-k8s", "k8s", userTemplate(corev1.Container{Name: "s", Image: "me/ray-cli:1"}, nil)),
			cluster: existingCluster("k8s", k8sToken)},
		{name: "bad runtime env", job: handJob("bad-renv", func(j *rayv1.RayJob) { j.Spec.RuntimeEnvYAML = "pip: [unclosed" }), wantErr: true},
		{name: "metadata on Ray 2.5", job: handJob("meta-old", metadata("2.5.0")), wantErr: true},
		{name: "metadata on a Ray pre-release", job: handJob("meta-rc", metadata("2.9.0-rc1")), wantErr: true},
		{name: "metadata on an unparsable rayVersion", job: handJob("meta-bad", metadata("nightly")), wantErr: true},
	}
}

// sampleCorpus reads every RayJob in testdata/samples: KubeRay v1.7.0's
// samples. A clusterSelector sample gets an existing cluster of that name.
func sampleCorpus(t *testing.T) []corpusCase {
	var cases []corpusCase
	separator := regexp.MustCompile(`(?m)^---\s*$`)
	err := filepath.WalkDir("testdata/samples", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".yaml" {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, doc := range separator.Split(string(raw), -1) {
			var head struct{ Kind string }
			if err := yaml.Unmarshal([]byte(doc), &head); err != nil || head.Kind != "RayJob" {
				continue
			}
			job := &rayv1.RayJob{}
			if err := yaml.Unmarshal([]byte(doc), job); err != nil {
				t.Fatalf("%s, document %d: %v", path, i, err)
			}
			if job.Name == "" {
				// The API server would complete a generateName.
				job.Name = job.GenerateName + "q4w8z"
			}
			if job.Namespace == "" {
				job.Namespace = "team-a"
			}
			job.UID = types.UID("uid-" + job.Name)
			c := corpusCase{name: strings.TrimPrefix(path, "testdata/samples/") + "/" + job.Name, job: job}
			if name := job.Spec.ClusterSelector[rayv1.RayJobClusterSelectorKey]; name != "" {
				c.cluster = existingCluster(name, nil)
				c.cluster.Namespace = job.Namespace
			}
			cases = append(cases, c)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 25 {
		t.Fatalf("found %d RayJobs in testdata/samples, want every one of KubeRay's samples (25 or more)", len(cases))
	}
	return cases
}

// TestSubmitterMatchesKubeRays runs the corpus, each sample also with the
// SidecarSubmitterRestart gate on.
func TestSubmitterMatchesKubeRays(t *testing.T) {
	for _, c := range handCorpus() {
		t.Run(c.name, func(t *testing.T) { checkCase(t, c) })
	}
	for _, c := range sampleCorpus(t) {
		t.Run("sample/"+c.name, func(t *testing.T) { checkCase(t, c) })
		c.opts.SidecarSubmitterRestart = true
		t.Run("sample/"+c.name+"/restarting", func(t *testing.T) { checkCase(t, c) })
	}
}
