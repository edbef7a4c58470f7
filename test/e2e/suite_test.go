//go:build e2e

package e2e

// The Gantry e2e suite in Ginkgo v2. `make test-e2e` runs it with the
// ginkgo CLI (bin/ginkgo) in parallel processes; see docs/development.md.
//
// Writing a spec (e.g. a new file slurm_real_test.go):
//
//   - Put it in a Describe that carries exactly one workload label:
//     Label(labelRay), Label(labelTrainJob), Label(labelSlurm),
//     Label(labelKueue) (workloads queued by real Kueue) or
//     Label(labelManager) (admission, the invalid-manifest corpus, releases,
//     the manager's endpoints). `make test-e2e E2E_LABELS=slurm` selects by
//     label; a spec with none or two of them fails the suite (see the
//     ReportAfterSuite below).
//   - Take the spec's context: It("...", func(ctx SpecContext) {...}). Pass
//     it to API calls and to Eventually(ctx, ...), so an interrupt or the
//     suite's --timeout stops the polling. Eventually's defaults are the
//     suite's: convergeTimeout, polling every pollInterval.
//   - Specs run in parallel processes. Give each its own namespace:
//     ns := newNamespace(ctx, "prefix"). A spec that must run alone (it
//     changes something cluster-wide) gets the Serial decorator.
//   - A spec that needs kwok's simulated kubelet starts with
//     requireSimulatedKubelet(ctx), which skips it on real nodes (kind).
//   - Inside Eventually(ctx, func(g Gomega) {...}) assert with g.Expect (a
//     plain Expect there fails at once instead of polling). Helpers that take
//     a g Gomega get Default when called outside Eventually.
//   - Cases read from files become DescribeTable entries built with the tree
//     (admission_test.go, the shipped runtimes in trainjob_test.go); cases
//     that share one setup go in an Ordered, ContinueOnFailure container
//     whose BeforeAll makes the namespace.
//
// Helpers (framework_test.go unless noted); they call GinkgoHelper, so a
// failure points at the spec's line:
//
//	newNamespace(ctx, prefix) string    namespace for the spec, deleted (and
//	                                    waited for) by DeferCleanup; on failure
//	                                    its pods, Gantry objects and events, and
//	                                    the manager log lines naming it, are
//	                                    attached to the report first
//	loadSample[T](file) *T              config/samples/<file>, decoded strictly
//	createStrict(ctx, obj)              Create with strict field validation
//	update(ctx, obj, mutate)            read-modify-write, retrying conflicts
//	expectGone(g, ctx, obj)             inside Eventually: obj is NotFound
//	listPods(g, ctx, ns, labels)        pods by label
//	expectScheduledRunningReady(g, pod) bound, Running and Ready
//	expectControlledBy(g, obj, owner)   controller ref with blockOwnerDeletion
//	eventsFor(g, ctx, obj)              core/v1 Events of obj
//	conditionTrue(conditions, type)     metav1 condition lookup
//	kubectl(ctx, args...)               runs kubectl ($KUBECTL, bin/, PATH)
//	requireSimulatedKubelet(ctx)        Skip unless the nodes are kwok's
//	requireRealNode(ctx), onRealNode    realnode_test.go: the real node
//	                                    (hack/realnode.sh; label real), and
//	                                    a pod spec steered onto it
//	addKwokNode(ctx, node)              a kwok-run Node (labels, taints,
//	                                    capacity of your own), deleted after
//	managerLogTail(n)                   the manager log's last n lines, if any
//	httpGet(ctx, url)                   manager_test.go
//	createMinimalRayCluster(ctx, ns),   raycluster_test.go
//	expectClusterPodsReady, expectClusterReady
//	torchRuntimeWithPodAnnotations,     trainjob_test.go: runtimes steered by
//	trainJobOn, expectTrainJobCondition kwok's stage annotations
//
// Failure output: every failed spec gets report entries (printed with the
// failure and stored in the JUnit report) with the state of its namespaces
// and the last managerLogLines lines of the manager log. The log is
// $GANTRY_MANAGER_LOG, else .run/manager.log of the local control plane
// when that is the cluster under test; without one it is left out.

import (
	"cmp"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	. "github.com/onsi/gomega"
)

// The workload labels. Every spec carries exactly one of them.
const (
	labelRay      = "ray"
	labelTrainJob = "trainjob"
	labelSlurm    = "slurm"
	labelManager  = "manager"
	// labelKueue: RayClusters and TrainJobs queued by real Kueue.
	labelKueue = "kueue"
)

var workloadLabels = []string{labelRay, labelTrainJob, labelSlurm, labelManager, labelKueue}

