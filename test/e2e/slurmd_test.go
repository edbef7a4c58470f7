//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	gomegatypes "github.com/onsi/gomega/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/gantry-dev/gantry/pkg/controller/slurm/nodeset"
)

// realSlurm is the Slurm cluster test/slurm/start.sh runs on this machine
// (slurmctld and slurmrestd from Debian's packages, API v0.0.44, in a
// chroot); `make test-e2e` starts it and passes these variables.
//
// The same type serves a Slurm that runs in pods on the real node: there
// commands run in the slurmctld container (kubectl exec), and url, jwtKey
// and root are empty.
type realSlurm struct {
	url    string // GANTRY_SLURM_URL: slurmrestd
	jwtKey []byte // the key in GANTRY_SLURM_JWT_KEY
	root   string // GANTRY_SLURM_ROOT: the chroot with Slurm's commands
	// execIn, when set, is "NAMESPACE/POD/CONTAINER": commands run there.
	execIn string
}

// requireRealSlurm returns the cluster, or skips with the reason there is
// none (`make test-e2e` prints why start.sh could not build it).
func requireRealSlurm() *realSlurm {
	GinkgoHelper()
	url, keyFile, root := os.Getenv("GANTRY_SLURM_URL"), os.Getenv("GANTRY_SLURM_JWT_KEY"), os.Getenv("GANTRY_SLURM_ROOT")
	if url == "" || keyFile == "" || root == "" {
		reason := os.Getenv("GANTRY_SLURM_SKIP_REASON")
		if reason == "" {
			reason = "GANTRY_SLURM_URL, GANTRY_SLURM_JWT_KEY and GANTRY_SLURM_ROOT are not set (test/slurm/start.sh prints them)"
		}
		Skip("needs a real slurmctld and slurmrestd: " + reason)
	}
	key, err := os.ReadFile(keyFile)
	Expect(err).NotTo(HaveOccurred(), "reading the JWT key")
	return &realSlurm{url: url, jwtKey: key, root: root}
}

// run runs a Slurm command in the chroot (or the pod) and returns its
// output.
func (s *realSlurm) run(ctx context.Context, args ...string) (string, error) {
	for attempt := 1; ; attempt++ {
		cmd := exec.CommandContext(ctx, "chroot", append([]string{s.root}, args...)...)
		if s.execIn != "" {
			where := strings.SplitN(s.execIn, "/", 3)
			cmd = exec.CommandContext(ctx, kubectlPath(), append([]string{"-n", where[0], "exec", where[1], "-c", where[2], "--"}, args...)...)
		}
		out, err := cmd.CombinedOutput()
		if err == nil {
			return string(out), nil
		}
		if attempt < 3 && transientSlurmClientError(string(out)) && ctx.Err() == nil {
			// The request never left the client: again, after a moment.
			GinkgoWriter.Printf("%s: %s; trying again\n", strings.Join(args, " "), strings.TrimSpace(string(out)))
			time.Sleep(2 * time.Second)
			continue
		}
		return string(out), fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, out)
	}
}

// transientSlurmClientError says whether a Slurm command failed before its
// request reached slurmctld: the client could not get an auth token (from
// slurmctld's socket, seen once while slurmctld was busy) or not connect.
// Such a command is safe to run again.
func transientSlurmClientError(out string) bool {
	return strings.Contains(out, "failed to create token") ||
		strings.Contains(out, "Unable to contact slurm controller")
}

// must runs a Slurm command that has to succeed.
func (s *realSlurm) must(ctx context.Context, args ...string) string {
	GinkgoHelper()
	out, err := s.run(ctx, args...)
	Expect(err).NotTo(HaveOccurred())
	return out
}

// nodeNames lists the nodes slurmctld knows (sinfo, one line per node).
func (s *realSlurm) nodeNames(g Gomega, ctx context.Context) []string {
	out, err := s.run(ctx, "sinfo", "--noheader", "--Node", "--format=%N")
	g.Expect(err).NotTo(HaveOccurred())
	// A node in two partitions is listed twice.
	var names []string
	for _, l := range strings.Fields(out) {
		if !slices.Contains(names, l) {
			names = append(names, l)
		}
	}
	return names
}

