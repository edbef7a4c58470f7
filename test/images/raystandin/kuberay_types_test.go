package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gantry-dev/gantry/pkg/ray/dashboard"
)

// The main module does not depend on github.com/ray-project/kuberay, so
// these are KubeRay v1.6.0's types with their field names and JSON tags
// copied from ray-operator/controllers/ray/utils/types/dashboard_httpclient.go
// and serve_api_models.go (JobStatus is rayv1.JobStatus there, a string type). KubeRay's dashboard
// client (ray-operator/controllers/ray/utils/dashboardclient/
// dashboard_httpclient.go) marshals the requests and unmarshals the replies
// with them.

type kuberayRayJobInfo struct {
	ErrorType    *string             `json:"error_type,omitempty"`
	Metadata     map[string]string   `json:"metadata,omitempty"`
	RuntimeEnv   map[string]any      `json:"runtime_env,omitempty"`
	JobStatus    dashboard.JobStatus `json:"status,omitempty"`
	Entrypoint   string              `json:"entrypoint,omitempty"`
	JobId        string              `json:"job_id,omitempty"`
	SubmissionId string              `json:"submission_id,omitempty"`
	Message      string              `json:"message,omitempty"`
	StartTime    uint64              `json:"start_time,omitempty"`
	EndTime      uint64              `json:"end_time,omitempty"`
}

type kuberayRayJobRequest struct {
	RuntimeEnv   map[string]any     `json:"runtime_env,omitempty"`
	Metadata     map[string]string  `json:"metadata,omitempty"`
	Resources    map[string]float32 `json:"entrypoint_resources,omitempty"`
	Entrypoint   string             `json:"entrypoint"`
	SubmissionId string             `json:"submission_id,omitempty"`
	NumCpus      float32            `json:"entrypoint_num_cpus,omitempty"`
	NumGpus      float32            `json:"entrypoint_num_gpus,omitempty"`
}

type kuberayRayJobResponse struct {
	JobId string `json:"job_id"`
}

type kuberayRayJobStopResponse struct {
	Stopped bool `json:"stopped"`
}

type kuberayRayJobLogsResponse struct {
	Logs string `json:"logs,omitempty"`
}

type kuberayServeDeploymentStatus struct {
	Name    string `json:"name,omitempty"`
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
}

type kuberayServeApplicationStatus struct {
	Deployments map[string]kuberayServeDeploymentStatus `json:"deployments"`
	Name        string                                  `json:"name,omitempty"`
	Status      string                                  `json:"status"`
	Message     string                                  `json:"message,omitempty"`
}

type kuberayServeDeploymentDetails struct {
	kuberayServeDeploymentStatus
	RoutePrefix string `json:"route_prefix,omitempty"`
}

type kuberayServeApplicationDetails struct {
	Deployments map[string]kuberayServeDeploymentDetails `json:"deployments"`
	kuberayServeApplicationStatus
	RoutePrefix string `json:"route_prefix,omitempty"`
	DocsPath    string `json:"docs_path,omitempty"`
}

type kuberayServeDetails struct {
	Applications map[string]kuberayServeApplicationDetails `json:"applications"`
	DeployMode   string                                    `json:"deploy_mode,omitempty"`
}

// requireJSONKeys fails unless obj has a key for every JSON tag of typ, so a
// renamed field in the stand-in cannot hide behind omitempty.
func requireJSONKeys(t *testing.T, what string, obj map[string]any, typ reflect.Type) {
	t.Helper()
	for f := range typ.Fields() {
		if f.Anonymous {
			requireJSONKeys(t, what, obj, f.Type)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if _, ok := obj[name]; !ok {
			t.Errorf("%s has no %q (KubeRay's %s.%s)", what, name, typ.Name(), f.Name)
		}
	}
}
