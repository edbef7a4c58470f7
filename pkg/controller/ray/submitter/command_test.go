package submitter

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

const (
	testDashboard = "rj-head-svc.ns.svc.cluster.local:8265"
	testAddress   = "http://" + testDashboard
	testID        = "rj-x7k2p"
)

// testJob is a K8sJobMode RayJob whose status already names its
// submission and dashboard, as the controller leaves it before submitting.
func testJob(edit ...func(*rayv1.RayJob)) *rayv1.RayJob {
	job := &rayv1.RayJob{}
	job.Name, job.Namespace, job.UID = "rj", "ns", "uid-1"
	job.Spec.Entrypoint = "python main.py"
	job.Spec.SubmissionMode = rayv1.K8sJobMode
	job.Spec.RayClusterSpec = &rayv1.RayClusterSpec{RayVersion: "2.52.0"}
	job.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers = []corev1.Container{{Name: "ray-head", Image: "rayproject/ray:2.52.0"}}
	job.Status.JobId = testID
	job.Status.DashboardURL = testDashboard
	for _, e := range edit {
		e(job)
	}
	return job
}

func waitLoop(healthURL, address string) string {
	return `until python -c "import urllib.request; r=urllib.request.urlopen('` + healthURL +
		`', timeout=10); exit(0 if b'success' in r.read() else 1)" >/dev/null 2>&1 ; do echo "Waiting for Ray Dashboard GCS to become healthy at ` +
		address + ` ..." ; sleep 2 ; done ; `
}

// k8sJobLine is the whole K8sJobMode line around the given submit flags.
func k8sJobLine(flags string) string {
	return waitLoop(testAddress+"/api/gcs_healthz", testAddress) +
		"if ! ray job status --address " + testAddress + " " + testID + " >/dev/null 2>&1 ; then " +
		"ray job submit --address " + testAddress + " --no-wait " + flags + " -- python main.py ; fi ; " +
		"ray job logs --address " + testAddress + " --follow " + testID
}

func TestCommand(t *testing.T) {
	sidecar := func(j *rayv1.RayJob) { j.Spec.SubmissionMode = rayv1.SidecarMode }
	tests := []struct {
		name string
		job  *rayv1.RayJob
		mode rayv1.JobSubmissionMode
		opts Options
		want string
	}{
		{name: "K8sJobMode: wait, check, submit without waiting, follow",
			job: testJob(), mode: rayv1.K8sJobMode,
			want: k8sJobLine("--submission-id " + testID)},
		{name: "K8sJobMode: a dashboard URL with its scheme is kept",
			job: testJob(func(j *rayv1.RayJob) { j.Status.DashboardURL = testAddress }), mode: rayv1.K8sJobMode,
			want: k8sJobLine("--submission-id " + testID)},
		{name: "runtime env YAML becomes quoted JSON",
			job:  testJob(func(j *rayv1.RayJob) { j.Spec.RuntimeEnvYAML = "pip:\n  - requests==2.26.0\nenv_vars:\n  A: \"1\"\n" }),
			mode: rayv1.K8sJobMode,
			want: k8sJobLine(`--runtime-env-json "{\"env_vars\":{\"A\":\"1\"},\"pip\":[\"requests==2.26.0\"]}" --submission-id ` + testID)},
		{name: "metadata with a recent Ray",
			job: testJob(func(j *rayv1.RayJob) { j.Spec.Metadata = map[string]string{"owner": "ml", "b": "2"} }), mode: rayv1.K8sJobMode,
			want: k8sJobLine(`--metadata-json "{\"b\":\"2\",\"owner\":\"ml\"}" --submission-id ` + testID)},
		{name: "metadata without rayVersion is assumed supported",
			job: testJob(func(j *rayv1.RayJob) {
				j.Spec.Metadata = map[string]string{"k": "v"}
				j.Spec.RayClusterSpec.RayVersion = ""
			}), mode: rayv1.K8sJobMode,
			want: k8sJobLine(`--metadata-json "{\"k\":\"v\"}" --submission-id ` + testID)},
		{name: "metadata on an existing cluster (clusterSelector) is passed on",
			job: testJob(func(j *rayv1.RayJob) {
				j.Spec.Metadata = map[string]string{"k": "v"}
				j.Spec.RayClusterSpec = nil
				j.Spec.ClusterSelector = map[string]string{rayv1.RayJobClusterSelectorKey: "shared"}
			}), mode: rayv1.K8sJobMode,
			want: k8sJobLine(`--metadata-json "{\"k\":\"v\"}" --submission-id ` + testID)},
		{name: "metadata at exactly 2.6.0",
			job: testJob(func(j *rayv1.RayJob) {
				j.Spec.Metadata = map[string]string{"k": "v"}
				j.Spec.RayClusterSpec.RayVersion = "2.6.0"
			}), mode: rayv1.K8sJobMode,
			want: k8sJobLine(`--metadata-json "{\"k\":\"v\"}" --submission-id ` + testID)},
		{name: "entrypoint resources, CPUs and GPUs",
			job: testJob(func(j *rayv1.RayJob) {
				j.Spec.EntrypointNumCpus, j.Spec.EntrypointNumGpus = 0.5, 1
				j.Spec.EntrypointResources = `{"TPU": 4}`
			}), mode: rayv1.K8sJobMode,
			want: k8sJobLine(`--submission-id ` + testID + ` --entrypoint-num-cpus 0.500000 --entrypoint-num-gpus 1.000000 --entrypoint-resources "{\"TPU\": 4}"`)},
		{name: "no submission ID yet: no flag",
			job: testJob(func(j *rayv1.RayJob) { j.Status.JobId = "" }), mode: rayv1.K8sJobMode,
			want: waitLoop(testAddress+"/api/gcs_healthz", testAddress) +
				"if ! ray job status --address " + testAddress + "  >/dev/null 2>&1 ; then ray job submit --address " + testAddress +
				" --no-wait -- python main.py ; fi ; ray job logs --address " + testAddress + " --follow "},
		{name: "SidecarMode: loopback, default dashboard port, submit once",
			job: testJob(sidecar), mode: rayv1.SidecarMode,
			want: waitLoop("http://localhost:8265/api/gcs_healthz", "http://127.0.0.1:8265") +
				"ray job submit --address http://127.0.0.1:8265 --submission-id " + testID + " -- python main.py ;"},
		{name: "SidecarMode: the head's dashboard port",
			job: testJob(sidecar, func(j *rayv1.RayJob) {
				j.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "gcs-server", ContainerPort: 6379}, {Name: "dashboard", ContainerPort: 9000}}
			}), mode: rayv1.SidecarMode,
			want: waitLoop("http://localhost:9000/api/gcs_healthz", "http://127.0.0.1:9000") +
				"ray job submit --address http://127.0.0.1:9000 --submission-id " + testID + " -- python main.py ;"},
		{name: "SidecarMode with SidecarSubmitterRestart checks first",
			job: testJob(sidecar), mode: rayv1.SidecarMode, opts: Options{SidecarSubmitterRestart: true},
			want: waitLoop("http://localhost:8265/api/gcs_healthz", "http://127.0.0.1:8265") +
				"if ! ray job status --address http://127.0.0.1:8265 " + testID + " >/dev/null 2>&1 ; then " +
				"ray job submit --address http://127.0.0.1:8265 --no-wait --submission-id " + testID + " -- python main.py ; fi ; " +
				"ray job logs --address http://127.0.0.1:8265 --follow " + testID},
		{name: "the entrypoint is trimmed and otherwise passed as written",
			job: testJob(sidecar, func(j *rayv1.RayJob) { j.Spec.Entrypoint = "  python a.py && echo $HOME\n" }), mode: rayv1.SidecarMode,
			want: waitLoop("http://localhost:8265/api/gcs_healthz", "http://127.0.0.1:8265") +
				"ray job submit --address http://127.0.0.1:8265 --submission-id " + testID + " -- python a.py && echo $HOME ;"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			words, err := tt.opts.Command(tt.job, tt.mode)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(words, " "); got != tt.want {
				t.Errorf("command\n got: %s\nwant: %s", got, tt.want)
			}
		})
	}
}

