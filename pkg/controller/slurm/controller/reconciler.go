// Package controller reconciles Slinky Controllers: the slurmctld
// StatefulSet, its Services and the ConfigMap holding the generated
// slurm.conf.
package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/common"
	"github.com/gantry-dev/gantry/pkg/framework/refresolver"
	"github.com/gantry-dev/gantry/pkg/framework/requeue"
	"github.com/gantry-dev/gantry/pkg/framework/status"
	"github.com/gantry-dev/gantry/pkg/framework/syncobject"
	"github.com/gantry-dev/gantry/pkg/framework/syncsteps"
)

// Name is the reconciler's name in the manager, its events and logs.
const Name = "slurm-controller"

// FieldOwner owns the fields Gantry writes on Slurm objects.
const FieldOwner = "gantry-slurm"

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
	// reported keeps a reconcile that read a stale status from recording a
	// warning twice.
	reported status.Reported
	client   client.Client
	// apiReader reads past the cache: objects the upstream operator made
	// carry no label the cache selects, and are adopted through it.
	apiReader client.Reader
	// secrets reads Secrets straight from the API server: the manager only
	// watches their metadata, so that every Secret of the cluster (Helm
	// releases, tokens) is not held in memory for the few Gantry reads.
	secrets  *refresolver.Resolver
	recorder events.EventRecorder
	// Images fill in container images the Controller leaves empty.
	Images common.Images
}

// NewReconciler returns a reconciler writing through c, reading Secrets
// through secretReader (typically the manager's API reader) and recording
// events with recorder (nil records none).
func NewReconciler(c client.Client, apiReader client.Reader, recorder events.EventRecorder) *Reconciler {
	return &Reconciler{
		client:    client.WithFieldOwner(c, FieldOwner),
		apiReader: apiReader,
		secrets:   refresolver.New(apiReader),
		recorder:  recorder,
		Images:    common.DefaultImages(),
	}
}

// syncRun is the state the steps of one reconcile share.
type syncRun struct {
	configHash string
	changes    common.ChangeLog
	requeue    requeue.Requeue
	// monitor is the ServiceMonitorReady condition, nil when none is asked for.
	monitor *metav1.Condition
	// monitorSynced: the ServiceMonitor step ran to its end, so monitor is
	// what the status should say (a failed run leaves the condition as is).
	monitorSynced bool
}

// Reconcile converges the objects of the Controller named by req.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	c := &slinkyv1beta1.Controller{}
	if err := r.client.Get(ctx, req.NamespacedName, c); err != nil {
		// Owned objects go with their owner through garbage collection.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if c.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}

	run := &syncRun{}
	syncErr := syncsteps.Run(ctx, r.recorder, c, r.steps(run))
	run.changes.Record(r.recorder, c)

	if apierrors.IsConflict(syncErr) {
		// A stale cache, not a state worth reporting: retry at once.
		return ctrl.Result{}, syncErr
	}
	statusErr := r.updateStatus(ctx, c, run, syncErr)
	if isUserError(syncErr) {
		// A missing Secret or ConfigMap is reported in the condition and the
		// event; the watches on them bring the Controller back when it appears.
		log.FromContext(ctx).V(1).Info("waiting for a referenced object", "reason", syncErr.Error())
		syncErr = nil
	}
	return run.requeue.Result(), errors.Join(syncErr, statusErr)
}

func (r *Reconciler) steps(run *syncRun) []syncsteps.Step[*slinkyv1beta1.Controller] {
	config := syncsteps.Step[*slinkyv1beta1.Controller]{
		Name:        "ConfigMap",
		StopOnError: true,
		Sync: func(ctx context.Context, c *slinkyv1beta1.Controller) error {
			in, userFiles, err := r.configInputs(ctx, c)
			if err != nil {
				return err
			}
			cm := BuildConfigMap(c, in)
			run.configHash = common.HashStrings(configHashInput(cm.Data, userFiles))
			return r.sync(ctx, cm, &run.changes)
		},
	}
	return []syncsteps.Step[*slinkyv1beta1.Controller]{
		{
			// Before the StatefulSet step, which reads the keys.
			Name: "AuthKeys",
			Sync: r.ensureAuthKeys,
		},
		{
			Name: "InternalService",
			Sync: r.unlessExternal(func(ctx context.Context, c *slinkyv1beta1.Controller) error {
				return r.sync(ctx, BuildInternalService(c), &run.changes)
			}),
		},
		{
			Name: "Service",
			Sync: r.unlessExternal(func(ctx context.Context, c *slinkyv1beta1.Controller) error {
				return r.sync(ctx, BuildService(c), &run.changes)
			}),
		},
		config,
		{
			Name:        "StatefulSet",
			StopOnError: true,
			Sync: r.unlessExternal(func(ctx context.Context, c *slinkyv1beta1.Controller) error {
				in, err := r.keyHashes(ctx, c)
				if err != nil {
					return err
				}
				in.ConfigHash, in.Images = run.configHash, r.Images
				return r.sync(ctx, BuildStatefulSet(c, in), &run.changes)
			}),
		},
		{
			Name: "ServiceMonitor",
			Sync: func(ctx context.Context, c *slinkyv1beta1.Controller) error {
				err := r.syncServiceMonitor(ctx, c, run)
				run.monitorSynced = err == nil
				return err
			},
		},
	}
}

