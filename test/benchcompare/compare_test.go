//go:build benchcompare

// Package benchcompare runs Gantry and the upstream operator it replaces
// side by side, alternately, on fresh local control planes with the same
// client rate limit, and prints one table of medians per pairing. Run it
// with `make bench-compare` (docs/benchmarks.md).
package benchcompare

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	trainerv1 "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	slurmimages "github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	"github.com/gantry-dev/gantry/pkg/framework/podcond"
	"github.com/gantry-dev/gantry/test/bench"
	"github.com/gantry-dev/gantry/test/testenv"
	raywrappers "github.com/gantry-dev/gantry/test/wrappers/ray"
	slinkywrappers "github.com/gantry-dev/gantry/test/wrappers/slinky"
	trainerwrappers "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, rayv1.AddToScheme,
		trainerv1.AddToScheme, jobsetv1alpha2.AddToScheme, slinkyv1beta1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

const namespace = "bench"

// pairing is a workload measured under two operators.
type pairing struct {
	name     string
	unit     string // what writes are counted per: "cluster", "job", "pod"
	upstream operator
	gantry   operator
	// podsPer is the Pods one object makes; it sizes the simulated nodes,
	// podsPerNode to a node (0: 100).
	podsPer, podsPerNode int
	// jobSet runs the real JobSet controller beside the operator (not
	// counted: both sides need it the same).
	jobSet bool
	// setup creates what the objects need (not counted), before the
	// operator starts; nil for none.
	setup func(ctx context.Context, c client.Client) error
	// prepare starts what the run needs beside the cluster (a stand-in
	// Ray dashboard), stopped when the run ends; nil for none.
	prepare func(t *testing.T, cl *cluster)
	// objects is how many objects a run of size n creates; nil means n.
	objects func(n int) int
	// create makes object i of a run of size n.
	create func(i, n int) client.Object
	// phases are what the run waits for, in order, each named by the
	// moment it marks ("all pods", "all ready").
	phases []phase
}

// nodes is how many simulated nodes a run of size n gets: enough for its
// Pods at podsPerNode to a node, and two more.
func (p pairing) nodes(n int) int {
	perNode := p.podsPerNode
	if perNode == 0 {
		perNode = 100
	}
	return (n*p.podsPer+perNode-1)/perNode + 2
}

type phase struct {
	name string
	done func(ctx context.Context, c client.Client, n int) (bool, error)
	// begin, when set, changes the objects as the phase starts (a
	// scale-in); its time counts from the run's start like every phase.
	begin func(ctx context.Context, c client.Client, n int) error
}