func TestCommandErrors(t *testing.T) {
	tests := []struct {
		name    string
		job     *rayv1.RayJob
		mode    rayv1.JobSubmissionMode
		wantErr string
	}{
		{"runtime env that is not YAML", testJob(func(j *rayv1.RayJob) { j.Spec.RuntimeEnvYAML = "pip: [unclosed" }),
			rayv1.K8sJobMode, "spec.runtimeEnvYAML is not valid YAML"},
		{"metadata with Ray older than 2.6", testJob(func(j *rayv1.RayJob) {
			j.Spec.Metadata = map[string]string{"k": "v"}
			j.Spec.RayClusterSpec.RayVersion = "2.5.0"
		}), rayv1.K8sJobMode, "spec.metadata needs Ray 2.6.0 or later (for `ray job submit --metadata-json`), but spec.rayClusterSpec.rayVersion is 2.5.0"},
		{"metadata with a Ray pre-release", testJob(func(j *rayv1.RayJob) {
			j.Spec.Metadata = map[string]string{"k": "v"}
			j.Spec.RayClusterSpec.RayVersion = "2.9.0-rc1"
		}), rayv1.K8sJobMode, "needs Ray 2.6.0 or later"},
		{"metadata with an unparsable rayVersion", testJob(func(j *rayv1.RayJob) {
			j.Spec.Metadata = map[string]string{"k": "v"}
			j.Spec.RayClusterSpec.RayVersion = "nightly"
		}), rayv1.K8sJobMode, `rayVersion "nightly" is not a version`},
		{"HTTPMode submits from the operator", testJob(), rayv1.HTTPMode, `submission mode "HTTPMode" runs no`},
		{"InteractiveMode submits nothing", testJob(), rayv1.InteractiveMode, `submission mode "InteractiveMode" runs no`},
		{"no mode", testJob(), "", `submission mode "" runs no`},
		{"SidecarMode without rayClusterSpec", testJob(func(j *rayv1.RayJob) { j.Spec.RayClusterSpec = nil }),
			rayv1.SidecarMode, "SidecarMode needs spec.rayClusterSpec"},
		{"SidecarMode without a head container", testJob(func(j *rayv1.RayJob) {
			j.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers = nil
		}), rayv1.SidecarMode, "head group's Pod template has no containers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Command(tt.job, tt.mode)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
