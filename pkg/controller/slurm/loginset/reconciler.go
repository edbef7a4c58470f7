package loginset

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	k8sevents "k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/core"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	"github.com/gantry-dev/gantry/pkg/framework/reconcile"
	"github.com/gantry-dev/gantry/pkg/framework/refresolver"
	"github.com/gantry-dev/gantry/pkg/framework/syncsteps"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
)

// Name is the reconciler's name in the manager, its events and logs.
const Name = "slurm-loginset"

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
	core.Reconciler
	reconcile.Skeleton[*slinkyv1beta1.LoginSet, *scope]
	// Images fill in the containers' images the LoginSet leaves empty.
	Images Images
}

// Options configure a LoginSet Reconciler.
type Options struct {
	workload.Options
	// Images override the default images field by field.
	Images Images
}

// New builds the LoginSet reconciler for mgr.
func New(mgr ctrl.Manager, o Options) (*Reconciler, error) {
	return (&Reconciler{Reconciler: core.FromManager(mgr, Name, o.Options), Images: o.Images.Or(DefaultImages())}).withSkeleton(), nil
}

// newReconciler returns a reconciler writing through c, reading Secrets
// through apiReader and recording events with recorder (nil records none),
// for New and for tests without a manager.
func newReconciler(c client.Client, apiReader client.Reader, recorder k8sevents.EventRecorder) *Reconciler {
	return (&Reconciler{Reconciler: core.New(c, apiReader, recorder), Images: DefaultImages()}).withSkeleton()
}

// scope is what one reconcile has read and done so far.
type scope struct {
	core.Scope[*slinkyv1beta1.LoginSet]
	controller   *slinkyv1beta1.Controller
	hostKeysHash string
	sshdConfHash string
}

// withSkeleton sets the reconcile skeleton, whose Reconcile converges the objects of the LoginSet named by req and reports
// them in its status. A failed step becomes the Ready condition, and an
// event is recorded only when that condition changes, not on every retry;
// the watches on the Controller and on the Secrets bring the LoginSet back
// once the user fixes what it names.
func (r *Reconciler) withSkeleton() *Reconciler {
	r.Skeleton = core.Skeleton(&r.Reconciler, core.Kind[*slinkyv1beta1.LoginSet, *scope]{
		NewObject: func() *slinkyv1beta1.LoginSet { return &slinkyv1beta1.LoginSet{} },
		Steps:     r.steps(), Status: r.updateStatus, UserError: isUserError,
	})
	return r
}

// isUserError reports a missing reference or host keys Gantry cannot use.
func isUserError(err error) bool {
	return refresolver.IsNotFound(err) || errors.As(err, new(*hostKeysError))
}

// hostKeyTypes name the generated key types in events.
var hostKeyTypes = []string{"RSA 4096", "ECDSA P-256", "Ed25519"}

func (r *Reconciler) steps() []syncsteps.Step[*scope] {
	return []syncsteps.Step[*scope]{
		{Name: "Controller", StopOnError: true, Sync: r.getController},
		{Name: "SSHHostKeys", StopOnError: true, Sync: r.syncHostKeys},
		{Name: "SSHConfig", Sync: r.syncSshConfig},
		{Name: "Service", Sync: r.syncService},
		{Name: "Deployment", Sync: r.syncDeployment},
	}
}

func (r *Reconciler) getController(ctx context.Context, s *scope) (err error) {
	s.controller, err = r.Controller(ctx, s.Object, s.Object.Spec.ControllerRef.Name)
	return err
}

func (r *Reconciler) syncSshConfig(ctx context.Context, s *scope) error {
	cm := BuildSshConfig(s.Object)
	s.sshdConfHash = slinky.HashStrings(cm.Data)
	return r.Sync(ctx, &s.Events, cm)
}

func (r *Reconciler) syncService(ctx context.Context, s *scope) error {
	return r.Sync(ctx, &s.Events, BuildService(s.Object))
}

func (r *Reconciler) syncDeployment(ctx context.Context, s *scope) error {
	l, controller := s.Object, s.controller
	in := DeploymentInputs{Controller: controller, SshdConfHash: s.sshdConfHash, HostKeysHash: s.hostKeysHash, Images: r.Images}
	if ref := controller.Spec.SlurmKeyRef; ref != nil {
		key, err := r.Refs.GetSecretKey(ctx, controller.Namespace, *ref)
		if err != nil {
			return err
		}
		in.SlurmKeyHash = slinky.HashBytes(key)
	}
	sssd, err := r.Refs.GetSecretKey(ctx, l.Namespace, l.Spec.SssdConfRef)
	if err != nil {
		return err
	}
	in.SssdConfHash = slinky.HashBytes(sssd)
	return r.Sync(ctx, &s.Events, BuildDeployment(l, in))
}

// hostKeysError is a host keys Secret Gantry cannot use; the user must fix
// or delete it.
type hostKeysError struct{ msg string }

func (e *hostKeysError) Error() string { return e.msg }

// syncHostKeys makes sure the host keys Secret exists, generating the keys
// when it does not, and notes the hash of the keys in it. An existing
// Secret is never changed: the keys are the login nodes' identity. One the
// user made is used as it is, when it holds all six keys.
func (r *Reconciler) syncHostKeys(ctx context.Context, s *scope) error {
	l := s.Object
	name := HostKeysSecretName(l)
	key := client.ObjectKey{Namespace: l.Namespace, Name: name}
	secret := &corev1.Secret{}
	// Read from the API server: the cache holds Secrets' metadata only, and
	// a Secret it has not seen yet must not be taken for a missing one.
	err := r.APIReader.Get(ctx, key, secret)
	if apierrors.IsNotFound(err) {
		desired, buildErr := BuildHostKeysSecret(l)
		if buildErr != nil {
			return buildErr
		}
		switch err = r.Client.Create(ctx, desired); {
		case err == nil:
			log.FromContext(ctx).Info("generated SSH host keys", "secret", name)
			s.Events.Add(ReasonHostKeysGenerated, "Generated SSH host keys (%s) in Secret %s", strings.Join(hostKeyTypes, ", "), name)
			secret = desired
		case apierrors.IsAlreadyExists(err):
			// Made since the read (a concurrent reconcile); theirs wins.
			err = r.APIReader.Get(ctx, key, secret)
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
	s.hostKeysHash = slinky.HashStrings(files)
	return nil
}