func pairings() []pairing {
	return []pairing{
		{
			name: "ray", unit: "cluster", upstream: kuberay(), gantry: gantry("raycluster"), podsPer: 4,
			create: func(i, _ int) client.Object {
				rc := raywrappers.MakeRayCluster(fmt.Sprintf("rc-%05d", i), namespace).WorkerGroup("cpu", 3).Obj()
				rc.UID = ""
				return rc
			},
			phases: []phase{
				{name: "all pods", done: func(ctx context.Context, c client.Client, n int) (bool, error) {
					return atLeast(ctx, c, corev1.SchemeGroupVersion.WithKind("PodList"), 4*n, client.HasLabels{rayv1.RayClusterLabelKey})
				}},
				{name: "all ready", done: func(ctx context.Context, c client.Client, n int) (bool, error) {
					var list rayv1.RayClusterList
					if err := c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
						return false, err
					}
					ready := 0
					for _, rc := range list.Items {
						if rc.Status.State == rayv1.Ready {
							ready++
						}
					}
					return ready >= n, nil
				}},
			},
		},
		rayJobPairing(),
		{
			name: "trainjob", unit: "job", upstream: trainer(), gantry: gantry("trainjob"), podsPer: 2, jobSet: true,
			create: func(i, _ int) client.Object {
				tj := trainerwrappers.MakeTrainJob(fmt.Sprintf("tj-%05d", i), namespace).
					RuntimeRef(trainerv1.ClusterTrainingRuntimeKind, "torch-distributed").NumNodes(2).Obj()
				tj.UID = ""
				return tj
			},
			phases: []phase{
				{name: "all jobsets", done: func(ctx context.Context, c client.Client, n int) (bool, error) {
					return atLeast(ctx, c, jobsetv1alpha2.SchemeGroupVersion.WithKind("JobSetList"), n)
				}},
				{name: "all complete", done: func(ctx context.Context, c client.Client, n int) (bool, error) {
					var list trainerv1.TrainJobList
					if err := c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
						return false, err
					}
					done := 0
					for _, tj := range list.Items {
						if meta.IsStatusConditionTrue(tj.Status.Conditions, trainerv1.TrainJobComplete) {
							done++
						}
					}
					return done >= n, nil
				}},
			},
		},
		{
			// One NodeSet of n pods through its whole life: scale-out,
			// every pod ready, then scale-in to zero. The Controller has no
			// RestApi, so neither operator can reach Slurm, and both count
			// nodes as drained (upstream's rule, and Gantry's for a
			// Controller without a RestApi).
			// One pod to a node: Slinky v1.1.0 always keeps a NodeSet's
			// pods on separate nodes (pod anti-affinity; it has no
			// oversubscribeNode to turn that off), and Gantry, as v1.2.1,
			// does so unless oversubscribeNode is set, which is left
			// unset here so both schedule alike.
			name: "nodeset", unit: "pod", upstream: slinky(), gantry: gantry("slurm"), podsPer: 1, podsPerNode: 1,
			setup: func(ctx context.Context, c client.Client) error {
				keys := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "keys", Namespace: namespace},
					Data: map[string][]byte{"slurm.key": make([]byte, 1024), "jwt.key": make([]byte, 32)}}
				if err := c.Create(ctx, keys); err != nil {
					return err
				}
				// jwtHs256KeyRef: deprecated for jwtKeyRef, which v1.0.0
				// did not have; v1.1.0, v1.2.1 and Gantry take both.
				ctl := slinkywrappers.MakeController("slurm", namespace).
					SlurmKey("keys", "slurm.key").JwtHs256Key("keys", "jwt.key").Obj()
				// The images of Slinky's chart, on both sides.
				img := slurmimages.DefaultImages()
				ctl.Spec.Slurmctld.Image, ctl.Spec.Reconfigure.Image, ctl.Spec.LogFile.Image = img.Slurmctld, img.Slurmctld, img.Logfile
				// No state claim: the control plane has no volumes, and
				// Slinky v1.1.0 gives its claim template no access mode or
				// size, which the API server refuses.
				ctl.Spec.Persistence.Enabled = ptr.To(false)
				return c.Create(ctx, ctl)
			},
			objects: func(int) int { return 1 },
			create: func(_, n int) client.Object {
				// The namespace is spelled out: Slinky v1.1.0 does not
				// default it to the NodeSet's.
				ns := slinkywrappers.MakeNodeSet("cpu", namespace, "slurm").ControllerNamespace(namespace).Obj()
				ns.Spec.Replicas = ptr.To(int32(n))
				img := slurmimages.DefaultImages()
				ns.Spec.Slurmd.Image, ns.Spec.LogFile.Image = img.Slurmd, img.Logfile
				return ns
			},
			phases: []phase{
				{name: "all pods", done: func(ctx context.Context, c client.Client, n int) (bool, error) {
					pods, err := nodeSetPods(ctx, c)
					return err == nil && len(pods) >= n, err
				}},
				{name: "all ready", done: func(ctx context.Context, c client.Client, n int) (bool, error) {
					pods, err := nodeSetPods(ctx, c)
					ready := 0
					for _, p := range pods {
						if podcond.IsReady(&p) {
							ready++
						}
					}
					return err == nil && ready >= n, err
				}},
				{name: "scaled in", begin: func(ctx context.Context, c client.Client, _ int) error {
					patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":0}}`))
					return c.Patch(ctx, &slinkyv1beta1.NodeSet{ObjectMeta: metav1.ObjectMeta{Name: "cpu", Namespace: namespace}}, patch)
				}, done: func(ctx context.Context, c client.Client, _ int) (bool, error) {
					pods, err := nodeSetPods(ctx, c)
					return err == nil && len(pods) == 0, err
				}},
			},
		},
	}
}

