package kuberay

import (
	"encoding/json"
	"testing"

	krayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray/utils/dashboardclient"

	"github.com/gantry-dev/gantry/pkg/controller/ray/rayjob"
)

// TestHTTPModeRequestMatchesKubeRays compares, for every RayJob of the
// submitter corpus, the body an HTTPMode submission sends: Gantry's
// rayjob.JobRequest against KubeRay's dashboardclient.ConvertRayJobToReq
// (unchanged from v1.6.2 to v1.7.0), as JSON.
func TestHTTPModeRequestMatchesKubeRays(t *testing.T) {
	cases := append(handCorpus(), sampleCorpus(t)...)
	compared := 0
	for _, c := range cases {
		job := c.job.DeepCopy()
		if job.Status.JobId == "" {
			job.Status.JobId = job.Name + "-abcde"
		}
		kreq, kerr := dashboardclient.ConvertRayJobToReq(kuberayOf[krayv1.RayJob](t, job))
		req, gerr := rayjob.JobRequest(job)
		if (kerr != nil) != (gerr != nil) {
			t.Errorf("%s: errors differ: KubeRay %v, Gantry %v", c.name, kerr, gerr)
			continue
		}
		if kerr != nil {
			continue
		}
		if got, want := normalJSON(t, req), normalJSON(t, kreq); got != want {
			t.Errorf("%s: the submission differs\n Gantry  %s\n KubeRay %s", c.name, got, want)
		}
		compared++
	}
	if compared < 40 {
		t.Fatalf("only %d RayJobs compared", compared)
	}
	t.Logf("%d HTTPMode submissions match KubeRay's", compared)
}

// normalJSON is v as JSON with its keys sorted.
func normalJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var generic any
	if err := json.Unmarshal(raw, &generic); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(generic)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