// slurmNodeState is a node as `scontrol show node` reports it.
type slurmNodeState struct {
	State  string // e.g. IDLE+DYNAMIC_NORM, ALLOCATED+DRAIN+DYNAMIC_NORM
	Reason string
}

func (n slurmNodeState) drain() bool { return strings.Contains(n.State, "DRAIN") }

// expectDrained asserts the node drains (or is drained) with a reason
// that satisfies reason.
func expectDrained(g Gomega, st slurmNodeState, reason gomegatypes.GomegaMatcher) {
	GinkgoHelper()
	g.Expect(st.drain()).To(BeTrue(), "state %s", st.State)
	g.Expect(st.Reason).To(reason)
}

// idle: up, no job, not draining (dynamic nodes add +DYNAMIC_NORM).
func (n slurmNodeState) idle() bool {
	return strings.HasPrefix(n.State, "IDLE") && !n.drain() && !strings.Contains(n.State, "NOT_RESPONDING")
}

// node reads one node's state and reason.
func (s *realSlurm) node(g Gomega, ctx context.Context, name string) slurmNodeState {
	st, err := s.nodeState(ctx, name)
	g.Expect(err).NotTo(HaveOccurred())
	return st
}

// nodeState is node without an assertion.
func (s *realSlurm) nodeState(ctx context.Context, name string) (slurmNodeState, error) {
	out, err := s.run(ctx, "scontrol", "--oneliner", "show", "node", name)
	if err != nil {
		return slurmNodeState{}, err
	}
	var st slurmNodeState
	for _, f := range strings.Fields(out) {
		if v, ok := strings.CutPrefix(f, "State="); ok {
			st.State = v
		}
	}
	// Reason=<text> [<user>@<time>] runs to the end of the line.
	if _, after, ok := strings.Cut(out, " Reason="); ok {
		st.Reason = strings.TrimSpace(after)
		if i := strings.LastIndex(st.Reason, " ["); i >= 0 {
			st.Reason = st.Reason[:i]
		}
	}
	return st, nil
}

// fields runs a Slurm command and returns the numeric KEY=VALUE fields of
// its output (slurmd -C, scontrol --oneliner show node).
func (s *realSlurm) fields(g Gomega, ctx context.Context, args ...string) map[string]int {
	out, err := s.run(ctx, args...)
	g.Expect(err).NotTo(HaveOccurred())
	return numericFields(out)
}

func numericFields(out string) map[string]int {
	fields := map[string]int{}
	for _, f := range strings.Fields(out) {
		if k, v, ok := strings.Cut(f, "="); ok {
			if n, err := strconv.Atoi(v); err == nil {
				fields[k] = n
			}
		}
	}
	return fields
}

// allocate holds one node with a job that runs until cancelled, as a user's
// `salloc` would, and returns the job id.
func (s *realSlurm) allocate(ctx context.Context, node string) string {
	GinkgoHelper()
	out := s.must(ctx, "salloc", "--no-shell", "--nodelist="+node, "--nodes=1", "--time=30", "--immediate=30")
	// "salloc: Granted job allocation 12"
	for _, f := range strings.Fields(out) {
		if _, err := strconv.Atoi(f); err == nil {
			return f
		}
	}
	Fail("no job id in salloc's output: " + out)
	return ""
}

// jobState is squeue's state of the job (RUNNING, SUSPENDED, PENDING, ...),
// or "" once squeue no longer lists it.
func (s *realSlurm) jobState(g Gomega, ctx context.Context, id string) string {
	out, err := s.run(ctx, "squeue", "--noheader", "--jobs="+id, "--format=%T")
	if err != nil && strings.Contains(err.Error(), "Invalid job id") {
		return ""
	}
	g.Expect(err).NotTo(HaveOccurred())
	return strings.TrimSpace(out)
}

