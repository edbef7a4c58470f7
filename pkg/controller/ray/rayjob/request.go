package rayjob

import (
	"encoding/json"
	"fmt"
	"strconv"

	"sigs.k8s.io/yaml"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/ray/dashboard"
)

// JobRequest is the HTTPMode submission of job, as KubeRay's dashboard
// client builds it: the entrypoint under the RayJob's submission ID, with
// its metadata, runtime environment and entrypoint resources. It is also
// what `make run`'s stand-in for simulated heads submits for a submitter
// (hack/kwokray).
func JobRequest(job *rayv1.RayJob) (dashboard.JobRequest, error) {
	req := dashboard.JobRequest{Entrypoint: job.Spec.Entrypoint, SubmissionID: job.Status.JobId, Metadata: job.Spec.Metadata}
	if job.Spec.RuntimeEnvYAML != "" {
		if err := yaml.Unmarshal([]byte(job.Spec.RuntimeEnvYAML), &req.RuntimeEnv); err != nil {
			return req, fmt.Errorf("spec.runtimeEnvYAML is not YAML: %w", err)
		}
	}
	if n := job.Spec.EntrypointNumCpus; n != 0 {
		v := widen(n)
		req.EntrypointNumCPUs = &v
	}
	if n := job.Spec.EntrypointNumGpus; n != 0 {
		v := widen(n)
		req.EntrypointNumGPUs = &v
	}
	if job.Spec.EntrypointResources != "" {
		if err := json.Unmarshal([]byte(job.Spec.EntrypointResources), &req.EntrypointResources); err != nil {
			return req, fmt.Errorf("spec.entrypointResources is not a JSON object of numbers: %w", err)
		}
	}
	return req, nil
}

// widen is the float64 of n's shortest decimal: 0.1 is sent as 0.1, as
// KubeRay sends the float32, not as 0.10000000149011612.
func widen(n float32) float64 {
	v, err := strconv.ParseFloat(strconv.FormatFloat(float64(n), 'g', -1, 32), 64)
	if err != nil {
		return float64(n)
	}
	return v
}
