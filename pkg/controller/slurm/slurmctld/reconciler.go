package slurmctld

import (
	"context"
	"fmt"
	"maps"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8sevents "k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/core"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/slurmmetrics"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	"github.com/gantry-dev/gantry/pkg/framework/reconcile"
	"github.com/gantry-dev/gantry/pkg/framework/refresolver"
	"github.com/gantry-dev/gantry/pkg/framework/syncsteps"
)

// Name is the reconciler's name in the manager, its events and logs.
const Name = "slurm-controller"

// +kubebuilder:rbac:groups=slinky.slurm.net,resources=controllers,verbs=get;list;watch
// +kubebuilder:rbac:groups=slinky.slurm.net,resources=controllers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=slinky.slurm.net,resources=controllers/finalizers,verbs=update
// +kubebuilder:rbac:groups=slinky.slurm.net,resources=nodesets,verbs=get;list;watch
// +kubebuilder:rbac:groups=slinky.slurm.net,resources=accountings,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=services;configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles one Controller per call.
type Reconciler struct {
	core.Reconciler
	reconcile.Skeleton[*slinkyv1beta1.Controller, *scope]
	// Images fill in container images the Controller leaves empty.
	Images slinky.Images
	// metrics hold the Controller's slurmrestd request series, dropped
	// when it is gone.
	metrics *slurmmetrics.Metrics
	// monitorsMissing is when the ServiceMonitor CRD was last found
	// missing.
	monitorsMissing missingCRD
}

// Options configure the Controller reconciler.
type Options = core.Options

// New builds the Controller reconciler for mgr.
func New(mgr ctrl.Manager, o Options) (*Reconciler, error) {
	return (&Reconciler{Reconciler: core.FromManager(mgr, Name, o.Options), Images: o.Images.Or(slinky.DefaultImages()), metrics: o.Metrics}).withSkeleton(), nil
}

// newReconciler returns a reconciler writing through c, reading Secrets
// through apiReader (typically the manager's API reader) and recording
// events with recorder (nil records none), for New and for tests without
// a manager.
func newReconciler(c client.Client, apiReader client.Reader, recorder k8sevents.EventRecorder) *Reconciler {
	return (&Reconciler{Reconciler: core.New(c, apiReader, recorder), Images: slinky.DefaultImages()}).withSkeleton()
}

// scope is what one reconcile knows and has done so far.
type scope struct {
	core.Scope[*slinkyv1beta1.Controller]
	configHash string
	// monitor is the ServiceMonitorReady condition, nil when none is asked for.
	monitor *metav1.Condition
	// monitorSynced: the ServiceMonitor step ran to its end, so monitor is
	// what the status should say (a failed run leaves the condition as is).
	monitorSynced bool
}

// external reports a slurmctld outside Kubernetes, which only needs the
// ConfigMap (for slurmrestd).
func external(s *scope) bool { return s.Object.Spec.External }

// withSkeleton sets the reconcile skeleton, whose Reconcile converges the objects of the Controller named by req. A
// missing Secret or ConfigMap is reported in the condition and the step's
// event; the watches on them bring the Controller back when it appears.
func (r *Reconciler) withSkeleton() *Reconciler {
	r.Skeleton = core.Skeleton(&r.Reconciler, core.Kind[*slinkyv1beta1.Controller, *scope]{
		NewObject: func() *slinkyv1beta1.Controller { return &slinkyv1beta1.Controller{} },
		Steps:     r.steps(), StepWarnings: true, Status: r.updateStatus, UserError: isUserError,
		// The slurmrestd request series are the Controller's.
		Forget: func(key types.NamespacedName) { r.metrics.ForgetController(key.Namespace, key.Name) },
	})
	return r
}

func (r *Reconciler) steps() []syncsteps.Step[*scope] {
	return []syncsteps.Step[*scope]{
		// Before the StatefulSet step, which reads the keys.
		{Name: "AuthKeys", Sync: r.ensureAuthKeys},
		{Name: "InternalService", Skip: external, Sync: r.syncInternalService},
		{Name: "Service", Skip: external, Sync: r.syncService},
		{Name: "ConfigMap", StopOnError: true, Sync: r.syncConfigMap},
		{Name: "StatefulSet", Skip: external, StopOnError: true, Sync: r.syncStatefulSet},
		{Name: "ServiceMonitor", Sync: r.syncServiceMonitor},
	}
}

