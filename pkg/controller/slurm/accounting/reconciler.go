// Package accounting reconciles Slinky Accountings: the slurmdbd
// StatefulSet, its Service and the Secret holding the generated
// slurmdbd.conf, for the Controllers whose accountingRef names them.
package accounting

import (
	"context"
	"errors"
	"fmt"

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
	"github.com/gantry-dev/gantry/pkg/framework/status"
	"github.com/gantry-dev/gantry/pkg/framework/syncobject"
	"github.com/gantry-dev/gantry/pkg/framework/syncsteps"
)

// Name is the reconciler's name in the manager, its events and logs.
const Name = "slurm-accounting"

// FieldOwner owns the fields Gantry writes on Slurm objects.
const FieldOwner = "gantry-slurm"

// +kubebuilder:rbac:groups=slinky.slurm.net,resources=accountings,verbs=get;list;watch
// +kubebuilder:rbac:groups=slinky.slurm.net,resources=accountings/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=slinky.slurm.net,resources=accountings/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=services;configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles one Accounting per call.
type Reconciler struct {
	client client.Client
	// apiReader reads past the cache: Secrets (the manager caches only
	// their metadata) and objects the upstream operator made, which carry
	// no label the cache selects and are adopted through it.
	apiReader client.Reader
	secrets   *refresolver.Resolver
	recorder  events.EventRecorder
	// Images fill in the slurmdbd image when the Accounting leaves it empty.
	Images common.Images
	// reported keeps a reconcile on a stale cache from recording a
	// transition's event twice.
	reported status.Reported
}

// NewReconciler returns a reconciler writing through c, reading Secrets
// through apiReader and recording events with recorder (nil records none).
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
	pod     PodInputs
	changes common.ChangeLog
}

// Reconcile converges the objects of the Accounting named by req.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	a := &slinkyv1beta1.Accounting{}
	if err := r.client.Get(ctx, req.NamespacedName, a); err != nil {
		// Owned objects go with their owner through garbage collection.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if a.DeletionTimestamp != nil {
		r.reported.Forget(a.UID)
		return ctrl.Result{}, nil
	}

	run := &syncRun{}
	var syncErr error
	if !a.Spec.External {
		// No recorder: a failure is reported by the Ready condition and one
		// event when the condition turns to it, not one event per retry.
		syncErr = syncsteps.Run(ctx, nil, a, r.steps(run))
	}
	if apierrors.IsConflict(syncErr) {
		// A stale cache, not a state worth reporting: retry at once.
		return ctrl.Result{}, syncErr
	}
	previous := meta.FindStatusCondition(a.Status.Conditions, ConditionReady)
	if previous != nil {
		previous = previous.DeepCopy()
	}
	cond, statusErr := r.updateStatus(ctx, a, syncErr)
	// Events after the status write, so that none claims what the status
	// does not show.
	run.changes.Record(r.recorder, a)
	if statusErr == nil {
		r.recordTransition(a, previous, cond)
	}
	if isUserError(syncErr) {
		log.FromContext(ctx).V(1).Info("waiting for the user", "reason", syncErr.Error())
		syncErr = nil
	}
	return ctrl.Result{}, errors.Join(syncErr, statusErr)
}

func (r *Reconciler) steps(run *syncRun) []syncsteps.Step[*slinkyv1beta1.Accounting] {
	return []syncsteps.Step[*slinkyv1beta1.Accounting]{
		{
			Name: "Service",
			Sync: func(ctx context.Context, a *slinkyv1beta1.Accounting) error {
				return r.sync(ctx, r.client, BuildService(a), &run.changes)
			},
		},
		{
			Name:        "Spec",
			StopOnError: true,
			Sync: func(_ context.Context, a *slinkyv1beta1.Accounting) error {
				return validateForSync(a)
			},
		},
		{
			// The pod cannot start without them; its hashes roll it when
			// one changes, since slurmdbd reads keys only at start.
			Name:        "Keys",
			StopOnError: true,
			Sync: func(ctx context.Context, a *slinkyv1beta1.Accounting) error {
				return r.readKeys(ctx, a, &run.pod)
			},
		},
		{
			Name:        "Config",
			StopOnError: true,
			Sync: func(ctx context.Context, a *slinkyv1beta1.Accounting) error {
				password, err := r.secrets.GetSecretKey(ctx, a.Namespace, a.Spec.StorageConfig.PasswordKeyRef)
				if err != nil {
					return err
				}
				conf, err := RenderSlurmdbdConf(a, string(password))
				if err != nil {
					return fmt.Errorf("storageConfig.passwordKeyRef (Secret %s, key %s): %w",
						a.Spec.StorageConfig.PasswordKeyRef.Name, a.Spec.StorageConfig.PasswordKeyRef.Key, err)
				}
				run.pod.ConfHash = common.HashStrings(map[string]string{SlurmdbdConfFile: conf})
				// Read through the API server: the cache holds no Secret data.
				return r.sync(ctx, uncachedReads{r.client, r.apiReader}, BuildConfigSecret(a, conf), &run.changes)
			},
		},
		{
			Name: "StatefulSet",
			Sync: func(ctx context.Context, a *slinkyv1beta1.Accounting) error {
				in := run.pod
				in.Image = r.Images.Slurmdbd
				return r.sync(ctx, r.client, BuildStatefulSet(a, in), &run.changes)
			},
		},
	}
}

