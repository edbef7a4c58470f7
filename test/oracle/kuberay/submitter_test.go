package kuberay

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	krayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	kcommon "github.com/ray-project/kuberay/ray-operator/controllers/ray/common"
	kutils "github.com/ray-project/kuberay/ray-operator/controllers/ray/utils"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/submitter"
)

// What this file compares: for every RayJob of the corpus
// (submitter_corpus_test.go) and for both modes that run `ray job submit`,
// the command, the K8sJobMode submitter Pod template, the SidecarMode
// submitter container and the head Pod that carries it, as Gantry builds
// them and as KubeRay v1.6.2 does, its output carried forward to v1.7.0
// by exactly the changes docs/raycluster.md ("The RayJob submitter") lists:
//
//   - K8sJobMode waits for the dashboard's GCS health check first, as
//     SidecarMode already did (v17WaitLoop).
//   - --metadata-json is passed when the RayJob has no rayClusterSpec
//     (clusterSelector) and when rayVersion is unset; only a rayVersion
//     set below 2.6.0 (or unparsable) is refused.
//   - The submitter Pod template carries the RayJob's three origin labels.
//   - The SidecarSubmitterRestart feature gate: the sidecar checks
//     `ray job status` first and follows the logs, as K8sJobMode does,
//     and restarts on failure.
//
// Anything else that differs fails.

// pythonUnbuffered is the variable KubeRay's RayJob controller sets on the
// submitter (ray.PythonUnbufferedEnvVarName, in a package too heavy to
// import here).
const pythonUnbuffered = "PYTHONUNBUFFERED"

// kuberayOf converts one of Gantry's API objects to KubeRay's through JSON.
func kuberayOf[T any](t *testing.T, in any) *T {
	t.Helper()
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out := new(T)
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// v17WaitLoop is the loop v1.7.0 puts before the submission in both
// modes. SidecarMode's is checked against v1.6.2's own (kuberayCommand), so
// only its use in K8sJobMode is new.
func v17WaitLoop(healthURL, address string) []string {
	probe := fmt.Sprintf(`python -c "import urllib.request; r=urllib.request.urlopen('%s', timeout=%d); exit(0 if b'success' in r.read() else 1)"`, healthURL, 10)
	return []string{"until", probe, ">/dev/null", "2>&1", ";", "do", "echo",
		strconv.Quote("Waiting for Ray Dashboard GCS to become healthy at " + address + " ..."), ";", "sleep", "2", ";", "done", ";"}
}

// kuberayCommand is v1.6.2's BuildJobSubmitCommand carried forward to
// v1.7.0 as the list at the top of this file says.
func kuberayCommand(t *testing.T, job *krayv1.RayJob, mode krayv1.JobSubmissionMode, restartGate bool) ([]string, error) {
	in := job.DeepCopy()
	// v1.6.2 refuses metadata when rayVersion is unset; v1.7.0 assumes a
	// recent Ray. rayVersion is read for nothing else.
	if len(in.Spec.Metadata) > 0 && in.Spec.RayClusterSpec != nil && in.Spec.RayClusterSpec.RayVersion == "" {
		in.Spec.RayClusterSpec.RayVersion = "2.6.0"
	}
	words, err := kcommon.BuildJobSubmitCommand(in, mode)
	if err != nil {
		return nil, err
	}
	switch mode {
	case krayv1.K8sJobMode:
		address := words[slices.Index(words, "--address")+1]
		words = append(v17WaitLoop(address+"/api/gcs_healthz", address), words...)
	case krayv1.SidecarMode:
		head := in.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0]
		port := kutils.FindContainerPort(&head, kutils.DashboardPortName, kutils.DefaultDashboardPort)
		loop := words[:slices.Index(words, "done")+2]
		if want := v17WaitLoop(fmt.Sprintf("http://localhost:%d/api/gcs_healthz", port), fmt.Sprintf("http://127.0.0.1:%d", port)); !slices.Equal(loop, want) {
			t.Fatalf("v1.6.2's SidecarMode wait loop is not the one v1.7.0 uses in both modes:\n v1.6.2: %q\nassumed: %q", loop, want)
		}
		if restartGate {
			// K8sJobMode's check-submit-follow, on the head's loopback.
			in.Status.DashboardURL = fmt.Sprintf("127.0.0.1:%d", port)
			body, err := kcommon.BuildJobSubmitCommand(in, krayv1.K8sJobMode)
			if err != nil {
				return nil, err
			}
			words = append(slices.Clone(loop), body...)
		}
	}
	// v1.6.2 drops metadata for a RayJob without rayClusterSpec.
	if len(in.Spec.Metadata) > 0 && in.Spec.RayClusterSpec == nil {
		raw, _ := json.Marshal(in.Spec.Metadata)
		at := slices.Index(words, "--submission-id")
		if at < 0 {
			t.Fatal("the corpus must give every RayJob a submission ID")
		}
		words = slices.Insert(words, at, "--metadata-json", strconv.Quote(string(raw)))
	}
	return words, nil
}

