// Package loginset reconciles Slinky LoginSets: Slurm login pods in a
// Deployment — sshd for users, sssd to resolve them, sackd so that Slurm's
// commands reach the Controller's slurmctld — behind one ssh Service, with
// SSH host keys generated once and kept in a Secret.
package loginset

import (
	"context"
	"errors"
	"fmt"
	"strings"

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
const Name = "slurm-loginset"

// FieldOwner owns the fields Gantry writes on Slurm objects.
const FieldOwner = "gantry-slurm"

// ReasonHostKeysGenerated is the event of a host keys Secret Gantry created.
const ReasonHostKeysGenerated = "HostKeysGenerated"

// +kubebuilder:rbac:groups=slinky.slurm.net,resources=loginsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=slinky.slurm.net,resources=loginsets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=slinky.slurm.net,resources=loginsets/finalizers,verbs=update
// +kubebuilder:rbac:groups=slinky.slurm.net,resources=controllers,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles one LoginSet per call.
type Reconciler struct {
	client client.Client
	// apiReader reads past the cache: Secrets (the manager caches only their
	// metadata) and objects Slinky's operator made, adopted through it.
	apiReader client.Reader
	secrets   *refresolver.Resolver
	recorder  events.EventRecorder
	// Images fill in the containers' images the LoginSet leaves empty.
	Images Images
	// reported: see recordTransition.
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
		Images:    DefaultImages(),
	}
}

// syncRun is what one reconcile has read and done so far.
type syncRun struct {
	controller   *slinkyv1beta1.Controller
	hostKeysHash string
	sshdConfHash string
	changes      common.ChangeLog
	// generatedKeys is set when this reconcile created the host keys Secret.
	generatedKeys bool
}

// Reconcile converges the objects of the LoginSet named by req and reports
// them in its status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	l := &slinkyv1beta1.LoginSet{}
	if err := r.client.Get(ctx, req.NamespacedName, l); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if l.DeletionTimestamp != nil {
		r.reported.Forget(l.UID)
		return ctrl.Result{}, nil
	}

	run := &syncRun{}
	// Step failures are not recorded by syncsteps: they become the Ready
	// condition, and an event is recorded only when that condition changes,
	// not on every retry.
	syncErr := syncsteps.Run(ctx, nil, l, r.steps(run))
	if apierrors.IsConflict(syncErr) {
		return ctrl.Result{}, syncErr
	}
	before := meta.FindStatusCondition(l.Status.Conditions, ConditionReady)
	var previous *readyState
	if before != nil {
		previous = &readyState{status: before.Status, reason: before.Reason, message: before.Message}
	}
	cond, statusErr := r.updateStatus(ctx, l, syncErr)
	// Events after the status write, so that none claims what the status
	// does not show.
	if statusErr == nil {
		if run.generatedKeys && r.recorder != nil {
			r.recorder.Eventf(l, nil, corev1.EventTypeNormal, ReasonHostKeysGenerated, common.ActionSync,
				"Generated SSH host keys (%s) in Secret %s", strings.Join(hostKeyTypes, ", "), HostKeysSecretName(l))
		}
		run.changes.Record(r.recorder, l)
		recordTransition(r.recorder, &r.reported, l, previous, cond)
	}
	if syncErr != nil && (refresolver.IsNotFound(syncErr) || errors.As(syncErr, new(*hostKeysError))) {
		// Reported in the condition; the watches on the Controller and on
		// the Secrets bring the LoginSet back once the user fixes it.
		syncErr = nil
	}
	return ctrl.Result{}, errors.Join(syncErr, statusErr)
}

// hostKeyTypes name the generated key types in events.
var hostKeyTypes = []string{"RSA 4096", "ECDSA P-256", "Ed25519"}