// nodeSetPods are the namespace's pods a NodeSet controls.
func nodeSetPods(ctx context.Context, c client.Client) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(list.Items, func(p corev1.Pod) bool {
		ref := metav1.GetControllerOf(&p)
		return ref == nil || ref.Kind != slinkyv1beta1.NodeSetKind
	}), nil
}

// atLeast reports whether the namespace holds at least n objects of the
// list kind that opts select (read as metadata only).
func atLeast(ctx context.Context, c client.Client, listKind schema.GroupVersionKind, n int, opts ...client.ListOption) (bool, error) {
	var list metav1.PartialObjectMetadataList
	list.SetGroupVersionKind(listKind)
	err := c.List(ctx, &list, append(opts, client.InNamespace(namespace))...)
	return err == nil && len(list.Items) >= n, err
}

// TestCompare runs each selected pairing (BENCH_COMPARE, default all:
// "ray,rayjob,trainjob,nodeset") for BENCH_COMPARE_ROUNDS rounds (default 3) of upstream
// then Gantry, each on a fresh cluster, with GANTRY_BENCH_N objects
// (default 100), and prints the table. BENCH_COMPARE_ONLY=gantry (or
// upstream) runs one side only, for sizes where both would not fit in one
// sitting; the other side's column then says "no run".
// BENCH_COMPARE_PHASES=k stops each run after its first k phases (e.g. 1:
// until every JobSet exists, not through every job's whole life); its
// writes are then those of that part of the life.
func TestCompare(t *testing.T) {
	n := bench.N(100)
	rounds := bench.EnvPositive("BENCH_COMPARE_ROUNDS", 3)
	selected := strings.Split(os.Getenv("BENCH_COMPARE"), ",")
	only := os.Getenv("BENCH_COMPARE_ONLY")
	if only != "" && only != "gantry" && only != "upstream" && only != "floor" {
		t.Fatalf("BENCH_COMPARE_ONLY=%q: want gantry, upstream or floor", only)
	}
	phases := bench.EnvPositive("BENCH_COMPARE_PHASES", 0)
	var tables []string
	for _, p := range pairings() {
		if selected[0] != "" && !slices.Contains(selected, p.name) {
			continue
		}
		if phases > 0 && phases < len(p.phases) {
			p.phases = p.phases[:phases]
		}
		if only == "floor" {
			for round := 1; round <= rounds; round++ {
				t.Run(fmt.Sprintf("%s/floor/%d", p.name, round), func(t *testing.T) {
					runFloor(t, p, n, fmt.Sprintf("bc-floor-%d", round))
				})
			}
			continue
		}
		results := map[string][]sample{}
		for round := 1; round <= rounds; round++ {
			for _, op := range sides(p) {
				t.Run(fmt.Sprintf("%s/%s/%d", p.name, op.name, round), func(t *testing.T) {
					s := runOnce(t, p, op, n, fmt.Sprintf("bc-%s-%d", strings.ToLower(op.name), round))
					results[op.name] = append(results[op.name], s)
					t.Logf("%s round %d: %s", op.name, round, s)
				})
			}
		}
		tables = append(tables, table(p, n, rounds, results))
	}
	out := strings.Join(tables, "\n")
	fmt.Println(out)
	dir := filepath.Join(testenv.RepoRoot(), "_artifacts")
	if err := os.MkdirAll(dir, 0o755); err == nil {
		_ = os.WriteFile(filepath.Join(dir, "bench-compare.md"), []byte(out), 0o644)
	}
}

