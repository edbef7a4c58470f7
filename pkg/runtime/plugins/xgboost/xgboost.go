// Package xgboost is the ML policy for XGBoost collective (Rabit) training:
// the DMLC_* variables that point every worker at the tracker on pod 0.
package xgboost

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

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

// reservedEnvNames are set by the plugin; a TrainJob may not set them.
var reservedEnvNames = sets.New(EnvTrackerURI, EnvTrackerPort, EnvTaskID, EnvNumWorker)

// XGBoost implements the validation and ML-policy extension points.
type XGBoost struct{}

var (
	_ plugin.EnforceMLPolicyPlugin  = XGBoost{}
	_ plugin.CustomValidationPlugin = XGBoost{}
)

// Name implements plugin.Plugin.
func (XGBoost) Name() string { return Name }

func active(info *plugin.Info) bool {
	return info != nil && info.MLPolicy != nil && info.MLPolicy.XGBoost != nil
}

// Validate rejects reserved env names in the TrainJob.
func (XGBoost) Validate(info *plugin.Info, _, newJob *trainer.TrainJob) field.ErrorList {
	if !active(info) {
		return nil
	}
	return plugin.ReservedEnvErrors(newJob, reservedEnvNames, "XGBoost")
}

// EnforceMLPolicy sets the tracker address and port, the task id (the pod's
// completion index) and the worker count: one worker per GPU on GPU nodes,
// one per node otherwise.
func (XGBoost) EnforceMLPolicy(info *plugin.Info, trainJob *trainer.TrainJob) error {
	if !active(info) {
		return nil
	}
	plugin.ApplyTrainerCount(info, trainJob)
	if trainJob.Spec.Trainer == nil {
		// Trainer v2.3 sets the DMLC variables and port only for a TrainJob
		// with spec.trainer.
		return nil
	}
	ps, node, err := info.TrainerNode("xgboost")
	if err != nil {
		return err
	}
	// Upstream sizes by the TrainJob's resourcesPerNode as written, else the runtime's.
	workersPerNode := max(1, plugin.GPUCount(plugin.ResourcesPerNode(info, trainJob)))
	plugin.UpsertEnv(&node.Env,
		corev1.EnvVar{Name: EnvTrackerURI, Value: info.PodHostname(trainJob.Name, ps.Name, 0, 0)},
		corev1.EnvVar{Name: EnvTrackerPort, Value: strconv.Itoa(int(trainer.ContainerTrainerPort))},
		plugin.CompletionIndexEnv(EnvTaskID),
		corev1.EnvVar{Name: EnvNumWorker, Value: strconv.FormatInt(int64(ps.Count)*workersPerNode, 10)},
	)
	plugin.UpsertPorts(&node.Ports, corev1.ContainerPort{ContainerPort: trainer.ContainerTrainerPort})
	return nil
}