// managerLogLines is how much of the manager log a failed spec shows.
const managerLogLines = 60

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Gantry e2e")
}

// Process 1 checks the cluster once (Gantry's and JobSet's CRDs served, a
// Ready node); failing there (rather than skipping) keeps a broken setup
// from passing as "nothing to test". Every process then builds its own
// clients.
var _ = SynchronizedBeforeSuite(func(ctx SpecContext) {
	failOn(newClients())
	failOn(checkCluster(ctx))
	// Watched for the whole run, checked after it (secrets_test.go).
	failOn(seen.start())
	// Scrapes the manager for the whole run, checked after it
	// (chartmetrics_test.go).
	startSuitePrometheus(ctx)
}, func() {
	if k8s == nil {
		failOn(newClients())
	}
	SetDefaultEventuallyTimeout(convergeTimeout)
	SetDefaultEventuallyPollingInterval(pollInterval)
	// Without this, Eventually(ctx, ...) ignores the default timeout and
	// polls until the spec's context ends: a failing spec would hang until
	// the suite's --timeout.
	EnforceDefaultTimeoutsWhenUsingContexts()

	// Covers every spec of this process: the manager's view of a failure.
	DeferOnFailure(func() {
		if text, source := managerLogTail(managerLogLines); source != "" {
			AddReportEntry(fmt.Sprintf("manager log: last %d lines of %s", managerLogLines, source), text)
		}
	})
})

// failOn fails with err's message alone (no struct dump): the setup errors
// say what to do.
func failOn(err error) {
	GinkgoHelper()
	if err != nil {
		Fail("e2e: " + err.Error())
	}
}

// failureMessageLimit bounds each failure's message in the suite summary.
const failureMessageLimit = 600

// failureLines names each failed spec with its location and the start of
// its failure message, for the summary after the suite: where only the end
// of a run's output is kept (CI), that says why a spec failed, not only
// where; the full report (junit, the spec's report entries) has the rest.
func failureLines(report Report) string {
	var b strings.Builder
	for _, spec := range report.SpecReports {
		if !spec.State.Is(types.SpecStateFailureStates) {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("e2e failures (the start of each message):\n")
		}
		msg := strings.Join(strings.Fields(spec.Failure.Message), " ")
		if len(msg) > failureMessageLimit {
			msg = msg[:failureMessageLimit] + " [...]"
		}
		loc := spec.Failure.Location
		fmt.Fprintf(&b, "  %s %s (%s:%d, %s): %s\n", spec.State, spec.FullText(),
			filepath.Base(loc.FileName), loc.LineNumber, spec.Failure.FailureNodeType, msg)
	}
	return b.String()
}

// After all processes: check the workload labels and print the time spent
// per label (the sum of the specs' run times, cleanup included; specs run
// in parallel, so the sums exceed the wall time).
var _ = ReportAfterSuite("e2e duration per label", func(report Report) {
	type total struct {
		specs, ran int
		time       time.Duration
	}
	totals := map[string]*total{}
	var unlabelled []string
	for _, spec := range report.SpecReports {
		if spec.LeafNodeType != types.NodeTypeIt {
			continue
		}
		var workload []string
		for _, l := range spec.Labels() {
			if slices.Contains(workloadLabels, l) {
				workload = append(workload, l)
			}
		}
		if len(workload) != 1 {
			unlabelled = append(unlabelled, fmt.Sprintf("%s (%s:%d) has labels %v",
				spec.FullText(), spec.LeafNodeLocation.FileName, spec.LeafNodeLocation.LineNumber, spec.Labels()))
			continue
		}
		t := totals[workload[0]]
		if t == nil {
			t = &total{}
			totals[workload[0]] = t
		}
		t.specs++
		if !spec.State.Is(types.SpecStateSkipped | types.SpecStatePending) {
			t.ran++
			t.time += spec.RunTime
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "e2e duration per label (sum of spec run times; suite wall time %s):\n", report.RunTime.Round(time.Second))
	for _, label := range slices.SortedFunc(maps.Keys(totals), cmp.Compare) {
		t := totals[label]
		fmt.Fprintf(&b, "  %-9s %3d specs run of %3d  %s\n", label, t.ran, t.specs, t.time.Round(time.Second))
	}
	b.WriteString(failureLines(report))
	fmt.Print(b.String())
	if len(unlabelled) > 0 {
		Fail(fmt.Sprintf("every e2e spec carries exactly one of the labels %v:\n%s",
			workloadLabels, strings.Join(unlabelled, "\n")))
	}
})