// sides are the operators of p that BENCH_COMPARE_ONLY selects: both,
// upstream first, when it is unset.
func sides(p pairing) []operator {
	switch os.Getenv("BENCH_COMPARE_ONLY") {
	case "gantry":
		return []operator{p.gantry}
	case "upstream":
		return []operator{p.upstream}
	}
	return []operator{p.upstream, p.gantry}
}

// sample is one run's figures.
type sample struct {
	phases []time.Duration
	// submitted is how long the harness took to create the objects, one
	// after another as a script would: every later phase includes it, and
	// the load the operator puts on the API server meanwhile slows it.
	submitted time.Duration
	writes    float64 // per object
	reads     float64 // GETs and LISTs per object (watches not counted)
	proxied   float64 // calls through services/proxy per object (a Ray dashboard)
	rssMiB    float64 // the operator's VmHWM
	idleMiB   float64 // its VmHWM once ready, before the first object
	cpuSecond float64
	// controlPlaneCPU is the CPU seconds each control-plane process
	// (controlPlane) used from the first create until the operator was
	// quiet.
	controlPlaneCPU map[string]float64
	writesTotal     int64
	// writesWhole is every write the operator sent since it started: its
	// start-up (CRDs, webhook certificates, runtimes it installs) and idle
	// time included, as its rest_client_requests_total counts them.
	writesWhole int64
	limitFloor  float64 // clientLimitFloor, seconds
	reconcileFigures
}

// clientLimitFloor is the shortest time in which the operator's client
// could have sent its writes at the client limit: a controller-runtime
// client (every operator here) has one REST client, and so one token
// bucket of QPS, per resource type (rest.Config sets no shared
// RateLimiter), and the event recorder another; the most-written resource
// bounds it. byVerb counts writes by "VERB resource[/subresource]".
func clientLimitFloor(byVerb map[string]int) float64 {
	perResource := map[string]int{}
	for key, n := range byVerb {
		_, resource, _ := strings.Cut(key, " ")
		resource, _, _ = strings.Cut(resource, "/")
		perResource[resource] += n
	}
	most := 0
	for _, n := range perResource {
		most = max(most, n)
	}
	return float64(max(most-burst, 0)) / qps
}

// formatCPU renders control-plane CPU seconds in controlPlane's order.
func formatCPU(cpu map[string]float64) string {
	parts := make([]string, 0, len(controlPlane))
	for _, name := range controlPlane {
		if v, ok := cpu[name]; ok {
			parts = append(parts, fmt.Sprintf("%s %.1f", name, v))
		}
	}
	return strings.Join(parts, ", ")
}

func (s sample) String() string {
	return fmt.Sprintf("phases %v, %.2f writes, %.2f reads and %.2f proxied calls per object, peak RSS %.0f MiB (%.0f MiB idle), %.1f CPU s, "+
		"%.0f reconciles (%.0f errors, %.0f requeues), reconcile p50/p99 %.1f/%.1f ms, %.1f s reconciling, mean queue wait %.2f s",
		s.phases, s.writes, s.reads, s.proxied, s.rssMiB, s.idleMiB, s.cpuSecond, s.reconciles, s.errors, s.requeues,
		s.reconcileP50*1000, s.reconcileP99*1000, s.reconcileSeconds, s.queueMean)
}