// unlessExternal skips a step for a slurmctld outside Kubernetes, which only
// needs the ConfigMap (for slurmrestd).
func (r *Reconciler) unlessExternal(f func(context.Context, *slinkyv1beta1.Controller) error) func(context.Context, *slinkyv1beta1.Controller) error {
	return func(ctx context.Context, c *slinkyv1beta1.Controller) error {
		if c.Spec.External {
			return nil
		}
		return f(ctx, c)
	}
}

func (r *Reconciler) sync(ctx context.Context, obj client.Object, changes *common.ChangeLog) error {
	res, err := syncobject.SyncObject(ctx, r.client, obj, syncobject.AdoptFrom(r.apiReader))
	if err != nil {
		return err
	}
	changes.Add(res, obj)
	return nil
}

// configInputs gathers what slurm.conf depends on: the Controller's
// NodeSets and the names of the user's scripts. It also returns the data of
// every referenced ConfigMap, keyed "<configmap>/<key>", for the config hash.
func (r *Reconciler) configInputs(ctx context.Context, c *slinkyv1beta1.Controller) (ConfigInputs, map[string]string, error) {
	var in ConfigInputs
	userFiles := map[string]string{}
	accounting, err := r.accountingOf(ctx, c)
	if err != nil {
		return in, nil, err
	}
	in.Accounting = accounting
	if c.Spec.External {
		return in, userFiles, nil
	}
	nodeSets, err := r.nodeSetsOf(ctx, c)
	if err != nil {
		return in, nil, err
	}
	in.NodeSets = nodeSets

	read := func(refs []corev1.LocalObjectReference) ([]string, error) {
		var files []string
		for _, ref := range refs {
			cm, err := refresolver.Get[*corev1.ConfigMap](ctx, r.client, refresolver.ObjectRef{Name: ref.Name}, c.Namespace)
			if err != nil {
				return nil, err
			}
			for k, v := range cm.Data {
				files = append(files, k)
				userFiles[cm.Name+"/"+k] = v
			}
			for k, v := range cm.BinaryData {
				files = append(files, k)
				userFiles[cm.Name+"/"+k] = string(v)
			}
		}
		return files, nil
	}
	configFiles, err := read(c.Spec.ConfigFileRefs)
	if err != nil {
		return in, nil, err
	}
	in.UserConfigFiles = configFiles
	for _, s := range []struct {
		refs []corev1.LocalObjectReference
		into *[]string
	}{
		{c.Spec.PrologScriptRefs, &in.PrologScripts},
		{c.Spec.EpilogScriptRefs, &in.EpilogScripts},
		{c.Spec.PrologSlurmctldScriptRefs, &in.PrologSlurmctldScripts},
		{c.Spec.EpilogSlurmctldScriptRefs, &in.EpilogSlurmctldScripts},
	} {
		if *s.into, err = read(s.refs); err != nil {
			return in, nil, err
		}
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
	switch err := r.client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: ref.Name}, a); {
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
	if err := r.client.List(ctx, list); err != nil {
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
		v, err := r.secrets.GetSecretKey(ctx, c.Namespace, *ref)
		if err != nil {
			return h, err
		}
		h.SlurmKeyHash = common.HashBytes(v)
	}
	if ref := c.Spec.EffectiveJwtKeyRef(); ref != nil {
		v, err := r.secrets.GetSecretKey(ctx, c.Namespace, *ref)
		if err != nil {
			return h, err
		}
		h.JwtKeyHash = common.HashBytes(v)
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
func (r *Reconciler) updateStatus(ctx context.Context, c *slinkyv1beta1.Controller, run *syncRun, syncErr error) error {
	var sts *appsv1.StatefulSet
	if !c.Spec.External {
		live := &appsv1.StatefulSet{}
		key := client.ObjectKey{Namespace: c.Namespace, Name: common.ControllerStatefulSetName(c.Name)}
		switch err := r.client.Get(ctx, key, live); {
		case err == nil:
			sts = live
		case !apierrors.IsNotFound(err):
			return err
		}
	}
	cond := readyCondition(c, sts, syncErr)
	_, err := status.Update(ctx, r.client, c, func(obj *slinkyv1beta1.Controller) error {
		meta.SetStatusCondition(&obj.Status.Conditions, cond)
		switch {
		case !run.monitorSynced:
		case run.monitor != nil:
			run.monitor.ObservedGeneration = c.Generation
			meta.SetStatusCondition(&obj.Status.Conditions, *run.monitor)
		default:
			meta.RemoveStatusCondition(&obj.Status.Conditions, ConditionServiceMonitor)
		}
		return nil
	})
	return err
}
