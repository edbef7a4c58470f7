package token

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sevents "k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/core"
	"github.com/gantry-dev/gantry/pkg/framework/builder"
	"github.com/gantry-dev/gantry/pkg/framework/reconcile"
	"github.com/gantry-dev/gantry/pkg/framework/refresolver"
	"github.com/gantry-dev/gantry/pkg/framework/syncsteps"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
	"github.com/gantry-dev/gantry/pkg/slurm"
)

// Name is the reconciler's name in the manager, its events and logs.
const Name = "slurm-token"

// Condition and reasons a person reads in `kubectl describe token`.
const (
	ConditionReady = core.ConditionReady
	// ReasonIssued: the Secret holds a valid token.
	ReasonIssued = "Issued"
	// ReasonSigningKeyNotFound: the jwtKeyRef Secret or key is missing.
	ReasonSigningKeyNotFound = "SigningKeyNotFound"
	// ReasonSecretNotOwned: a Secret of the token's name belongs to someone else.
	ReasonSecretNotOwned = "SecretNotOwned"
	// ReasonTokenIssued is the event of each token issued.
	ReasonTokenIssued = "TokenIssued"
)

// renewShare is the part of a token's lifetime left when it is issued
// again: at 80% of its life, as Slinky renews it.
const renewShare = 5

// +kubebuilder:rbac:groups=slinky.slurm.net,resources=tokens,verbs=get;list;watch
// +kubebuilder:rbac:groups=slinky.slurm.net,resources=tokens/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles one Token per call.
type Reconciler struct {
	core.Reconciler
	reconcile.Skeleton[*slinkyv1beta1.Token, *scope]
	// clock tells when a token is issued and when it is due for renewal.
	clock clock.PassiveClock
}

// Options configure a Token Reconciler.
type Options struct {
	workload.Options
}

// New builds the Token reconciler for mgr.
func New(mgr ctrl.Manager, o Options) (*Reconciler, error) {
	return (&Reconciler{Reconciler: core.FromManager(mgr, Name, o.Options), clock: o.ClockOrReal()}).withSkeleton(), nil
}

// newReconciler returns a reconciler writing through c, reading Secrets
// through apiReader and recording events with recorder (nil records none),
// for New and for tests without a manager.
func newReconciler(c client.Client, apiReader client.Reader, recorder k8sevents.EventRecorder) *Reconciler {
	return (&Reconciler{Reconciler: core.New(c, apiReader, recorder), clock: clock.RealClock{}}).withSkeleton()
}

// scope is what one reconcile knows.
type scope struct {
	core.Scope[*slinkyv1beta1.Token]
	// key signs and verifies the token.
	key []byte
	// claims are those of the token in the Secret, once it holds a valid one.
	claims *slurm.TokenClaims
}

// notReadyError is a state the user must fix (a missing key, someone
// else's Secret): it becomes the Ready condition and is not retried with
// back-off.
type notReadyError struct{ reason, message string }

func (e *notReadyError) Error() string { return e.message }

func isNotReady(err error) bool { return errors.As(err, new(*notReadyError)) }

// Reconcile makes the Token's Secret hold a valid token for its user and
// comes back when that token is due for renewal.
func (r *Reconciler) withSkeleton() *Reconciler {
	r.Skeleton = core.Skeleton(&r.Reconciler, core.Kind[*slinkyv1beta1.Token, *scope]{
		NewObject: func() *slinkyv1beta1.Token { return &slinkyv1beta1.Token{} },
		Steps:     r.steps(), Status: r.updateStatus, UserError: isNotReady,
	})
	return r
}

// steps report their own failures: each is the Ready condition, with the
// cause's own message.
func (r *Reconciler) steps() []syncsteps.Step[*scope] {
	return []syncsteps.Step[*scope]{
		{Name: "SigningKey", StopOnError: true, ReportsOwnFailure: true, Sync: r.readSigningKey},
		{Name: "Token", ReportsOwnFailure: true, Sync: r.syncToken},
	}
}

// readyCondition is Ready after the steps: the token issued, or why not.
func readyCondition(s *scope, err error) metav1.Condition {
	var notReady *notReadyError
	switch {
	case errors.As(err, &notReady):
		return core.NotReady(s.Object, notReady.reason, notReady.message)
	case err != nil:
		return core.NotReady(s.Object, core.ReasonSyncFailed, err.Error())
	}
	return metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonIssued,
		Message: fmt.Sprintf("a token for %s valid until %s", s.Object.UsernameOrDefault(), time.Unix(s.claims.ExpiresAt, 0).UTC().Format(time.RFC3339))}
}