func runOnce(t *testing.T, p pairing, op operator, n int, clusterName string) sample {
	ctx := context.Background()
	cl := startCluster(t, clusterName, p.nodes(n))
	op.install(t, cl)
	if p.jobSet {
		startJobSet(t, cl)
	}
	if err := cl.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		t.Fatal(err)
	}
	if p.setup != nil {
		if err := p.setup(ctx, cl.c); err != nil {
			t.Fatal(err)
		}
	}
	if p.prepare != nil {
		p.prepare(t, cl)
	}
	counter := &testenv.WriteCounter{}
	proxy, err := counter.Proxy(cl.cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	// BENCH_COMPARE_HEAP_PROFILE=true keeps heap profiles of each
	// operator that can serve one, taken when it is idle (-0) and as each
	// phase holds (the first is near the peak of a burst of creations), in
	// _artifacts/ (go tool pprof -sample_index=inuse_space; GODEBUG=
	// memprofilerate=1 in the environment samples every allocation).
	// BENCH_COMPARE_CPU_PROFILE=<seconds> keeps a CPU profile of each
	// such operator over the first seconds of the run.
	var extra []string
	pprofAddr, heapProfiles := "", os.Getenv("BENCH_COMPARE_HEAP_PROFILE") == "true"
	cpuProfile := bench.EnvPositive("BENCH_COMPARE_CPU_PROFILE", 0)
	if (heapProfiles || cpuProfile > 0) && op.pprofFlag != "" {
		pprofAddr = testenv.FreeAddr(t)
		extra = append(extra, op.pprofFlag+"="+pprofAddr)
	}
	proc, metricsAddr := op.start(t, proxy.Kubeconfig, extra...)

	settle(t, op.name, proc)
	idle := proc.PeakRSSMiB()
	anon, file := proc.RSSMiB()
	t.Logf("%s idle: RSS %.1f MiB anonymous, %.1f MiB of files", op.name, anon, file)
	logGoMemory(t, op.name+" idle", metricsAddr)
	if heapProfiles && pprofAddr != "" {
		saveHeapProfile(t, pprofAddr, clusterName+"-0")
	}
	// BENCH_COMPARE_APISERVER_PROFILE=<seconds> keeps a CPU profile of the
	// API server over the first seconds of the run, in _artifacts/.
	waitProfile := func() {}
	if secs := bench.EnvPositive("BENCH_COMPARE_APISERVER_PROFILE", 0); secs > 0 {
		waitProfile = cl.profileAPIServer(t, secs, filepath.Join(artifacts(t), "apiserver-"+clusterName+".pb.gz"))
	}
	// BENCH_COMPARE_SCHEDULER_PROFILE=<seconds>: the same of kube-scheduler.
	if secs := schedulerProfileSeconds(); secs > 0 {
		waitScheduler := cl.profileScheduler(t, secs, filepath.Join(artifacts(t), "scheduler-"+clusterName+".pb.gz"))
		defer waitScheduler()
	}
	if cpuProfile > 0 && pprofAddr != "" {
		waitOperatorProfile := saveCPUProfile(t, pprofAddr, cpuProfile, filepath.Join(artifacts(t), "cpu-"+clusterName+".pb.gz"))
		defer waitOperatorProfile()
	}
	endAccount := cl.accountControlPlane(t)
	before, readsBefore, proxiedBefore := counter.Total(), proxy.Reads.Total(), proxy.Proxied.Total()
	start := time.Now()
	objects := n
	if p.objects != nil {
		objects = p.objects(n)
	}
	for i := range objects {
		if err := cl.c.Create(ctx, p.create(i, n)); err != nil {
			t.Fatal(err)
		}
	}
	s := sample{idleMiB: idle, submitted: time.Since(start)}
	for _, ph := range p.phases {
		if ph.begin != nil {
			if err := ph.begin(ctx, cl.c, n); err != nil {
				t.Fatalf("%s: %s: %v", op.name, ph.name, err)
			}
		}
		err := bench.Poll(pollEvery(n*p.podsPer), 90*time.Minute, func() (bool, error) {
			if proc.Exited() {
				return false, fmt.Errorf("%s exited (log: %s)", op.name, proc.Log)
			}
			return ph.done(ctx, cl.c, n)
		})
		if err != nil {
			t.Fatalf("%s: %s: %v", op.name, ph.name, err)
		}
		s.phases = append(s.phases, time.Since(start))
		if len(s.phases) == 1 && os.Getenv("BENCH_COMPARE_SAVE_PODS") == "true" {
			savePods(ctx, t, cl.c, filepath.Join(artifacts(t), "pods-"+clusterName+".yaml"))
		}
		if heapProfiles && pprofAddr != "" {
			saveHeapProfile(t, pprofAddr, fmt.Sprintf("%s-%d", clusterName, len(s.phases)))
		}
	}
	// Trailing writes (the last status, events) belong to the run.
	counter.WaitQuiet(3*time.Second, 2*time.Minute)
	s.controlPlaneCPU = endAccount()
	t.Logf("control plane CPU seconds over the run: %s", formatCPU(s.controlPlaneCPU))
	s.writesTotal = counter.Total() - before
	s.writesWhole = counter.Total()
	s.limitFloor = clientLimitFloor(counter.ByVerb())
	waitProfile()
	s.writes = float64(counter.Total()-before) / float64(n)
	s.reads = float64(proxy.Reads.Total()-readsBefore) / float64(n)
	s.proxied = float64(proxy.Proxied.Total()-proxiedBefore) / float64(n)
	s.rssMiB = proc.PeakRSSMiB()
	anon, file = proc.RSSMiB()
	t.Logf("%s at the end: RSS %.1f MiB anonymous, %.1f MiB of files", op.name, anon, file)
	logGoMemory(t, op.name+" at the end", metricsAddr)
	s.cpuSecond = proc.CPUSeconds()
	if s.reconcileFigures, err = scrapeReconciles(metricsAddr); err != nil {
		t.Errorf("%s: its metrics: %v", op.name, err)
	}
	bench.LogWrites(t, counter, n, p.unit)
	logEventReasons(ctx, t, cl.c, n, p.unit)
	bench.LogWrites(t, &proxy.Reads, n, p.unit)
	if s.proxied > 0 {
		bench.LogWrites(t, &proxy.Proxied, n, p.unit)
	}
	return s
}

