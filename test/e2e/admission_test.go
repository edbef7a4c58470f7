//go:build e2e

package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainerv1alpha1 "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/test/testenv"
)

// kubectlPath is the kubectl the tests run: $KUBECTL, the repo's bin/, or PATH.
func kubectlPath(t *testing.T) string {
	t.Helper()
	if k := os.Getenv("KUBECTL"); k != "" {
		return k
	}
	if k, err := filepath.Abs(filepath.Join("..", "..", "bin", "kubectl")); err == nil {
		if _, err := os.Stat(k); err == nil {
			return k
		}
	}
	k, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("no kubectl: set KUBECTL, run `make tools`, or put kubectl on PATH")
	}
	return k
}

func kubectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), kubectlPath(t), args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// TestAdmissionRejectsInvalidManifests applies every manifest of
// test/testdata/invalid with kubectl, as a user would, and expects the
// API server to refuse each with the message the file names: most through
// Gantry's admission webhooks (served by the manager, called by the API
// server), the rest through the CRD schema.
func TestAdmissionRejectsInvalidManifests(t *testing.T) {
	t.Parallel()
	g := newGomega(t)
	ctx := t.Context()
	ns := newNamespace(t, "admission")

	// The prerequisites the corpus README names.
	ctr := loadSample[trainerv1alpha1.ClusterTrainingRuntime](t, "trainer_v1alpha1_clustertrainingruntime.yaml")
	if err := k8s.Create(ctx, ctr); err != nil && !apierrors.IsAlreadyExists(err) {
		g.Expect(err).NotTo(HaveOccurred())
	}
	rt := loadSample[trainerv1alpha1.TrainingRuntime](t, "trainer_v1alpha1_trainingruntime.yaml")
	rt.Namespace = ns
	createStrict(g, ctx, rt)

	corpus, err := testenv.InvalidManifests()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(len(corpus)).To(BeNumerically(">=", 30), "the invalid-manifest corpus")
	byWebhook := 0
	for _, m := range corpus {
		out, err := kubectl(t, "apply", "--server-side", "--field-manager=e2e", "-n", ns, "-f", m.Path)
		if err == nil {
			t.Errorf("%s was accepted; want it rejected with %q", m.File, m.Expect)
			continue
		}
		if !strings.Contains(out, m.Expect) {
			t.Errorf("%s: kubectl said\n%s\nwant it to contain %q", m.File, out, m.Expect)
			continue
		}
		if m.RejectedBy == "webhook" {
			// kubectl prints only the field error; the API error itself
			// says which admission webhook denied it. A server-side dry run
			// through the client shows that without storing anything.
			obj := m.Object.DeepCopy()
			if obj.GetKind() != "ClusterTrainingRuntime" {
				obj.SetNamespace(ns)
			}
			err = k8s.Create(ctx, obj, client.DryRunAll)
			if err == nil || !strings.Contains(err.Error(), "admission webhook") || !strings.Contains(err.Error(), "denied the request") {
				t.Errorf("%s: expected one of Gantry's admission webhooks to deny it, the API server said: %v", m.File, err)
				continue
			}
			byWebhook++
		}
	}
	t.Logf("%d manifests rejected, %d of them by Gantry's webhooks", len(corpus), byWebhook)
	g.Expect(byWebhook).To(BeNumerically(">=", 30), "manifests rejected by the webhooks")
}

// TestAdmissionAcceptsSamples: every sample passes admission (server-side
// dry run calls the webhooks and stores nothing).
func TestAdmissionAcceptsSamples(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "samples")
	g := newGomega(t)
	ctx := t.Context()
	// A TrainJob sample may name the namespaced sample runtime.
	rt := loadSample[trainerv1alpha1.TrainingRuntime](t, "trainer_v1alpha1_trainingruntime.yaml")
	rt.Namespace = ns
	createStrict(g, ctx, rt)
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "samples", "*.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files).NotTo(BeEmpty())
	for _, f := range files {
		out, err := kubectl(t, "apply", "--dry-run=server", "--server-side", "--force-conflicts", "--field-manager=e2e", "-n", ns, "-f", f)
		if err != nil {
			t.Errorf("sample %s was refused:\n%s", filepath.Base(f), out)
		}
	}
}