// kuberayConfigure is what v1.6.2's RayJob controller does to the submitter
// container (its unexported configureSubmitterContainer), from the pieces
// its packages export, with words as the command.
func kuberayConfigure(c *corev1.Container, job *krayv1.RayJob, cluster *krayv1.RayCluster, mode krayv1.JobSubmissionMode, words []string) {
	if mode == krayv1.SidecarMode || len(c.Command) == 0 {
		c.Command = kutils.GetContainerCommand([]string{"e"})
		c.Args = []string{strings.Join(words, " ")}
	}
	c.Env = append(c.Env,
		corev1.EnvVar{Name: pythonUnbuffered, Value: "1"},
		corev1.EnvVar{Name: kutils.RAY_DASHBOARD_ADDRESS, Value: job.Status.DashboardURL},
		corev1.EnvVar{Name: kutils.RAY_JOB_SUBMISSION_ID, Value: job.Status.JobId})
	if kutils.IsAuthEnabled(&cluster.Spec) {
		kcommon.SetContainerTokenAuthEnvVars(cluster.Name, c, cluster.Spec.AuthOptions)
	}
}

// kuberayTemplate is v1.6.2's getSubmitterTemplate plus v1.7.0's labels.
func kuberayTemplate(job *krayv1.RayJob, cluster *krayv1.RayCluster, words []string) corev1.PodTemplateSpec {
	tmpl := kcommon.GetSubmitterTemplate(&job.Spec, &cluster.Spec)
	kuberayConfigure(&tmpl.Spec.Containers[0], job, cluster, krayv1.K8sJobMode, words)
	if kutils.IsK8sAuthEnabled(cluster.Spec.AuthOptions) {
		kcommon.AddRayTokenVolume(&tmpl.Spec)
	}
	if tmpl.Labels == nil {
		tmpl.Labels = map[string]string{}
	}
	tmpl.Labels[kutils.RayOriginatedFromCRNameLabelKey] = job.Name
	tmpl.Labels[kutils.RayOriginatedFromCRDLabelKey] = kutils.RayOriginatedFromCRDLabelValue(kutils.RayJobCRD)
	tmpl.Labels[kutils.KubernetesCreatedByLabelKey] = kutils.ComponentName
	return tmpl
}

// kuberaySidecar is v1.6.2's getSubmitterContainer plus v1.7.0's restart
// gate.
func kuberaySidecar(job *krayv1.RayJob, cluster *krayv1.RayCluster, words []string, restartGate bool) corev1.Container {
	c := kcommon.GetDefaultSubmitterContainer(&cluster.Spec)
	kuberayConfigure(&c, job, cluster, krayv1.SidecarMode, words)
	if restartGate {
		c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyOnFailure)
	}
	return c
}