// readSigningKey reads the key the token is signed with. The key's Secret
// is watched by its name: its creation, or a new key, brings the Token
// back.
func (r *Reconciler) readSigningKey(ctx context.Context, s *scope) error {
	t := s.Object
	keyRef := t.SigningKeyRef()
	if keyRef == nil {
		return &notReadyError{ReasonSigningKeyNotFound, "neither jwtKeyRef nor jwtHs256KeyRef is set"}
	}
	key, err := r.Refs.GetSecretKey(ctx, t.Namespace, *keyRef)
	if refresolver.IsNotFound(err) {
		return &notReadyError{ReasonSigningKeyNotFound, err.Error()}
	}
	s.key = key
	return err
}

// syncToken issues a token when the Secret has none, one that does not
// verify with the current key or names another user, or (with refresh) one
// due for renewal, and comes back when the token in the Secret is due.
func (r *Reconciler) syncToken(ctx context.Context, s *scope) error {
	t := s.Object
	ref := t.TokenSecretRef()
	user, lifetime, refresh := t.UsernameOrDefault(), t.LifetimeOrDefault(), ptr.Deref(t.Spec.Refresh, true)
	now := r.clock.Now()
	existing := &corev1.Secret{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: t.Namespace, Name: ref.Name}, existing)
	found := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading Secret %s: %w", ref.Name, err)
	}
	if found && !metav1.IsControlledBy(existing, t) {
		if !isSlinkysTokenSecret(existing, t) {
			return &notReadyError{ReasonSecretNotOwned, fmt.Sprintf("Secret %s exists and is not this Token's; name another in spec.secretRef", ref.Name)}
		}
		if err := r.takeOver(ctx, t, existing); err != nil {
			return err
		}
	}

	var current *slurm.TokenClaims
	if found {
		// An expired token is still this Token's: whether it is renewed is
		// the refresh rule's to say, below.
		if c, err := slurm.VerifyToken(s.key, string(existing.Data[ref.Key]), now); (err == nil || errors.Is(err, slurm.ErrTokenExpired)) && c.UserName == user {
			current = &c
		}
	}
	if current != nil && (!refresh || now.Before(renewAt(*current, lifetime))) {
		s.claims = current
		s.Requeue.After(requeueFor(*current, lifetime, refresh, now))
		return nil
	}

	claims := slurm.TokenClaims{UserName: user, IssuedAt: now.Unix(), ExpiresAt: now.Add(lifetime).Unix()}
	jwt, err := slurm.SignToken(s.key, claims)
	if err != nil {
		return err
	}
	if err := r.writeSecret(ctx, t, ref, existing, found, refresh, jwt); err != nil {
		return err
	}
	s.Events.Add(ReasonTokenIssued, "Issued a token for %s into Secret %s, valid until %s",
		user, ref.Name, time.Unix(claims.ExpiresAt, 0).UTC().Format(time.RFC3339))
	s.claims = &claims
	s.Requeue.After(requeueFor(claims, lifetime, refresh, now))
	return nil
}

// isSlinkysTokenSecret tells a token Secret Slinky's operator made for t:
// Slinky v1.2.1 makes it controlled by the Token's signing key Secret
// (common/token_secret.go, secret.go), not by the Token. Any other
// controller, or none, makes it someone else's.
func isSlinkysTokenSecret(secret *corev1.Secret, t *slinkyv1beta1.Token) bool {
	ref, key := metav1.GetControllerOfNoCopy(secret), t.SigningKeyRef()
	return ref != nil && key != nil && ref.APIVersion == "v1" && ref.Kind == "Secret" && ref.Name == key.Name
}

// takeOver makes the Token the controller of a token Secret Slinky made
// (isSlinkysTokenSecret), in place of the key Secret, and gives it Gantry's
// labels; its token is then judged, and renewed, as the Token's own. The
// Secret now goes with the Token, as every token Secret Gantry makes.
func (r *Reconciler) takeOver(ctx context.Context, t *slinkyv1beta1.Token, secret *corev1.Secret) error {
	patch := client.MergeFromWithOptions(secret.DeepCopy(), client.MergeFromWithOptimisticLock{})
	keyRef := metav1.GetControllerOfNoCopy(secret)
	secret.OwnerReferences = slices.DeleteFunc(secret.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == keyRef.UID })
	secret.OwnerReferences = append(secret.OwnerReferences, *metav1.NewControllerRef(t, slinkyv1beta1.TokenGVK))
	secret.Labels = builder.MergeLabels(secret.Labels, tokenSecretLabels(t))
	if err := r.Client.Patch(ctx, secret, patch); err != nil {
		return fmt.Errorf("taking over Secret %s, which Slinky's operator made: %w", secret.Name, err)
	}
	return nil
}