// validateForSync refuses what the admission webhook refuses, for clusters
// that run without it: a slurmdbd without a database or keys cannot start.
func validateForSync(a *slinkyv1beta1.Accounting) error {
	if errs := ValidateSpec(a); len(errs) > 0 {
		return fmt.Errorf("%w: %s", errInvalidSpec, errs.ToAggregate().Error())
	}
	return nil
}

// readKeys hashes the selected key of each referenced Secret (not the whole
// Secret, so unrelated keys in a shared Secret do not roll slurmdbd) and
// checks that the JWKS ConfigMap key exists.
func (r *Reconciler) readKeys(ctx context.Context, a *slinkyv1beta1.Accounting, in *PodInputs) error {
	if ref := a.Spec.SlurmKeyRef; ref != nil {
		v, err := r.secrets.GetSecretKey(ctx, a.Namespace, *ref)
		if err != nil {
			return err
		}
		in.SlurmKeyHash = common.HashBytes(v)
	}
	if ref := a.Spec.EffectiveJwtKeyRef(); ref != nil {
		v, err := r.secrets.GetSecretKey(ctx, a.Namespace, *ref)
		if err != nil {
			return err
		}
		in.JwtKeyHash = common.HashBytes(v)
	}
	if ref := a.Spec.JwksKeyRef; ref != nil {
		if _, err := refresolver.New(r.client).GetConfigMapKey(ctx, a.Namespace, *ref); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reconciler) sync(ctx context.Context, c client.Client, obj client.Object, changes *common.ChangeLog) error {
	res, err := syncobject.SyncObject(ctx, c, obj, syncobject.AdoptFrom(r.apiReader))
	if err != nil {
		return err
	}
	changes.Add(res, obj)
	return nil
}

// updateStatus writes the Ready condition when it changed and returns it.
func (r *Reconciler) updateStatus(ctx context.Context, a *slinkyv1beta1.Accounting, syncErr error) (metav1.Condition, error) {
	var sts *appsv1.StatefulSet
	if !a.Spec.External {
		live := &appsv1.StatefulSet{}
		switch err := r.client.Get(ctx, client.ObjectKey{Namespace: a.Namespace, Name: common.AccountingName(a.Name)}, live); {
		case err == nil:
			sts = live
		case !apierrors.IsNotFound(err):
			return metav1.Condition{}, err
		}
	}
	cond := readyCondition(a, sts, syncErr)
	_, err := status.Update(ctx, r.client, a, func(obj *slinkyv1beta1.Accounting) error {
		meta.SetStatusCondition(&obj.Status.Conditions, cond)
		return nil
	})
	return cond, err
}

// recordTransition sends one event when Ready changes: a Warning naming
// what the user must fix when it turns False for a reason other than a pod
// still starting, a Normal one when it turns True. A reconcile that finds
// the same state sends nothing.
func (r *Reconciler) recordTransition(a *slinkyv1beta1.Accounting, previous *metav1.Condition, cond metav1.Condition) {
	if r.recorder == nil {
		return
	}
	if previous != nil && previous.Status == cond.Status && previous.Reason == cond.Reason && previous.Message == cond.Message {
		return
	}
	if !r.reported.Changed(a.UID, cond) {
		// This transition's event is out; the status read was stale.
		return
	}
	switch {
	case cond.Status == metav1.ConditionTrue && (previous == nil || previous.Status != metav1.ConditionTrue):
		r.recorder.Eventf(a, nil, corev1.EventTypeNormal, cond.Reason, common.ActionSync, "%s", readyNote(cond))
	case cond.Status == metav1.ConditionFalse && cond.Reason != ReasonStatefulSetNotReady:
		r.recorder.Eventf(a, nil, corev1.EventTypeWarning, cond.Reason, common.ActionSync, "%s", cond.Message)
	}
}

func readyNote(cond metav1.Condition) string {
	if cond.Message == "" {
		return "slurmdbd is ready"
	}
	return "slurmdbd is ready: " + cond.Message
}

// uncachedReads reads through reader and writes through the embedded
// client, for kinds the manager caches only as metadata.
type uncachedReads struct {
	client.Client
	reader client.Reader
}

// Get implements client.Reader.
func (u uncachedReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return u.reader.Get(ctx, key, obj, opts...)
}
