package submitter

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/Masterminds/semver/v3"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
)

// Options are the manager-wide settings the submitter depends on. The zero
// value is KubeRay's default.
type Options struct {
	// SidecarSubmitterRestart is KubeRay's alpha feature gate of that name:
	// the SidecarMode submitter container restarts when it fails, so, as
	// in K8sJobMode, its command first asks whether the job was already
	// submitted and then only follows its logs.
	SidecarSubmitterRestart bool
	// LoginShell runs the submitter's command in a login shell, as
	// ENABLE_LOGIN_SHELL does (podspec.BuildOptions.LoginShell).
	LoginShell bool
}

const (
	// gcsHealthPath is the dashboard endpoint that answers "success" once
	// the GCS is up.
	gcsHealthPath = "api/gcs_healthz"
	// healthTimeoutSeconds bounds one health request.
	healthTimeoutSeconds = 10
	// healthProbe fetches a URL and succeeds when the reply says success.
	// It uses Python because slim Ray images lack wget and curl.
	healthProbe = `python -c "import urllib.request; r=urllib.request.urlopen('%s', timeout=%d); exit(0 if b'success' in r.read() else 1)"`
)

// minMetadataRay is the first Ray whose `ray job submit` takes
// --metadata-json. A constraint (not a comparison) as KubeRay has it: a
// pre-release such as 2.9.0-rc1 does not satisfy it.
var minMetadataRay = func() *semver.Constraints {
	c, err := semver.NewConstraint(">= 2.6.0")
	if err != nil {
		panic(err)
	}
	return c
}()

// Command is the shell line, one word an element, that submits job in mode
// (K8sJobMode or SidecarMode) with the SidecarSubmitterRestart gate off.
// See Options.Command.
func Command(job *rayv1.RayJob, mode rayv1.JobSubmissionMode) ([]string, error) {
	return Options{}.Command(job, mode)
}

// Command is the shell line, one word an element, that submits job in mode.
// It first waits for the dashboard's GCS health check to pass. A submitter
// that may run more than once (K8sJobMode's Job retries, a restarting
// sidecar) submits with --no-wait only if `ray job status` does not know the
// submission ID yet, then follows the logs; a sidecar that runs once just
// submits and waits. The submitter reaches the dashboard at
// status.dashboardURL in K8sJobMode and on the head Pod's loopback in
// SidecarMode. Joined with spaces, the words are a bash script: quoted
// values are Go-quoted, and the entrypoint is passed as written.
func (o Options) Command(job *rayv1.RayJob, mode rayv1.JobSubmissionMode) ([]string, error) {
	address, healthURL, err := dashboardAddress(job, mode)
	if err != nil {
		return nil, err
	}
	flags, err := submitFlags(job)
	if err != nil {
		return nil, err
	}
	id := job.Status.JobId
	checkFirst := mode == rayv1.K8sJobMode || o.SidecarSubmitterRestart

	words := []string{
		"until", fmt.Sprintf(healthProbe, healthURL, healthTimeoutSeconds), ">/dev/null", "2>&1", ";",
		"do", "echo", strconv.Quote("Waiting for Ray Dashboard GCS to become healthy at " + address + " ..."), ";",
		"sleep", "2", ";", "done", ";",
	}
	if checkFirst {
		words = append(words, "if", "!", "ray", "job", "status", "--address", address, id, ">/dev/null", "2>&1", ";", "then")
	}
	words = append(words, "ray", "job", "submit", "--address", address)
	if checkFirst {
		words = append(words, "--no-wait")
	}
	words = append(words, flags...)
	words = append(words, "--", strings.TrimSpace(job.Spec.Entrypoint), ";")
	if checkFirst {
		words = append(words, "fi", ";", "ray", "job", "logs", "--address", address, "--follow", id)
	}
	return words, nil
}

