package xgboost

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime/plugin"
)

// Name identifies the plugin.
const Name = "XGBoost"

// Environment the plugin sets on the trainer node container.
const (
	EnvTrackerURI  = "DMLC_TRACKER_URI"
	EnvTrackerPort = "DMLC_TRACKER_PORT"
	EnvTaskID      = "DMLC_TASK_ID"
	EnvNumWorker   = "DMLC_NUM_WORKER"
)

// XGBoost sets the tracker address and port, the task id (the pod's
// completion index) and the worker count on the trainer node container:
// one worker per GPU on GPU nodes, one per node otherwise.
var XGBoost = plugin.EnvPolicy{
	PolicyName: Name,
	Framework:  "xgboost",
	Reserved:   sets.New(EnvTrackerURI, EnvTrackerPort, EnvTaskID, EnvNumWorker),
	Active:     func(p *trainer.MLPolicy) bool { return p.XGBoost != nil },
	Env: func(info *plugin.Info, trainJob *trainer.TrainJob, ps *plugin.PodSet) []corev1.EnvVar {
		// Upstream sizes by the TrainJob's resourcesPerNode as written, else
		// the runtime's.
		workersPerNode := max(1, plugin.GPUCount(plugin.ResourcesPerNode(info, trainJob)))
		return []corev1.EnvVar{
			{Name: EnvTrackerURI, Value: info.PodHostname(trainJob.Name, ps.Name, 0, 0)},
			{Name: EnvTrackerPort, Value: strconv.Itoa(int(trainer.ContainerTrainerPort))},
			plugin.CompletionIndexEnv(EnvTaskID),
			{Name: EnvNumWorker, Value: strconv.FormatInt(int64(ps.Count)*workersPerNode, 10)},
		}
	},
}