func (r *Reconciler) syncInternalService(ctx context.Context, s *scope) error {
	return r.Sync(ctx, &s.Events, BuildInternalService(s.Object))
}

func (r *Reconciler) syncService(ctx context.Context, s *scope) error {
	return r.Sync(ctx, &s.Events, BuildService(s.Object))
}

// syncConfigMap writes slurm.conf and notes the hash of it and the user's
// files, which rolls slurmctld when either changes.
func (r *Reconciler) syncConfigMap(ctx context.Context, s *scope) error {
	in, userFiles, err := r.configInputs(ctx, s.Object)
	if err != nil {
		return err
	}
	cm := BuildConfigMap(s.Object, in)
	s.configHash = slinky.HashStrings(configHashInput(cm.Data, userFiles))
	return r.Sync(ctx, &s.Events, cm)
}

func (r *Reconciler) syncStatefulSet(ctx context.Context, s *scope) error {
	in, err := r.keyHashes(ctx, s.Object)
	if err != nil {
		return err
	}
	in.ConfigHash, in.Images = s.configHash, r.Images
	desired := BuildStatefulSet(s.Object, in)
	if replacing, err := r.replaceForServiceName(ctx, s, desired); err != nil || replacing {
		return err
	}
	return r.Sync(ctx, &s.Events, desired)
}

// replaceForServiceName deletes, orphaning its pods, a StatefulSet of the
// Controller whose serviceName is not desired's: Slinky's, taken over,
// names the client Service, which gives no pod a DNS name, and the field
// cannot change in place, while slurm.conf's SlurmctldHost and every
// --conf-server name the pod under the headless Service desired names. The
// next pass makes the StatefulSet again; the StatefulSet controller adopts
// the running pod (same name and selector) and rolls it onto the new
// template, its claim kept (the claim templates are Slinky's). It reports
// whether a replacement is under way.
func (r *Reconciler) replaceForServiceName(ctx context.Context, s *scope, desired *appsv1.StatefulSet) (bool, error) {
	live := &appsv1.StatefulSet{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(desired), live)
	if apierrors.IsNotFound(err) {
		// The cache holds only what carries Gantry's labels, so Slinky's
		// is read past it: applied to first, Slinky's would roll its pod
		// under the old serviceName, and the new one would roll it again.
		// (One read in each pass that finds no StatefulSet cached: the
		// first, and a take-over.)
		err = r.APIReader.Get(ctx, client.ObjectKeyFromObject(desired), live)
	}
	if err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if live.Spec.ServiceName == desired.Spec.ServiceName || !metav1.IsControlledBy(live, s.Object) {
		return false, nil
	}
	s.Requeue.After(time.Second)
	if live.DeletionTimestamp != nil {
		return true, nil
	}
	err = r.Client.Delete(ctx, live, client.Preconditions{UID: &live.UID}, client.PropagationPolicy(metav1.DeletePropagationOrphan))
	if client.IgnoreNotFound(err) != nil {
		return true, fmt.Errorf("replacing StatefulSet %s (serviceName %s, not %s): %w", live.Name, live.Spec.ServiceName, desired.Spec.ServiceName, err)
	}
	s.Events.Add(ReasonStatefulSetReplaced, "Replacing StatefulSet %s, its pods kept: its serviceName %s, which cannot change, is not the headless Service %s slurm.conf names",
		live.Name, live.Spec.ServiceName, desired.Spec.ServiceName)
	return true, nil
}

// ReasonStatefulSetReplaced: the slurmctld StatefulSet is made again
// (replaceForServiceName).
const ReasonStatefulSetReplaced = "StatefulSetReplaced"

// configInputs gathers what slurm.conf depends on: the Controller's
// NodeSets and the names of the user's scripts. It also returns the data of
// every referenced ConfigMap, keyed "<configmap>/<key>", for the config hash.
func (r *Reconciler) configInputs(ctx context.Context, c *slinkyv1beta1.Controller) (ConfigInputs, map[string]string, error) {
	var in ConfigInputs
	accounting, err := r.accountingOf(ctx, c)
	if err != nil {
		return in, nil, err
	}
	in.Accounting = accounting
	if c.Spec.External {
		return in, map[string]string{}, nil
	}
	nodeSets, err := r.nodeSetsOf(ctx, c)
	if err != nil {
		return in, nil, err
	}
	in.NodeSets = nodeSets

	userFiles, err := in.ReadUserFiles(c, func(name string) (*corev1.ConfigMap, error) {
		return r.Refs.GetConfigMap(ctx, refresolver.ObjectRef{Name: name}, c.Namespace)
	})
	if err != nil {
		return in, nil, err
	}
	return in, userFiles, nil
}