// savePods writes the namespace's Pods as stored to path
// (BENCH_COMPARE_SAVE_PODS=true saves them as the first phase ends, to
// compare what two operators made).
func savePods(ctx context.Context, t *testing.T, c client.Client, path string) {
	t.Helper()
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(namespace)); err != nil {
		t.Errorf("pods: %v", err)
		return
	}
	raw, err := yaml.Marshal(pods)
	if err == nil {
		err = os.WriteFile(path, raw, 0o644)
	}
	if err != nil {
		t.Errorf("pods: %v", err)
		return
	}
	t.Logf("pods as stored: %s", path)
}

// logEventReasons logs the run's Events by reason and the kind of object
// they are about: which of the writes they are.
func logEventReasons(ctx context.Context, t *testing.T, c client.Client, n int, unit string) {
	t.Helper()
	var events corev1.EventList
	if err := c.List(ctx, &events, client.InNamespace(namespace)); err != nil {
		t.Logf("events: %v", err)
		return
	}
	counts := map[string]int32{}
	// Warnings say why: each distinct message, with how often it came.
	warnings := map[string]int32{}
	for _, e := range events.Items {
		counts[fmt.Sprintf("event %s %s", e.InvolvedObject.Kind, e.Reason)] += max(e.Count, 1)
		if e.Type == corev1.EventTypeWarning {
			warnings[fmt.Sprintf("%s %s: %s", e.InvolvedObject.Kind, e.Reason, e.Message)] += max(e.Count, 1)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		t.Logf("%-40s %6d (%.2f per %s)", k, counts[k], float64(counts[k])/float64(n), unit)
	}
	for i, k := range slices.Sorted(maps.Keys(warnings)) {
		if i == 20 {
			t.Logf("… and %d more distinct warnings", len(warnings)-i)
			break
		}
		t.Logf("warning %6d× %s", warnings[k], k)
	}
}

// settle waits until proc's start is over: /readyz can answer before an
// operator's controllers have started their watches (controller-runtime
// starts them after the probes, and the first lists fill the caches), and
// an idle figure taken then would count that start against the objects.
// The start is over when the peak RSS has not moved for 5 s; it waits at
// most a minute.
func settle(t *testing.T, name string, proc *testenv.ManagerProcess) {
	t.Helper()
	const still = 5 * time.Second
	start, peak, since := time.Now(), proc.PeakRSSMiB(), time.Now()
	for time.Since(since) < still && time.Since(start) < time.Minute {
		time.Sleep(250 * time.Millisecond)
		if p := proc.PeakRSSMiB(); p != peak {
			peak, since = p, time.Now()
		}
	}
	t.Logf("%s settled %.1f s after ready", name, time.Since(start).Seconds()-still.Seconds())
}

// logGoMemory logs goMemory of the operator serving metrics at addr.
func logGoMemory(t *testing.T, when, addr string) {
	t.Helper()
	if mem, err := goMemory(addr); err != nil {
		t.Logf("%s: no Go memory figures: %v", when, err)
	} else {
		t.Logf("%s: %s", when, mem)
	}
}

// pollEvery is how often a phase is checked in a run of pods Pods: every
// 250 ms, and less often past 1,000 Pods, so that the harness lists about
// as many Pods a second at any size. Listing 40,000 Pods four times a
// second took most of the API server's time from both operators.
func pollEvery(pods int) time.Duration {
	return 250 * time.Millisecond * time.Duration(max(1, pods/1000))
}

// startJobSet runs the real JobSet controller (hack/jobset-local.sh, as
// `make run` does) against cl, stopped when the test ends.
func startJobSet(t *testing.T, cl *cluster) {
	t.Helper()
	env := []string{"KUBECONFIG=" + cl.kubeconfig, "JOBSET_STATE_DIR=" + filepath.Join(cl.workdir, "jobset"),
		"JOBSET_WEBHOOK_PORT=" + port(testenv.FreeAddr(t)), "JOBSET_METRICS_ADDR=0", "JOBSET_PROBE_ADDR=" + testenv.FreeAddr(t)}
	script := filepath.Join(testenv.RepoRoot(), "hack", "jobset-local.sh")
	run := func(arg string) {
		cmd := exec.Command(script, arg)
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("jobset-local.sh %s: %v\n%s", arg, err, out)
		}
	}
	run("up")
	t.Cleanup(func() { run("down") })
}

