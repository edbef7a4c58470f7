package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	"github.com/gantry-dev/gantry/pkg/controller/ray/rayjob"
	"github.com/gantry-dev/gantry/pkg/ray/dashboard"
	"github.com/gantry-dev/gantry/pkg/ray/dashboard/standin"
)

// The annotations kwok's stages read on a Pod (hack/kwok/stages.yaml),
// read here on a RayJob for its simulated Ray job.
const (
	annotationRunSeconds = "gantry.dev/kwok-run-seconds"
	annotationExitCode   = "gantry.dev/kwok-exit-code"
	// annotationSubmitterExitCode on a head Pod ends its SidecarMode
	// submitter container with that exit code.
	annotationSubmitterExitCode = "gantry.dev/kwok-submitter-exit-code"
	// kwokNodeAnnotation marks the Nodes kwok simulates.
	kwokNodeAnnotation = "kwok.x-k8s.io/node"
	// defaultRunFor is how long a simulated Ray job runs: kwok's Pods run
	// 3 to 4 s.
	defaultRunFor = 3 * time.Second
	// dashboardPort is Ray's default, for a head without a port named
	// "dashboard".
	dashboardPort = 8265
)

// network makes a Pod's IP an address of this machine and listens on it.
type network interface {
	addLocal(ip string) error
	delLocal(ip string) error
}

// head is the stand-in for one head Pod: its dashboard and Serve proxy.
type head struct {
	ip      string
	uid     types.UID
	jobs    *standin.Jobs
	servers []*http.Server
	// dashboardURL and serveURL are where the dashboard and the Serve
	// proxy listen.
	dashboardURL, serveURL string
}

func (h *head) stop() {
	for _, s := range h.servers {
		_ = s.Close()
	}
	h.jobs.Shutdown()
}

// standIns reconciles Ray Pods on kwok nodes.
type standIns struct {
	c   client.Client
	net network
	log logr.Logger
	// listenHost, when set, replaces the Pod's IP in listen addresses
	// (tests listen on loopback, with port 0).
	listenHost string

	mu    sync.Mutex
	heads map[types.NamespacedName]*head
	// submitted records, per Pod, the UID whose submission was made.
	submitted map[types.NamespacedName]types.UID
}

func newStandIns(c client.Client, n network, log logr.Logger) *standIns {
	return &standIns{c: c, net: n, log: log, heads: map[types.NamespacedName]*head{}, submitted: map[types.NamespacedName]types.UID{}}
}

// rayPod selects head Pods and RayJob submitter Pods.
func rayPod(o client.Object) bool {
	l := o.GetLabels()
	return l[rayv1.RayNodeTypeLabelKey] == string(rayv1.HeadNode) ||
		(l[rayv1.RayOriginatedFromCRDLabelKey] == rayv1.RayJobKind && l[rayv1.RayNodeTypeLabelKey] == "")
}

func (s *standIns) setupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("kwokray").
		For(&corev1.Pod{}, builder.WithPredicates(predicate.NewPredicateFuncs(rayPod))).
		Complete(s)
}

func isHead(p *corev1.Pod) bool {
	return p.Labels[rayv1.RayNodeTypeLabelKey] == string(rayv1.HeadNode)
}

func running(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != ""
}

// onKwokNode says whether the Pod is bound to a Node kwok simulates.
func (s *standIns) onKwokNode(ctx context.Context, p *corev1.Pod) (bool, error) {
	if p.Spec.NodeName == "" {
		return false, nil
	}
	node := &corev1.Node{}
	if err := s.c.Get(ctx, types.NamespacedName{Name: p.Spec.NodeName}, node); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return node.Annotations[kwokNodeAnnotation] == "fake", nil
}