// dashboardAddress is the dashboard's URL as the submitter sees it, and the
// URL of its GCS health check.
func dashboardAddress(job *rayv1.RayJob, mode rayv1.JobSubmissionMode) (address, healthURL string, err error) {
	switch mode {
	case rayv1.K8sJobMode:
		address = job.Status.DashboardURL
		if !strings.HasPrefix(address, "http://") {
			address = "http://" + address
		}
		return address, address + "/" + gcsHealthPath, nil
	case rayv1.SidecarMode:
		// The sidecar shares the head Pod's network namespace.
		if job.Spec.RayClusterSpec == nil {
			return "", "", fmt.Errorf("RayJob %s: SidecarMode needs spec.rayClusterSpec, whose head Pod the submitter joins", job.Name)
		}
		head, err := headContainer(job.Spec.RayClusterSpec)
		if err != nil {
			return "", "", fmt.Errorf("RayJob %s: spec.rayClusterSpec: %w", job.Name, err)
		}
		port := strconv.Itoa(int(dashboardPort(head)))
		return "http://127.0.0.1:" + port, "http://localhost:" + port + "/" + gcsHealthPath, nil
	default:
		return "", "", fmt.Errorf("RayJob %s: submission mode %q runs no `ray job submit` (only %s and %s do)",
			job.Name, mode, rayv1.K8sJobMode, rayv1.SidecarMode)
	}
}

// submitFlags are the `ray job submit` options taken from the spec, in
// KubeRay's order.
func submitFlags(job *rayv1.RayJob) ([]string, error) {
	var flags []string
	if yamlText := job.Spec.RuntimeEnvYAML; yamlText != "" {
		raw, err := yaml.YAMLToJSON([]byte(yamlText))
		if err != nil {
			return nil, fmt.Errorf("RayJob %s: spec.runtimeEnvYAML is not valid YAML: %w", job.Name, err)
		}
		flags = append(flags, "--runtime-env-json", strconv.Quote(string(raw)))
	}
	if len(job.Spec.Metadata) > 0 {
		if err := checkMetadataSupported(job); err != nil {
			return nil, err
		}
		raw, err := json.Marshal(job.Spec.Metadata)
		if err != nil {
			return nil, fmt.Errorf("RayJob %s: encoding spec.metadata: %w", job.Name, err)
		}
		flags = append(flags, "--metadata-json", strconv.Quote(string(raw)))
	}
	if id := job.Status.JobId; id != "" {
		flags = append(flags, "--submission-id", id)
	}
	// %f of a float32, as KubeRay prints it: 0.5 is "0.500000".
	if n := job.Spec.EntrypointNumCpus; n > 0 {
		flags = append(flags, "--entrypoint-num-cpus", fmt.Sprintf("%f", n))
	}
	if n := job.Spec.EntrypointNumGpus; n > 0 {
		flags = append(flags, "--entrypoint-num-gpus", fmt.Sprintf("%f", n))
	}
	if r := job.Spec.EntrypointResources; r != "" {
		flags = append(flags, "--entrypoint-resources", strconv.Quote(r))
	}
	return flags, nil
}

// checkMetadataSupported rejects metadata only when the RayJob states a Ray
// version older than 2.6.0 (or one that does not parse). A job on an
// existing cluster (clusterSelector) or without rayVersion is assumed to run
// a recent Ray.
func checkMetadataSupported(job *rayv1.RayJob) error {
	spec := job.Spec.RayClusterSpec
	if spec == nil || spec.RayVersion == "" {
		return nil
	}
	v, err := semver.NewVersion(spec.RayVersion)
	if err != nil {
		return fmt.Errorf("RayJob %s: spec.metadata needs Ray 2.6.0 or later, and spec.rayClusterSpec.rayVersion %q is not a version: %w",
			job.Name, spec.RayVersion, err)
	}
	if !minMetadataRay.Check(v) {
		return fmt.Errorf("RayJob %s: spec.metadata needs Ray 2.6.0 or later (for `ray job submit --metadata-json`), but spec.rayClusterSpec.rayVersion is %s",
			job.Name, spec.RayVersion)
	}
	return nil
}

// headContainer is the head Pod's Ray container: the first one.
func headContainer(spec *rayv1.RayClusterSpec) (*corev1.Container, error) {
	containers := spec.HeadGroupSpec.Template.Spec.Containers
	if len(containers) == 0 {
		return nil, fmt.Errorf("the head group's Pod template has no containers")
	}
	return &containers[0], nil
}

// dashboardPort is the head container's port named "dashboard", else Ray's
// default.
func dashboardPort(c *corev1.Container) int32 {
	for _, p := range c.Ports {
		if p.Name == podspec.DashboardPortName {
			return p.ContainerPort
		}
	}
	return podspec.DefaultDashboardPort
}