// jobRunning reports whether the job is still RUNNING.
func (s *realSlurm) jobRunning(g Gomega, ctx context.Context, id string) bool {
	out, err := s.run(ctx, "squeue", "--noheader", "--jobs="+id, "--format=%T")
	if err != nil && strings.Contains(err.Error(), "Invalid job id") {
		return false
	}
	g.Expect(err).NotTo(HaveOccurred())
	return strings.TrimSpace(out) == "RUNNING"
}

// slurmdStandIn plays slurmd for the NodeSet pods of one namespace: a pod
// that kwok reports Running gets a real slurmd process (slurmd -Z, a dynamic
// node named as Gantry expects, nodeset.SlurmNodeName), registering with the real
// slurmctld; a pod that is being deleted or is gone gets what a kubelet
// does: the slurmd container's own preStop command runs (against the real
// slurmctld, with hostname answering the pod's node name), then slurmd is
// stopped. As under a kubelet, a deleted pod stays (terminating) until
// then: the stand-in holds every pod with standInFinalizer, which it
// removes once the pod's slurmd is stopped. kwok alone would remove the
// pod at once, and its replacement, under the same name, could be Ready
// while the old pod's preStop still runs, which no kubelet allows. Nodes therefore answer and can run jobs, which is what
// drain-before-delete needs to be shown, and what the preStop leaves
// behind in Slurm is what Gantry really ships.
type slurmdStandIn struct {
	slurm *realSlurm
	ns    string

	mu      sync.Mutex
	byPod   map[types.UID]slurmd // by pod UID
	started int
	// held are node names whose slurmd is not started again until
	// released, so a spec can see what a pod's going left in Slurm.
	held map[string]bool
	// leftByPreStop is a held node's state in Slurm right after its pod's
	// preStop ran: the operator may change it as soon as the returning
	// pod is Ready, which kwok makes it at once.
	leftByPreStop map[string]slurmNodeState
	// early are pods whose slurmd runs although the API server does not
	// show them Running (registerEarly).
	early map[types.UID]bool
	// ports are the slurmd port of each Slurm node name. slurmctld keeps a
	// node's port in its record, which outlives the pod (the preStop keeps
	// it): a pod that comes back under the same name listens on the same
	// port, as every slurmd in a cluster listens on 6818.
	ports map[string]int
}

// standInFinalizer holds a deleted slurmd pod until the stand-in has run
// its preStop and stopped its slurmd, as a kubelet holds a terminating pod.
const standInFinalizer = "e2e.gantry.dev/slurmd-stand-in"

// registerEarly starts the slurmd of a pod that is not Running, as a
// kubelet whose status report lags behind its containers would leave it:
// Slurm lists the node, and can run jobs there, while the API server still
// shows the pod Pending. The slurmd runs until the pod is deleted.
func (sd *slurmdStandIn) registerEarly(ctx context.Context, podName string) {
	GinkgoHelper()
	pod := &corev1.Pod{}
	Expect(k8s.Get(ctx, types.NamespacedName{Namespace: sd.ns, Name: podName}, pod)).To(Succeed())
	sd.mu.Lock()
	defer sd.mu.Unlock()
	d, err := sd.start(ctx, pod, nodeset.SlurmNodeName(pod))
	Expect(err).NotTo(HaveOccurred())
	d.pod, d.preStop = pod.Name, preStopScript(pod)
	sd.byPod[pod.UID] = d
	sd.early[pod.UID] = true
}

// hold keeps a node's slurmd from starting again until release.
func (sd *slurmdStandIn) hold(node string) {
	sd.mu.Lock()
	defer sd.mu.Unlock()
	sd.held[node] = true
	delete(sd.leftByPreStop, node)
}

// afterPreStop is the held node's state right after its pod's preStop ran;
// false until it has.
func (sd *slurmdStandIn) afterPreStop(node string) (slurmNodeState, bool) {
	sd.mu.Lock()
	defer sd.mu.Unlock()
	st, ok := sd.leftByPreStop[node]
	return st, ok
}

// release lets a held node's slurmd start again.
func (sd *slurmdStandIn) release(node string) {
	sd.mu.Lock()
	defer sd.mu.Unlock()
	delete(sd.held, node)
}