func (r *Reconciler) steps(run *syncRun) []syncsteps.Step[*slinkyv1beta1.LoginSet] {
	return []syncsteps.Step[*slinkyv1beta1.LoginSet]{
		{
			Name:        "Controller",
			StopOnError: true,
			Sync: func(ctx context.Context, l *slinkyv1beta1.LoginSet) error {
				c, err := refresolver.Get[*slinkyv1beta1.Controller](ctx, r.client,
					refresolver.ObjectRef{Name: l.Spec.ControllerRef.Name}, l.Namespace)
				run.controller = c
				return err
			},
		},
		{
			Name:        "SSH host keys",
			StopOnError: true,
			Sync: func(ctx context.Context, l *slinkyv1beta1.LoginSet) error {
				return r.syncHostKeys(ctx, l, run)
			},
		},
		{
			Name: "SSH config",
			Sync: func(ctx context.Context, l *slinkyv1beta1.LoginSet) error {
				cm := BuildSshConfig(l)
				run.sshdConfHash = common.HashStrings(cm.Data)
				return r.sync(ctx, cm, &run.changes)
			},
		},
		{
			Name: "Service",
			Sync: func(ctx context.Context, l *slinkyv1beta1.LoginSet) error {
				return r.sync(ctx, BuildService(l), &run.changes)
			},
		},
		{
			Name: "Deployment",
			Sync: func(ctx context.Context, l *slinkyv1beta1.LoginSet) error {
				in := DeploymentInputs{Controller: run.controller, SshdConfHash: run.sshdConfHash, HostKeysHash: run.hostKeysHash, Images: r.Images}
				if ref := run.controller.Spec.SlurmKeyRef; ref != nil {
					key, err := r.secrets.GetSecretKey(ctx, run.controller.Namespace, *ref)
					if err != nil {
						return err
					}
					in.SlurmKeyHash = common.HashBytes(key)
				}
				sssd, err := r.secrets.GetSecretKey(ctx, l.Namespace, l.Spec.SssdConfRef)
				if err != nil {
					return err
				}
				in.SssdConfHash = common.HashBytes(sssd)
				return r.sync(ctx, BuildDeployment(l, in), &run.changes)
			},
		},
	}
}

// hostKeysError is a host keys Secret Gantry cannot use; the user must fix
// or delete it.
type hostKeysError struct{ msg string }

func (e *hostKeysError) Error() string { return e.msg }

// syncHostKeys makes sure the host keys Secret exists, generating the keys
// when it does not, and notes the hash of the keys in it. An existing
// Secret is never changed: the keys are the login nodes' identity. One the
// user made is used as it is, when it holds all six keys.
func (r *Reconciler) syncHostKeys(ctx context.Context, l *slinkyv1beta1.LoginSet, run *syncRun) error {
	name := HostKeysSecretName(l)
	key := client.ObjectKey{Namespace: l.Namespace, Name: name}
	secret := &corev1.Secret{}
	// Read from the API server: the cache holds Secrets' metadata only, and
	// a Secret it has not seen yet must not be taken for a missing one.
	err := r.apiReader.Get(ctx, key, secret)
	if apierrors.IsNotFound(err) {
		desired, buildErr := BuildHostKeysSecret(l)
		if buildErr != nil {
			return buildErr
		}
		switch err = r.client.Create(ctx, desired); {
		case err == nil:
			log.FromContext(ctx).Info("generated SSH host keys", "secret", name)
			run.generatedKeys = true
			secret = desired
		case apierrors.IsAlreadyExists(err):
			// Made since the read (a concurrent reconcile); theirs wins.
			err = r.apiReader.Get(ctx, key, secret)
		}
	}
	if err != nil {
		return fmt.Errorf("SSH host keys Secret %s: %w", name, err)
	}
	if missing := missingHostKeys(secret.Data); len(missing) > 0 {
		return &hostKeysError{msg: fmt.Sprintf("Secret %s lacks the host keys %s; "+
			"add them, or delete the Secret and Gantry generates new ones", name, strings.Join(missing, ", "))}
	}
	files := make(map[string]string, len(HostKeyFiles))
	for _, f := range HostKeyFiles {
		files[f] = string(secret.Data[f])
	}
	run.hostKeysHash = common.HashStrings(files)
	return nil
}

func (r *Reconciler) sync(ctx context.Context, obj client.Object, changes *common.ChangeLog) error {
	res, err := syncobject.SyncObject(ctx, r.client, obj, syncobject.AdoptFrom(r.apiReader))
	if err != nil {
		return err
	}
	changes.Add(res, obj)
	return nil
}

// updateStatus writes replicas, readyReplicas, selector and the Ready
// condition when they changed, and returns that condition.
func (r *Reconciler) updateStatus(ctx context.Context, l *slinkyv1beta1.LoginSet, syncErr error) (readyState, error) {
	var deploy *appsv1.Deployment
	live := &appsv1.Deployment{}
	switch err := r.client.Get(ctx, client.ObjectKey{Namespace: l.Namespace, Name: DeploymentName(l)}, live); {
	case err == nil && metav1.IsControlledBy(live, l):
		deploy = live
	case err != nil && !apierrors.IsNotFound(err):
		return readyState{}, err
	}
	cond := readyCondition(l, deploy, syncErr)
	_, err := status.Update(ctx, r.client, l, func(obj *slinkyv1beta1.LoginSet) error {
		obj.Status.Selector = Selector(obj)
		obj.Status.Replicas, obj.Status.ReadyReplicas = 0, 0
		if deploy != nil {
			obj.Status.Replicas, obj.Status.ReadyReplicas = deploy.Status.Replicas, deploy.Status.ReadyReplicas
		}
		meta.SetStatusCondition(&obj.Status.Conditions, cond)
		return nil
	})
	return readyState{status: cond.Status, reason: cond.Reason, message: cond.Message}, err
}
