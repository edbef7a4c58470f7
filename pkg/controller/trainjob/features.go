package trainjob

import (
	"k8s.io/component-base/featuregate"

	"github.com/gantry-dev/gantry/pkg/runtime/plugins/torch"
)

// ProgressConditions adds Gantry's Created=True and Running conditions to
// a TrainJob's status. Off by default: Trainer v2.3 has neither, and the
// Kubeflow SDK reports a job Running only while its status has no
// condition at all, so with them wait_for_job_status({"Running"}) would
// never return.
const ProgressConditions featuregate.Feature = "TrainJobProgressConditions"

// StatusServer is Trainer v2.3's TrainJobStatus gate (alpha, off, as
// upstream): trainer containers get the progress endpoint's URL, a token
// and its CA, and the manager serves the endpoint (package statusserver),
// writing what training code reports to status.trainerStatus.
const StatusServer featuregate.Feature = "TrainJobStatus"

// ElasticPyTorch lets TrainJobs run on runtimes with
// mlPolicy.torch.elasticPolicy (Gantry's addition; Trainer v2.3 has no
// elastic PyTorch): torchrun in elastic mode, and spec.trainer.numNodes
// changed while the job runs, which resizes the JobSet in place (JobSet's
// ElasticJobSet gate must be on). Alpha, off.
const ElasticPyTorch featuregate.Feature = torch.ElasticGateName

// FeatureGates are the gates the TrainJob controller reads, for the
// workload's gate registration.
func FeatureGates() map[featuregate.Feature]featuregate.FeatureSpec {
	return map[featuregate.Feature]featuregate.FeatureSpec{
		ProgressConditions: {Default: false, PreRelease: featuregate.Alpha},
		StatusServer:       {Default: false, PreRelease: featuregate.Alpha},
		ElasticPyTorch:     {Default: false, PreRelease: featuregate.Alpha},
	}
}