// rename makes the pod of node register under alias instead, as a slurmd
// that took another hostname would (e.g. its FQDN). The alias registers
// before node leaves Slurm, so Slurm never lists neither. restore undoes it
// in the same order.
func (sd *slurmdStandIn) rename(ctx context.Context, node, alias string) {
	GinkgoHelper()
	sd.swap(ctx, node, alias)
}

// restore gives the pod renamed to alias its own node name back.
func (sd *slurmdStandIn) restore(ctx context.Context, node, alias string) {
	GinkgoHelper()
	sd.swap(ctx, alias, node)
}

// swap replaces the slurmd registered as from by one registering as to,
// for the same pod, without running the pod's preStop; from leaves Slurm
// once to is up.
func (sd *slurmdStandIn) swap(ctx context.Context, from, to string) {
	GinkgoHelper()
	sd.mu.Lock()
	defer sd.mu.Unlock()
	for uid, d := range sd.byPod {
		if d.node != from {
			continue
		}
		pod := &corev1.Pod{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: sd.ns, Name: d.pod}, pod)).To(Succeed())
		Expect(pod.UID).To(Equal(uid))
		d.preStop = ""
		sd.stop(ctx, d)
		started, err := sd.start(ctx, pod, to)
		Expect(err).NotTo(HaveOccurred())
		started.pod, started.preStop = pod.Name, preStopScript(pod)
		sd.byPod[uid] = started
		sd.slurm.must(ctx, "scontrol", "delete", "nodename="+from)
		return
	}
	Fail("no slurmd runs as node " + from)
}

// slurmd is one running slurmd: its node, process and the pod's preStop
// script (sh -c), captured when it started.
type slurmd struct {
	pod     string
	node    string
	pid     int
	preStop string
}

