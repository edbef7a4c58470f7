package kuberay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"testing"

	krv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	krutils "github.com/ray-project/kuberay/ray-operator/controllers/ray/utils"
	krfeatures "github.com/ray-project/kuberay/ray-operator/pkg/features"
	"k8s.io/utils/ptr"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/validation"
	raytesting "github.com/gantry-dev/gantry/test/wrappers/ray"
)

// The RayJob validation oracle: every row of Gantry's RayJob rule table
// (raytesting.RayJobRuleCases, refused and accepted rows alike) and every
// RayJob sample of KubeRay v1.7.0, each with the RayJobDeletionPolicy gate
// on and off, goes through Gantry's validation.ValidateRayJob and through
// KubeRay v1.6.2's utils.ValidateRayJobMetadata, ValidateRayJobSpec and
// ValidateRayJobStatus (in that order, as its reconciler runs them). The
// verdicts, accept or the layer that refuses, must agree, except for the
// rows below.
//
// v1.6.2 to v1.7.0 (git diff v1.6.2 v1.7.0 --
// ray-operator/controllers/ray/utils/validation.go) changed no RayJob rule.
// It added RayCluster rules, which a RayJob's rayClusterSpec is held to:
//   - worker group priority, GCS fault tolerance backend and storage,
//     historyServerOptions, networkPolicy and tlsOptions: fields Gantry's
//     ray.io/v1 API does not have (KubeRay v1.6's), so no RayJob Gantry
//     admits can carry them, and no row can differ;
//   - autoscalerOptions.env must not set KUBERAY_GEN_AUTOSCALER_START_CMD:
//     Gantry's RayCluster rules (KubeRay v1.6's) do not have it yet, so
//     Gantry agrees with v1.6.2 and would differ from v1.7.0 there; no row
//     tests it (docs/raycluster.md, "RayJob validation").
// The rest of the diff is RayCronJob's and RayService's.

// verdictException is a row where Gantry's verdict deliberately differs
// from KubeRay's.
type verdictException struct {
	gantry, kuberay string // the refusing layer, "" for accepted
	reason          string
}

var verdictExceptions = map[string]verdictException{
	"duplicate worker group names": {gantry: "Spec", kuberay: "",
		reason: "Gantry's RayCluster spec rules include unique worker group names; KubeRay checks them only in its " +
			"RayCluster webhook, so its RayJob is admitted and fails later, when the RayCluster it creates is refused"},
	"worker group without minReplicas and maxReplicas": {gantry: "", kuberay: "Spec",
		reason: "the CRD defaults minReplicas to 0 and maxReplicas to 2147483647, so the API server never hands over a " +
			"RayJob without them; Gantry's RayCluster rules rely on that, KubeRay's check again"},
}

// oracleCase is one input of the oracle.
type oracleCase struct {
	name    string
	job     *rayv1.RayJob
	gateOff bool
}

func oracleCorpus(t *testing.T) []oracleCase {
	var cases []oracleCase
	for _, tc := range raytesting.RayJobRuleCases() {
		cases = append(cases, oracleCase{name: tc.Name, job: tc.Job, gateOff: tc.DeletionPolicyGateOff})
		cases = append(cases, oracleCase{name: tc.Name, job: tc.Job, gateOff: !tc.DeletionPolicyGateOff})
	}
	samples := raytesting.SampleRayJobs(t)
	if len(samples) != 25 {
		t.Fatalf("%d RayJob samples, want KubeRay v1.7.0's 25", len(samples))
	}
	for _, s := range samples {
		job, err := s.Decode()
		if err != nil {
			t.Fatal(err)
		}
		withCRDDefaults(job)
		for _, off := range []bool{false, true} {
			cases = append(cases, oracleCase{name: "sample " + s.File, job: job, gateOff: off})
		}
	}
	return cases
}