func (s *standIns) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	p := &corev1.Pod{}
	if err := s.c.Get(ctx, req.NamespacedName, p); err != nil {
		if apierrors.IsNotFound(err) {
			s.stopHead(req.NamespacedName)
			s.mu.Lock()
			delete(s.submitted, req.NamespacedName)
			s.mu.Unlock()
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	simulated, err := s.onKwokNode(ctx, p)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !simulated || !running(p) {
		if isHead(p) {
			s.stopHead(req.NamespacedName)
		}
		return ctrl.Result{}, nil
	}
	if isHead(p) {
		if err := s.startHead(p); err != nil {
			return ctrl.Result{}, err
		}
		for _, c := range p.Spec.Containers {
			if c.Name == rayv1.SubmitterContainerName {
				job, err := s.rayJobOfHead(ctx, p)
				if job == nil || err != nil {
					return ctrl.Result{}, err
				}
				return s.submitFor(ctx, p, p, job)
			}
		}
		return ctrl.Result{}, nil
	}
	// A K8sJobMode submitter: its RayJob's cluster's head.
	job, err := s.rayJobOf(ctx, p)
	if job == nil || err != nil {
		return ctrl.Result{}, err
	}
	var heads corev1.PodList
	if err := s.c.List(ctx, &heads, client.InNamespace(p.Namespace), client.MatchingLabels{
		rayv1.RayClusterLabelKey: job.Status.RayClusterName, rayv1.RayNodeTypeLabelKey: string(rayv1.HeadNode),
	}); err != nil {
		return ctrl.Result{}, err
	}
	if job.Status.RayClusterName == "" || len(heads.Items) != 1 {
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	return s.submitFor(ctx, p, &heads.Items[0], job)
}

// rayJobOf is the RayJob that submitter Pod p belongs to (its
// ray.io/originated-from-cr-name label), or nil when it is gone.
func (s *standIns) rayJobOf(ctx context.Context, p *corev1.Pod) (*rayv1.RayJob, error) {
	job := &rayv1.RayJob{}
	if err := s.c.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: p.Labels[rayv1.RayOriginatedFromCRNameLabelKey]}, job); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return job, nil
}

// rayJobOfHead is the RayJob whose cluster head p is: a head Pod carries
// only its cluster's name (ray.io/cluster); the cluster names the RayJob
// that made it (ray.io/originated-from-crd and -cr-name). Nil when there
// is none.
func (s *standIns) rayJobOfHead(ctx context.Context, p *corev1.Pod) (*rayv1.RayJob, error) {
	cluster := &rayv1.RayCluster{}
	if err := s.c.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: p.Labels[rayv1.RayClusterLabelKey]}, cluster); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if cluster.Labels[rayv1.RayOriginatedFromCRDLabelKey] != rayv1.RayJobKind {
		return nil, nil
	}
	job := &rayv1.RayJob{}
	if err := s.c.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: cluster.Labels[rayv1.RayOriginatedFromCRNameLabelKey]}, job); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return job, nil
}

// startHead serves the stand-in for head p, once per Pod UID and IP.
func (s *standIns) startHead(p *corev1.Pod) error {
	key := client.ObjectKeyFromObject(p)
	s.mu.Lock()
	h := s.heads[key]
	s.mu.Unlock()
	if h != nil && h.uid == p.UID && h.ip == p.Status.PodIP {
		return nil
	}
	s.stopHead(key)

	ip := p.Status.PodIP
	if err := s.net.addLocal(ip); err != nil {
		return err
	}
	h = &head{ip: ip, uid: p.UID, jobs: standin.NewSimulatedJobs(s.plan(p.Namespace), s.jobLog(key))}
	dashPort, servePort := dashboardPort, podspec.DefaultServingPort
	if len(p.Spec.Containers) > 0 {
		for _, port := range p.Spec.Containers[0].Ports {
			switch port.Name {
			case podspec.DashboardPortName:
				dashPort = int(port.ContainerPort)
			case podspec.ServingPortName:
				servePort = int(port.ContainerPort)
			}
		}
	}
	serve := http.NewServeMux()
	serve.HandleFunc(rayv1.RayServeProxyHealthPath, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(standin.HealthReply))
	})
	for i, l := range []struct {
		port    int
		handler http.Handler
	}{{dashPort, standin.NewDashboard(h.jobs, "", "").Handler()}, {servePort, serve}} {
		host := ip
		if s.listenHost != "" {
			host, l.port = s.listenHost, 0
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(l.port)))
		if err != nil {
			h.stop()
			_ = s.net.delLocal(ip)
			return fmt.Errorf("head %s (%s): %w", key, ip, err)
		}
		if i == 0 {
			h.dashboardURL = "http://" + ln.Addr().String()
		} else {
			h.serveURL = "http://" + ln.Addr().String()
		}
		srv := &http.Server{Handler: l.handler, ReadHeaderTimeout: 10 * time.Second}
		h.servers = append(h.servers, srv)
		go func() { _ = srv.Serve(ln) }()
	}
	s.mu.Lock()
	s.heads[key] = h
	s.mu.Unlock()
	s.log.Info("serving a stand-in dashboard", "head", key, "dashboard", h.dashboardURL)
	return nil
}

// stopHead stops the stand-in of the head Pod key, if any, and removes its
// route unless another head now has that IP.
func (s *standIns) stopHead(key types.NamespacedName) {
	s.mu.Lock()
	h := s.heads[key]
	delete(s.heads, key)
	inUse := false
	if h != nil {
		for _, o := range s.heads {
			inUse = inUse || o.ip == h.ip
		}
	}
	s.mu.Unlock()
	if h == nil {
		return
	}
	h.stop()
	if !inUse {
		if err := s.net.delLocal(h.ip); err != nil {
			s.log.Error(err, "removing the route", "head", key)
		}
	}
	s.log.Info("stopped the stand-in dashboard", "head", key)
}