// startSlurmdStandIn polls the namespace's slurmd pods until the spec
// container ends; DeferCleanup stops every slurmd it started.
func startSlurmdStandIn(ctx context.Context, s *realSlurm, ns string) *slurmdStandIn {
	GinkgoHelper()
	sd := &slurmdStandIn{slurm: s, ns: ns, byPod: map[types.UID]slurmd{}, held: map[string]bool{}, leftByPreStop: map[string]slurmNodeState{},
		early: map[types.UID]bool{}, ports: map[string]int{}}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		for ctx.Err() == nil {
			if err := sd.sync(ctx); err != nil && ctx.Err() == nil {
				GinkgoWriter.Printf("slurmd stand-in: %v\n", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(300 * time.Millisecond):
			}
		}
	}()
	DeferCleanup(func(ctx SpecContext) {
		cancel()
		<-done
		sd.mu.Lock()
		defer sd.mu.Unlock()
		for uid, d := range sd.byPod {
			sd.stop(ctx, d)
			delete(sd.byPod, uid)
		}
		// Nothing holds the namespace's pods once the stand-in is gone.
		pods := &corev1.PodList{}
		Expect(k8s.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
		for i := range pods.Items {
			Expect(sd.setFinalizer(ctx, &pods.Items[i], false)).To(Succeed())
		}
	})
	return sd
}

func (sd *slurmdStandIn) sync(ctx context.Context) error {
	pods := &corev1.PodList{}
	if err := k8s.List(ctx, pods, client.InNamespace(sd.ns), client.MatchingLabels{"app.kubernetes.io/name": "slurmd"}); err != nil {
		return err
	}
	sd.mu.Lock()
	defer sd.mu.Unlock()
	live := map[types.UID]*corev1.Pod{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp == nil && (p.Status.Phase == corev1.PodRunning || sd.early[p.UID]) {
			live[p.UID] = p
		}
	}
	var errs []error
	for i := range pods.Items {
		if p := &pods.Items[i]; p.DeletionTimestamp == nil {
			errs = append(errs, sd.setFinalizer(ctx, p, true))
		}
	}
	// Stop first: a pod replaced under the same name must lose its old
	// slurmd (and node) before the new one registers.
	for uid, d := range sd.byPod {
		if live[uid] == nil {
			sd.stop(ctx, d)
			delete(sd.byPod, uid)
			delete(sd.early, uid)
		}
	}
	// A deleted pod whose slurmd is stopped (or never ran) may go.
	for i := range pods.Items {
		if p := &pods.Items[i]; p.DeletionTimestamp != nil && sd.byPod[p.UID].pid == 0 {
			errs = append(errs, sd.setFinalizer(ctx, p, false))
		}
	}
	for uid, p := range live {
		if _, ok := sd.byPod[uid]; ok || sd.held[nodeset.SlurmNodeName(p)] {
			continue
		}
		d, err := sd.start(ctx, p, nodeset.SlurmNodeName(p))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		d.pod, d.preStop = p.Name, preStopScript(p)
		sd.byPod[uid] = d
		sd.started++
	}
	return errors.Join(errs...)
}

// setFinalizer adds or removes standInFinalizer on the pod; a pod that is
// gone needs nothing.
func (sd *slurmdStandIn) setFinalizer(ctx context.Context, p *corev1.Pod, hold bool) error {
	if controllerutil.ContainsFinalizer(p, standInFinalizer) == hold {
		return nil
	}
	orig := p.DeepCopy()
	if hold {
		controllerutil.AddFinalizer(p, standInFinalizer)
	} else {
		controllerutil.RemoveFinalizer(p, standInFinalizer)
	}
	// Optimistic: a pod changed meanwhile is read again on the next sync.
	err := k8s.Patch(ctx, p, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	if apierrors.IsConflict(err) {
		return nil
	}
	return client.IgnoreNotFound(err)
}

// start runs the pod's dynamic-node slurmd, registering as name, on a free
// port and waits until slurmctld lists the node as up.
func (sd *slurmdStandIn) start(ctx context.Context, p *corev1.Pod, name string) (slurmd, error) {
	port, ok := sd.ports[name]
	if !ok {
		var err error
		if port, err = freeTCPPort(); err != nil {
			return slurmd{}, err
		}
		sd.ports[name] = port
	}
	conf, err := sd.entrypointConf(ctx, p)
	if err != nil {
		return slurmd{}, fmt.Errorf("slurmd %s: %w", name, err)
	}
	// slurmd daemonizes; its pid file is /run/slurmd-<name>.pid in the root.
	pidFile := filepath.Join(sd.slurm.root, "run", "slurmd-"+name+".pid")
	_ = os.Remove(pidFile)
	// Every slurmd here shares one host, so each gets a port of its own.
	if _, err := sd.slurm.run(ctx, "slurmd", "-Z", "-N", name, "--conf", fmt.Sprintf("%s Port=%d", conf, port)); err != nil {
		return slurmd{}, err
	}
	d := slurmd{node: name}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if d.pid == 0 {
			if data, err := os.ReadFile(pidFile); err == nil {
				d.pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
			}
		}
		if out, err := sd.slurm.run(ctx, "sinfo", "--noheader", "--Node", "--nodes="+name, "--format=%T"); err == nil && d.pid != 0 &&
			strings.TrimSpace(out) != "" && !strings.Contains(out, "unk") && !strings.Contains(out, "down") {
			return d, nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	sd.stop(ctx, d)
	return slurmd{}, fmt.Errorf("slurmd %s did not register with slurmctld within 30s", name)
}

// entrypointConf is the node configuration (slurmd --conf) the pod's slurmd
// runs with, made as Slinky's slurmd image entrypoint makes it: the
// container's own --conf argument, plus CoreSpecCount and MemSpecLimit so
// that slurmd keeps, of the host `slurmd -C` describes, only the pod's
// POD_CPUS (in whole cores) and POD_MEMORY (MiB). What Gantry puts in the
// pod is therefore what sizes the Slurm node. (POD_TOPOLOGY is not used:
// this Slurm has no topology plugin.)
func (sd *slurmdStandIn) entrypointConf(ctx context.Context, p *corev1.Pod) (string, error) {
	var c *corev1.Container
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name == "slurmd" {
			c = &p.Spec.Containers[i]
		}
	}
	if c == nil {
		return "", errors.New("the pod has no slurmd container")
	}
	var items []string
	for i, a := range c.Args {
		if a == "--conf" && i+1 < len(c.Args) {
			// The image passes its arguments through a shell: 'A=1 B=2'.
			items = append(items, strings.Fields(strings.Trim(c.Args[i+1], `'"`))...)
		}
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	podCPUs, _ := strconv.Atoi(env["POD_CPUS"])
	podMemory, _ := strconv.Atoi(env["POD_MEMORY"])
	if podCPUs == 0 && podMemory == 0 {
		return strings.Join(items, " "), nil
	}
	host, err := sd.slurm.run(ctx, "slurmd", "-C")
	if err != nil {
		return "", err
	}
	hw := numericFields(host)
	if podCPUs > 0 && hw["ThreadsPerCore"] > 0 {
		cores := hw["Boards"] * hw["SocketsPerBoard"] * hw["CoresPerSocket"]
		if spec := cores - podCPUs/hw["ThreadsPerCore"]; spec > 0 {
			items = append(items, fmt.Sprintf("CoreSpecCount=%d", spec))
		}
	}
	if podMemory > 0 {
		if spec := hw["RealMemory"] - podMemory; spec > 0 {
			items = append(items, fmt.Sprintf("MemSpecLimit=%d", spec))
		}
	}
	return strings.Join(items, " "), nil
}

// stop runs the pod's preStop against the real slurmctld and then ends
// the node's slurmd, as a kubelet would; a pod without a preStop leaves its
// node to slurmctld. A preStop that fails is logged, not hidden.
func (sd *slurmdStandIn) stop(ctx context.Context, d slurmd) {
	// For a held node the spec reads what the preStop left in Slurm, so the
	// slurmd is frozen first (a kubelet would leave it running): once the
	// preStop's DOWN has ended the node's job, the live slurmd's epilog and
	// registration can lift the DOWN (ReturnToService=2) before the state is
	// read. That is slurmd's doing, not the preStop's; CI saw the node IDLE
	// right after the preStop once.
	frozen := sd.held[d.node] && d.pid > 0 && syscall.Kill(d.pid, syscall.SIGSTOP) == nil
	if d.preStop != "" {
		// A shell function shadows the hostname command: inside the pod,
		// hostname is the Slurm node's name.
		script := fmt.Sprintf("hostname() { echo %s; }; %s", d.node, d.preStop)
		if out, err := sd.slurm.run(ctx, "/usr/bin/sh", "-c", script); err != nil {
			GinkgoWriter.Printf("slurmd stand-in: preStop of %s: %v %s\n", d.node, err, out)
		}
		if sd.held[d.node] {
			if st, err := sd.slurm.nodeState(ctx, d.node); err == nil {
				sd.leftByPreStop[d.node] = st
			} else {
				GinkgoWriter.Printf("slurmd stand-in: state of %s after its preStop: %v\n", d.node, err)
			}
		}
	}
	if frozen {
		_ = syscall.Kill(d.pid, syscall.SIGKILL)
		return
	}
	if d.pid > 0 {
		_ = syscall.Kill(d.pid, syscall.SIGTERM)
		for i := 0; i < 50 && syscall.Kill(d.pid, 0) == nil; i++ {
			time.Sleep(100 * time.Millisecond)
		}
		_ = syscall.Kill(d.pid, syscall.SIGKILL)
	}
}

// preStopScript is the slurmd container's preStop, when it is `sh -c SCRIPT`.
func preStopScript(p *corev1.Pod) string {
	GinkgoHelper()
	for _, c := range p.Spec.Containers {
		if c.Name != "slurmd" || c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Exec == nil {
			continue
		}
		cmd := c.Lifecycle.PreStop.Exec.Command
		Expect(cmd).To(HaveLen(3), "slurmd's preStop is sh -c SCRIPT")
		Expect(cmd[1]).To(Equal("-c"))
		return cmd[2]
	}
	return ""
}

// nodes are the Slurm node names of the pods with a running slurmd.
func (sd *slurmdStandIn) nodes() []string {
	sd.mu.Lock()
	defer sd.mu.Unlock()
	out := make([]string, 0, len(sd.byPod))
	for _, d := range sd.byPod {
		out = append(out, d.node)
	}
	return out
}

func freeTCPPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