// accountingOf is the Accounting c's accountingRef names, nil when there is
// none or it does not exist (yet): the Accounting watch brings c back when
// it appears.
func (r *Reconciler) accountingOf(ctx context.Context, c *slinkyv1beta1.Controller) (*slinkyv1beta1.Accounting, error) {
	ref := c.Spec.AccountingRef
	if ref == nil || ref.Name == "" {
		return nil, nil
	}
	a := &slinkyv1beta1.Accounting{}
	switch err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: ref.Name}, a); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("getting Accounting %s: %w", ref.Name, err)
	case a.DeletionTimestamp != nil:
		return nil, nil
	}
	return a, nil
}

// nodeSetsOf lists the NodeSets whose controllerRef resolves to c. NodeSets
// in other namespaces may reference c, so all are listed and filtered; the
// list is served from the cache.
func (r *Reconciler) nodeSetsOf(ctx context.Context, c *slinkyv1beta1.Controller) ([]slinkyv1beta1.NodeSet, error) {
	list := &slinkyv1beta1.NodeSetList{}
	if err := r.Client.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing NodeSets: %w", err)
	}
	key := client.ObjectKeyFromObject(c)
	var out []slinkyv1beta1.NodeSet
	for _, n := range list.Items {
		if n.DeletionTimestamp == nil && n.ControllerKey() == key {
			out = append(out, n)
		}
	}
	return out, nil
}

// keyHashes hashes the selected key of each referenced Secret, not the whole
// Secret, so unrelated keys in a shared Secret do not roll slurmctld.
func (r *Reconciler) keyHashes(ctx context.Context, c *slinkyv1beta1.Controller) (PodInputs, error) {
	var h PodInputs
	if ref := c.Spec.SlurmKeyRef; ref != nil {
		v, err := r.Refs.GetSecretKey(ctx, c.Namespace, *ref)
		if err != nil {
			return h, err
		}
		h.SlurmKeyHash = slinky.HashBytes(v)
	}
	if ref := c.Spec.EffectiveJwtKeyRef(); ref != nil {
		v, err := r.Refs.GetSecretKey(ctx, c.Namespace, *ref)
		if err != nil {
			return h, err
		}
		h.JwtKeyHash = slinky.HashBytes(v)
	}
	return h, nil
}

// configHashInput combines the operator's files with the user's so that an
// edit of a referenced file (gres.conf, a script) also rolls slurmctld.
func configHashInput(own, user map[string]string) map[string]string {
	// '/' cannot appear in a ConfigMap key, so user entries never collide
	// with the operator's file names.
	out := maps.Clone(own)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, user)
	return out
}

// isUserError reports whether every error in err is a reference the user
// must fix (a missing Secret, ConfigMap or key).
func isUserError(err error) bool {
	if err == nil {
		return false
	}
	errs := []error{err}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		errs = joined.Unwrap()
	}
	for _, e := range errs {
		if !refresolver.IsNotFound(e) {
			return false
		}
	}
	return true
}

// updateStatus writes the Ready and ServiceMonitorReady conditions when
// they changed.
func (r *Reconciler) updateStatus(ctx context.Context, s *scope, syncErr error) error {
	c := s.Object
	sts, err := r.LiveStatefulSet(ctx, c, slinky.ControllerStatefulSetName(c.Name), c.Spec.External)
	if err != nil {
		return err
	}
	return core.UpdateStatus(ctx, &r.Reconciler, c, conditions, readyCondition(c, sts, syncErr), nil, func(obj *slinkyv1beta1.Controller) {
		switch {
		case !s.monitorSynced:
		case s.monitor != nil:
			s.monitor.ObservedGeneration = c.Generation
			meta.SetStatusCondition(&obj.Status.Conditions, *s.monitor)
		default:
			meta.RemoveStatusCondition(&obj.Status.Conditions, ConditionServiceMonitor)
		}
	})
}

func conditions(c *slinkyv1beta1.Controller) *[]metav1.Condition { return &c.Status.Conditions }