// withCRDDefaults applies the CRD defaults validation reads, as the API
// server does before anyone sees a RayJob (the samples leave some out).
func withCRDDefaults(job *rayv1.RayJob) {
	if job.Spec.SubmissionMode == "" {
		job.Spec.SubmissionMode = rayv1.K8sJobMode
	}
	if job.Spec.BackoffLimit == nil {
		job.Spec.BackoffLimit = ptr.To[int32](0)
	}
	if cs := job.Spec.RayClusterSpec; cs != nil {
		for i := range cs.WorkerGroupSpecs {
			g := &cs.WorkerGroupSpecs[i]
			if g.MinReplicas == nil {
				g.MinReplicas = ptr.To[int32](0)
			}
			if g.MaxReplicas == nil {
				g.MaxReplicas = ptr.To[int32](math.MaxInt32)
			}
		}
	}
}

// kuberayRayJob converts Gantry's RayJob to KubeRay's through JSON,
// refusing a field KubeRay's type does not have: a silently dropped field
// would let the two judge different RayJobs.
func kuberayRayJob(t *testing.T, job *rayv1.RayJob) *krv1.RayJob {
	t.Helper()
	raw, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	out := &krv1.RayJob{}
	if err := dec.Decode(out); err != nil {
		t.Fatalf("converting to KubeRay's RayJob: %v", err)
	}
	return out
}

// kuberayVerdict runs KubeRay's checks in its reconciler's order.
func kuberayVerdict(job *krv1.RayJob) (string, error) {
	if err := krutils.ValidateRayJobMetadata(job.ObjectMeta); err != nil {
		return "Metadata", err
	}
	if err := krutils.ValidateRayJobSpec(job); err != nil {
		return "Spec", err
	}
	if err := krutils.ValidateRayJobStatus(job); err != nil {
		return "Status", err
	}
	return "", nil
}

// gantryOptions are Gantry's options with the RayJobDeletionPolicy gate on
// or off, as validation.RayJobValidationOptionsFromGates derives them.
func gantryOptions(on bool) validation.RayJobValidationOptions {
	return validation.RayJobValidationOptions{
		Cluster:               validation.SpecValidationOptions{AllowWorkerGroupSuspend: on},
		AllowDeletionStrategy: on,
	}
}

func TestRayJobValidationMatchesKubeRays(t *testing.T) {
	seenException := map[string]bool{}
	agreed, refused := 0, 0
	for _, c := range oracleCorpus(t) {
		t.Run(fmt.Sprintf("%s/gate=%v", c.name, !c.gateOff), func(t *testing.T) {
			krfeatures.SetFeatureGateDuringTest(t, krfeatures.RayJobDeletionPolicy, !c.gateOff)
			opts := gantryOptions(!c.gateOff)

			kr := kuberayRayJob(t, c.job)
			want, krErr := kuberayVerdict(kr)
			got := ""
			gErr := validation.ValidateRayJob(c.job.DeepCopy(), opts)
			if gErr != nil {
				got = string(gErr.Layer)
			}
			if exc, ok := verdictExceptions[c.name]; ok {
				seenException[c.name] = true
				if got != exc.gantry || want != exc.kuberay {
					t.Errorf("listed as a deliberate difference (Gantry %q, KubeRay %q: %s), but Gantry says %q (%v) and KubeRay %q (%v)",
						exc.gantry, exc.kuberay, exc.reason, got, gErr, want, krErr)
				}
				return
			}
			if got != want {
				t.Errorf("Gantry: %q (%v)\nKubeRay v1.6.2: %q (%v)", got, gErr, want, krErr)
				return
			}
			agreed++
			if got != "" {
				refused++
			}
		})
	}
	for name := range verdictExceptions {
		if !seenException[name] {
			t.Errorf("exception %q matches no row of the corpus", name)
		}
	}
	t.Logf("%d verdicts agree (%d refusals), %d rows are listed differences", agreed, refused, len(seenException))
}