// checkCase builds everything for one corpus entry both ways.
func checkCase(t *testing.T, c corpusCase) {
	job := c.job.DeepCopy()
	if job.Status.JobId == "" {
		job.Status.JobId = job.Name + "-x7k2p"
	}
	if job.Status.DashboardURL == "" {
		job.Status.DashboardURL = job.Name + "-head-svc." + job.Namespace + ".svc.cluster.local:8265"
	}
	cluster := c.cluster
	if cluster == nil {
		// The cluster as the RayJob creates it; its head is what the
		// submitter reads (image, auth), the sidecar is checked apart.
		plain := job.DeepCopy()
		plain.Spec.SubmissionMode = rayv1.K8sJobMode
		var err error
		if cluster, err = submitter.ClusterFor(plain, job.Name+"-abcde", c.opts); err != nil {
			t.Fatal(err)
		}
	}
	if c.opts.LoginShell {
		t.Setenv(kutils.ENABLE_LOGIN_SHELL, "true")
	}
	kjob, kcluster := kuberayOf[krayv1.RayJob](t, job), kuberayOf[krayv1.RayCluster](t, cluster)
	built := 0
	for _, mode := range []rayv1.JobSubmissionMode{rayv1.K8sJobMode, rayv1.SidecarMode} {
		gwords, gerr := c.opts.Command(job, mode)
		if mode == rayv1.SidecarMode && job.Spec.RayClusterSpec == nil {
			// KubeRay's validation refuses it and its builder would crash.
			if gerr == nil {
				t.Errorf("SidecarMode without rayClusterSpec: Gantry built %q, want an error", gwords)
			}
			continue
		}
		kwords, kerr := kuberayCommand(t, kjob, krayv1.JobSubmissionMode(mode), c.opts.SidecarSubmitterRestart)
		if (gerr != nil) != (kerr != nil) {
			t.Fatalf("%s: Gantry's error %v, KubeRay's %v", mode, gerr, kerr)
		}
		if gerr != nil {
			continue
		}
		built++
		same(t, string(mode)+" command", kwords, gwords)
		switch mode {
		case rayv1.K8sJobMode:
			gtmpl, err := submitter.Template(job, cluster, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			same(t, "submitter Pod template", kuberayTemplate(kjob, kcluster, kwords), gtmpl)
		case rayv1.SidecarMode:
			want := kuberaySidecar(kjob, kcluster, kwords, c.opts.SidecarSubmitterRestart)
			got, err := submitter.SidecarContainer(job, cluster, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			same(t, "sidecar container", want, got)
			checkSidecarHead(t, job, want, c.opts)
		}
	}
	if c.wantErr != (built == 0) {
		t.Errorf("built for %d modes, want an error from both sides: %v", built, c.wantErr)
	}
}

// checkSidecarHead checks the head Pod of a SidecarMode RayJob's new
// cluster: its own containers, then KubeRay's sidecar; restartPolicy Never.
func checkSidecarHead(t *testing.T, job *rayv1.RayJob, sidecar corev1.Container, opts submitter.Options) {
	sjob := job.DeepCopy()
	sjob.Spec.SubmissionMode = rayv1.SidecarMode
	cluster, err := submitter.ClusterFor(sjob, job.Name+"-abcde", opts)
	if err != nil {
		t.Fatal(err)
	}
	head := kuberayOf[krayv1.RayJob](t, job).Spec.RayClusterSpec.HeadGroupSpec.Template.Spec
	head.Containers = append(head.Containers, sidecar)
	head.RestartPolicy = corev1.RestartPolicyNever
	same(t, "SidecarMode head Pod spec", head, cluster.Spec.HeadGroupSpec.Template.Spec)
}

// same compares through JSON, which is what reaches the API server, and
// shows the first lines that differ.
func same(t *testing.T, what string, kuberay, gantry any) {
	t.Helper()
	k, _ := json.MarshalIndent(kuberay, "", "  ")
	g, _ := json.MarshalIndent(gantry, "", "  ")
	if string(k) == string(g) {
		return
	}
	kl, gl := strings.Split(string(k), "\n"), strings.Split(string(g), "\n")
	i := 0
	for i < len(kl) && i < len(gl) && kl[i] == gl[i] {
		i++
	}
	t.Errorf("%s differs from KubeRay's from line %d:\nKubeRay: %s\n Gantry: %s",
		what, i+1, strings.Join(kl[i:min(i+6, len(kl))], "\n         "), strings.Join(gl[i:min(i+6, len(gl))], "\n         "))
}
