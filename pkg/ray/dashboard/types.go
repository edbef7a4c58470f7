package dashboard

// JobStatus is a Ray job's status, as Ray's Jobs API spells it.
type JobStatus string

// The job statuses. A job starts PENDING, runs, and ends SUCCEEDED, FAILED
// or STOPPED.
const (
	JobPending   JobStatus = "PENDING"
	JobRunning   JobStatus = "RUNNING"
	JobSucceeded JobStatus = "SUCCEEDED"
	JobFailed    JobStatus = "FAILED"
	JobStopped   JobStatus = "STOPPED"
)

// IsTerminal reports whether a job in status s has ended (KubeRay's
// rayv1.IsJobTerminal).
func (s JobStatus) IsTerminal() bool {
	return s == JobSucceeded || s == JobFailed || s == JobStopped
}

// JobDetails is the JSON of GET /api/jobs/{id} and of each item of GET
// /api/jobs/ (Ray's JobDetails). The fields KubeRay decodes are those of
// its utiltypes.RayJobInfo; the rest are Ray's, kept so that a stand-in
// answers with every key Ray sends (null where Ray sends null).
type JobDetails struct {
	Type                string             `json:"type"`
	JobID               *string            `json:"job_id"`
	SubmissionID        string             `json:"submission_id"`
	DriverInfo          any                `json:"driver_info"`
	Status              JobStatus          `json:"status"`
	Entrypoint          string             `json:"entrypoint"`
	Message             string             `json:"message"`
	ErrorType           *string            `json:"error_type"`
	StartTime           uint64             `json:"start_time"` // milliseconds since the epoch
	EndTime             *uint64            `json:"end_time"`   // milliseconds since the epoch
	Metadata            map[string]string  `json:"metadata"`
	RuntimeEnv          map[string]any     `json:"runtime_env"`
	DriverExitCode      *int               `json:"driver_exit_code"`
	EntrypointNumCPUs   *float64           `json:"entrypoint_num_cpus"`
	EntrypointNumGPUs   *float64           `json:"entrypoint_num_gpus"`
	EntrypointMemory    *int64             `json:"entrypoint_memory"`
	EntrypointResources map[string]float64 `json:"entrypoint_resources"`
}

// JobRequest is the body of POST /api/jobs/ (Ray's JobSubmitRequest;
// KubeRay's utiltypes.RayJobRequest plus entrypoint_memory). An unset field
// is left out, so Ray applies its default.
type JobRequest struct {
	Entrypoint          string             `json:"entrypoint"`
	SubmissionID        string             `json:"submission_id,omitempty"`
	RuntimeEnv          map[string]any     `json:"runtime_env,omitempty"`
	Metadata            map[string]string  `json:"metadata,omitempty"`
	EntrypointNumCPUs   *float64           `json:"entrypoint_num_cpus,omitempty"`
	EntrypointNumGPUs   *float64           `json:"entrypoint_num_gpus,omitempty"`
	EntrypointMemory    *int64             `json:"entrypoint_memory,omitempty"`
	EntrypointResources map[string]float64 `json:"entrypoint_resources,omitempty"`
}

// ServeDetails is the JSON of GET /api/serve/applications/ (Ray's
// ServeInstanceDetails), reduced to what an operator reads.
type ServeDetails struct {
	Applications map[string]ServeApplication `json:"applications"`
	DeployMode   string                      `json:"deploy_mode,omitempty"`
}

// ServeApplication is one application's status and its deployments'.
type ServeApplication struct {
	Name        string                     `json:"name,omitempty"`
	Status      string                     `json:"status"`
	Message     string                     `json:"message,omitempty"`
	RoutePrefix string                     `json:"route_prefix,omitempty"`
	Deployments map[string]ServeDeployment `json:"deployments"`
}

// ServeDeployment is one deployment's status.
type ServeDeployment struct {
	Name    string `json:"name,omitempty"`
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
}

// Serve application statuses (Ray's ApplicationStatus).
const (
	ServeAppNotStarted   = "NOT_STARTED"
	ServeAppDeploying    = "DEPLOYING"
	ServeAppRunning      = "RUNNING"
	ServeAppDeployFailed = "DEPLOY_FAILED"
	ServeAppDeleting     = "DELETING"
	ServeAppUnhealthy    = "UNHEALTHY"
)

// Serve deployment statuses (Ray's DeploymentStatus).
const (
	ServeDeploymentUpdating  = "UPDATING"
	ServeDeploymentHealthy   = "HEALTHY"
	ServeDeploymentUnhealthy = "UNHEALTHY"
)