// tokenSecretLabels are the labels Gantry gives a token Secret.
func tokenSecretLabels(t *slinkyv1beta1.Token) map[string]string {
	return map[string]string{builder.LabelName: "slurm-token", builder.LabelInstance: t.Name, builder.LabelManagedBy: builder.ManagedByGantry}
}

// writeSecret stores jwt under ref.Key, creating the Secret (immutable
// without refresh) or replacing the token in it; an immutable Secret is
// deleted and created again.
func (r *Reconciler) writeSecret(ctx context.Context, t *slinkyv1beta1.Token, ref corev1.SecretKeySelector, existing *corev1.Secret, found, refresh bool, jwt string) error {
	if found && !ptr.Deref(existing.Immutable, false) {
		patch := client.MergeFromWithOptions(existing.DeepCopy(), client.MergeFromWithOptimisticLock{})
		if existing.Data == nil {
			existing.Data = map[string][]byte{}
		}
		existing.Data[ref.Key] = []byte(jwt)
		if err := r.Client.Patch(ctx, existing, patch); err != nil {
			return fmt.Errorf("renewing the token in Secret %s: %w", ref.Name, err)
		}
		return nil
	}
	if found {
		if err := r.Client.Delete(ctx, existing, client.Preconditions{UID: &existing.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("replacing immutable Secret %s: %w", ref.Name, err)
		}
	}
	secret := &corev1.Secret{
		ObjectMeta: builder.NewMetadata(ref.Name, t.Namespace).
			WithLabels(t.Labels).
			WithLabels(tokenSecretLabels(t)).
			WithOwner(t, slinkyv1beta1.TokenGVK).
			Build(),
		Type:      corev1.SecretTypeOpaque,
		Immutable: ptr.To(!refresh),
		Data:      map[string][]byte{ref.Key: []byte(jwt)},
	}
	if err := r.Client.Create(ctx, secret); err != nil {
		return fmt.Errorf("creating Secret %s: %w", ref.Name, err)
	}
	return nil
}

// renewAt is when a token is issued again: with a fifth of its life left.
func renewAt(c slurm.TokenClaims, lifetime time.Duration) time.Time {
	return time.Unix(c.ExpiresAt, 0).Add(-lifetime / renewShare)
}

func requeueFor(c slurm.TokenClaims, lifetime time.Duration, refresh bool, now time.Time) time.Duration {
	if !refresh {
		return 0
	}
	return max(renewAt(c, lifetime).Sub(now), time.Second)
}

// transitions: a Warning when the Token becomes not Ready for a reason the
// user must act on (a missing key, someone else's Secret), once per change
// of reason or message: the retries that follow are in the condition, not
// in a new event each time.
var transitions = core.Transitions{
	Warn: func(cond metav1.Condition) bool {
		return cond.Reason == ReasonSigningKeyNotFound || cond.Reason == ReasonSecretNotOwned
	},
}

// updateStatus writes issuedAt and the Ready condition when they change.
func (r *Reconciler) updateStatus(ctx context.Context, s *scope, syncErr error) error {
	t, cond := s.Object, readyCondition(s, syncErr)
	previous := meta.FindStatusCondition(t.Status.Conditions, ConditionReady)
	next := t.DeepCopy()
	if s.claims != nil {
		next.Status.IssuedAt = ptr.To(metav1.NewTime(time.Unix(s.claims.IssuedAt, 0)))
	}
	cond.ObservedGeneration = t.Generation
	meta.SetStatusCondition(&next.Status.Conditions, cond)
	if equalStatus(t.Status, next.Status) {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, next, client.MergeFrom(t)); err != nil {
		return client.IgnoreNotFound(err)
	}
	r.RecordTransition(t, previous, cond, transitions)
	return nil
}

func equalStatus(a, b slinkyv1beta1.TokenStatus) bool {
	if (a.IssuedAt == nil) != (b.IssuedAt == nil) || (a.IssuedAt != nil && a.IssuedAt.Unix() != b.IssuedAt.Unix()) {
		return false
	}
	if len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		x, y := a.Conditions[i], b.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message || x.ObservedGeneration != y.ObservedGeneration {
			return false
		}
	}
	return true
}