func (s *standIns) stopAll() {
	s.mu.Lock()
	keys := make([]types.NamespacedName, 0, len(s.heads))
	for k := range s.heads {
		keys = append(keys, k)
	}
	s.mu.Unlock()
	for _, k := range keys {
		s.stopHead(k)
	}
}

// submitFor submits, once per submitter Pod, its RayJob's entrypoint to
// the dashboard of headPod, as `ray job submit` would, and then follows
// the Ray job as it would: when the job ends, the submitter Pod (or, in
// SidecarMode, the head Pod's submitter container) is annotated to finish
// with exit code 0.
func (s *standIns) submitFor(ctx context.Context, submitter, headPod *corev1.Pod, job *rayv1.RayJob) (ctrl.Result, error) {
	key := client.ObjectKeyFromObject(submitter)
	s.mu.Lock()
	done := s.submitted[key] == submitter.UID
	h := s.heads[client.ObjectKeyFromObject(headPod)]
	s.mu.Unlock()
	if h == nil {
		// The head is not served yet (not Running, or not reconciled).
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	if job.Status.JobId == "" {
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	req, err := rayjob.JobRequest(job)
	if err != nil {
		s.log.Error(err, "the RayJob cannot be submitted", "rayjob", client.ObjectKeyFromObject(job))
		return ctrl.Result{}, nil
	}
	dash, err := dashboard.New(dashboard.Config{URL: h.dashboardURL})
	if err != nil {
		return ctrl.Result{}, err
	}
	if !done {
		if _, err := dash.SubmitJob(ctx, req); err != nil && !errors.Is(err, dashboard.ErrSubmissionIDInUse) {
			return ctrl.Result{}, err
		}
		s.mu.Lock()
		s.submitted[key] = submitter.UID
		s.mu.Unlock()
		s.log.Info("submitted as the RayJob's submitter", "rayjob", client.ObjectKeyFromObject(job), "submitter", key, "submissionID", req.SubmissionID)
	}
	// `ray job submit` follows the Ray job's logs until it ends, and then
	// exits 0. kwok ends it once annotated (hack/kwok/stages.yaml): a
	// submitter Pod completes; in SidecarMode, the head Pod's submitter
	// container terminates.
	ended := map[string]string{annotationExitCode: "0", annotationRunSeconds: "0"}
	if isHead(submitter) {
		ended = map[string]string{annotationSubmitterExitCode: "0"}
	}
	annotated := true
	for k := range ended {
		annotated = annotated && submitter.Annotations[k] != ""
	}
	if annotated {
		return ctrl.Result{}, nil
	}
	info, err := dash.JobInfo(ctx, req.SubmissionID)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !info.Status.IsTerminal() {
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	patch := client.MergeFrom(submitter.DeepCopy())
	if submitter.Annotations == nil {
		submitter.Annotations = map[string]string{}
	}
	for k, v := range ended {
		submitter.Annotations[k] = v
	}
	if err := s.c.Patch(ctx, submitter, patch); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s.log.Info("the Ray job ended; the submitter ends", "rayjob", client.ObjectKeyFromObject(job), "submitter", key, "status", info.Status)
	return ctrl.Result{}, nil
}

// plan reads how a simulated Ray job goes from the annotations of the
// RayJob in namespace ns whose submission ID it has; a job no RayJob names
// (submitted by hand) runs defaultRunFor and succeeds. The values follow
// kwok's stages: seconds that are not a whole number give the default, an
// exit code that is not an integer is 1.
func (s *standIns) plan(ns string) standin.Plan {
	return func(req dashboard.JobRequest) (time.Duration, int) {
		var jobs rayv1.RayJobList
		if err := s.c.List(context.Background(), &jobs, client.InNamespace(ns)); err != nil {
			return defaultRunFor, 0
		}
		for _, j := range jobs.Items {
			if j.Status.JobId != req.SubmissionID || req.SubmissionID == "" {
				continue
			}
			runFor, code := defaultRunFor, 0
			if v, ok := j.Annotations[annotationRunSeconds]; ok {
				if n, err := strconv.Atoi(v); err == nil && n >= 0 {
					runFor = time.Duration(n) * time.Second
				}
			}
			if v, ok := j.Annotations[annotationExitCode]; ok && v != "" {
				n, err := strconv.Atoi(v)
				if err != nil {
					n = 1
				}
				code = n
			}
			return runFor, code
		}
		return defaultRunFor, 0
	}
}

func (s *standIns) jobLog(key types.NamespacedName) func(string, ...any) {
	return func(format string, args ...any) {
		s.log.Info(fmt.Sprintf(format, args...), "head", key)
	}
}