// saveCPUProfile starts a CPU profile over the next seconds of the Go
// process serving pprof at addr, saved to path; the function it returns
// waits for it and reports a failure on t.
func saveCPUProfile(t *testing.T, addr string, seconds int, path string) (wait func()) {
	return saveProfile(t, http.DefaultClient, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, seconds), path)
}

// saveProfile fetches a pprof profile from url with hc in the background,
// saved to path; the function it returns waits for it and reports a
// failure on t.
func saveProfile(t *testing.T, hc *http.Client, url, path string) (wait func()) {
	done := make(chan error, 1)
	go func() {
		resp, err := hc.Get(url)
		if err != nil {
			done <- err
			return
		}
		defer func() { _ = resp.Body.Close() }()
		raw, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("%s", resp.Status)
		}
		if err == nil {
			err = os.WriteFile(path, raw, 0o644)
		}
		done <- err
	}()
	return func() {
		if err := <-done; err != nil {
			t.Errorf("profile %s: %v", url, err)
		} else {
			t.Logf("CPU profile: %s (go tool pprof -top <binary> %s)", path, path)
		}
	}
}

// artifacts is _artifacts/, created if missing.
func artifacts(t *testing.T) string {
	dir := filepath.Join(testenv.RepoRoot(), "_artifacts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func port(addr string) string { return addr[strings.LastIndexByte(addr, ':')+1:] }

// saveHeapProfile writes the heap profile served at addr to
// _artifacts/heap-<name>.pb.gz.
func saveHeapProfile(t *testing.T, addr, name string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/debug/pprof/heap")
	if err != nil {
		t.Errorf("heap profile: %v", err)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("heap profile: %s %v", resp.Status, err)
		return
	}
	path := filepath.Join(artifacts(t), "heap-"+name+".pb.gz")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Errorf("heap profile: %v", err)
		return
	}
	t.Logf("heap profile: %s", path)
}
