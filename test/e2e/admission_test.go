//go:build e2e

package e2e

import (
	"fmt"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainerv1alpha1 "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/test/testenv"
)

// The invalid-manifest corpus and the samples, read when the spec tree is
// built so that each file is a table entry of its own. A read error fails
// the "has ..." spec of its container.
var (
	invalidManifests, invalidManifestsErr = testenv.InvalidManifests()
	sampleFiles, sampleFilesErr           = filepath.Glob(filepath.Join(repoRoot, "config", "samples", "*.yaml"))
)

var _ = Describe("Admission", Label(labelManager), func() {
	// Every manifest of test/testdata/invalid, applied with kubectl as a
	// user would, is refused by the API server with the message the file
	// names: most through Gantry's admission webhooks (served by the
	// manager, called by the API server), the rest through the CRD schema.
	// One namespace for the corpus; a refused manifest does not stop the
	// others (ContinueOnFailure).
	Describe("of the invalid-manifest corpus", Ordered, ContinueOnFailure, func() {
		var ns string
		BeforeAll(func(ctx SpecContext) {
			ns = newNamespace(ctx, "admission")
			// The prerequisites the corpus README names.
			ctr := loadSample[trainerv1alpha1.ClusterTrainingRuntime]("trainer_v1alpha1_clustertrainingruntime.yaml")
			if err := k8s.Create(ctx, ctr); err != nil && !apierrors.IsAlreadyExists(err) {
				Expect(err).NotTo(HaveOccurred())
			}
			rt := loadSample[trainerv1alpha1.TrainingRuntime]("trainer_v1alpha1_trainingruntime.yaml")
			rt.Namespace = ns
			createStrict(ctx, rt)
		})

		It("has at least 30 manifests, at least 30 of them for the webhooks", func() {
			Expect(invalidManifestsErr).NotTo(HaveOccurred())
			Expect(len(invalidManifests)).To(BeNumerically(">=", 30), "the invalid-manifest corpus")
			// Each webhook entry below asserts that a webhook denied it, so
			// when they pass this many were rejected by the webhooks.
			byWebhook := 0
			for _, m := range invalidManifests {
				if m.RejectedBy == "webhook" {
					byWebhook++
				}
			}
			AddReportEntry("corpus", fmt.Sprintf("%d manifests, %d of them for Gantry's webhooks", len(invalidManifests), byWebhook))
			Expect(byWebhook).To(BeNumerically(">=", 30), "manifests rejected by the webhooks")
		})

		DescribeTable("is refused", func(ctx SpecContext, m testenv.InvalidManifest) {
			out, err := kubectl(ctx, "apply", "--server-side", "--field-manager=e2e", "-n", ns, "-f", m.Path)
			Expect(err).To(HaveOccurred(), "%s was accepted; want it rejected with %q", m.File, m.Expect)
			Expect(out).To(ContainSubstring(m.Expect), "%s: what kubectl said", m.File)
			if m.RejectedBy != "webhook" {
				return
			}
			// kubectl prints only the field error; the API error itself
			// says which admission webhook denied it. A server-side dry run
			// through the client shows that without storing anything.
			obj := m.Object.DeepCopy()
			if obj.GetKind() != "ClusterTrainingRuntime" {
				obj.SetNamespace(ns)
			}
			err = k8s.Create(ctx, obj, client.DryRunAll)
			Expect(err).To(HaveOccurred(), "%s: expected one of Gantry's admission webhooks to deny it, the API server accepted it", m.File)
			Expect(err.Error()).To(And(ContainSubstring("admission webhook"), ContainSubstring("denied the request")),
				"%s: expected one of Gantry's admission webhooks to deny it", m.File)
		}, corpusEntries())
	})

	// Every sample passes admission (a server-side dry run calls the
	// webhooks and stores nothing).
	Describe("of the samples", Ordered, ContinueOnFailure, func() {
		var ns string
		BeforeAll(func(ctx SpecContext) {
			ns = newNamespace(ctx, "samples")
			// A TrainJob sample may name the namespaced sample runtime.
			rt := loadSample[trainerv1alpha1.TrainingRuntime]("trainer_v1alpha1_trainingruntime.yaml")
			rt.Namespace = ns
			createStrict(ctx, rt)
		})

		It("has samples", func() {
			Expect(sampleFilesErr).NotTo(HaveOccurred())
			Expect(sampleFiles).NotTo(BeEmpty())
		})

		DescribeTable("accepts", func(ctx SpecContext, file string) {
			out, err := kubectl(ctx, "apply", "--dry-run=server", "--server-side", "--force-conflicts", "--field-manager=e2e", "-n", ns, "-f", file)
			Expect(err).NotTo(HaveOccurred(), "sample %s was refused:\n%s", filepath.Base(file), out)
		}, sampleEntries())
	})
})

func corpusEntries() []TableEntry {
	entries := make([]TableEntry, 0, len(invalidManifests))
	for _, m := range invalidManifests {
		entries = append(entries, Entry(fmt.Sprintf("%s (by the %s)", m.File, strings.ReplaceAll(m.RejectedBy, "schema", "CRD schema")), m))
	}
	return entries
}

func sampleEntries() []TableEntry {
	entries := make([]TableEntry, 0, len(sampleFiles))
	for _, f := range sampleFiles {
		entries = append(entries, Entry(filepath.Base(f), f))
	}
	return entries
}
