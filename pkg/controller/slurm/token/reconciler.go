// Package token reconciles Slinky Tokens: a Slurm JWT for one user, kept in
// a Secret and issued again before it expires, for clients that talk to
// slurmrestd (job submission through the REST API) without holding the
// cluster's signing key.
package token

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/framework/builder"
	"github.com/gantry-dev/gantry/pkg/framework/refresolver"
	"github.com/gantry-dev/gantry/pkg/framework/status"
	"github.com/gantry-dev/gantry/pkg/slurm"
)

// Name is the reconciler's name in the manager, its events and logs.
const Name = "slurm-token"

// FieldOwner owns the fields Gantry writes on Slurm objects.
const FieldOwner = "gantry-slurm"

// Condition and reasons a person reads in `kubectl describe token`.
const (
	ConditionReady = "Ready"
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

// retryMissingKey is how soon a Token whose signing key is missing looks
// again (the key's Secret is not watched: the manager caches no Secret data).
const retryMissingKey = 30 * time.Second

// +kubebuilder:rbac:groups=slinky.slurm.net,resources=tokens,verbs=get;list;watch
// +kubebuilder:rbac:groups=slinky.slurm.net,resources=tokens/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles one Token per call.
type Reconciler struct {
	client client.Client
	// apiReader reads Secrets past the cache, which holds only their metadata.
	apiReader client.Reader
	secrets   *refresolver.Resolver
	recorder  events.EventRecorder
	// Now is the clock; tests replace it.
	Now func() time.Time
	// reported keeps a reconcile that read a stale status from recording a
	// warning twice.
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
		Now:       time.Now,
	}
}

// Reconcile makes the Token's Secret hold a valid token for its user and
// comes back when that token is due for renewal.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	t := &slinkyv1beta1.Token{}
	if err := r.client.Get(ctx, req.NamespacedName, t); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if t.DeletionTimestamp != nil {
		r.reported.Forget(t.UID)
		return ctrl.Result{}, nil
	}
	claims, requeue, cond, err := r.sync(ctx, t)
	if err != nil {
		cond = metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: "SyncFailed", Message: err.Error()}
	}
	r.warnOnTransition(t, cond)
	statusErr := r.updateStatus(ctx, t, claims, cond)
	return ctrl.Result{RequeueAfter: requeue}, errors.Join(err, statusErr)
}

// sync issues a token when the Secret has none, one that does not verify
// with the current key or names another user, or (with refresh) one due
// for renewal. It returns the claims of the token in the Secret.
func (r *Reconciler) sync(ctx context.Context, t *slinkyv1beta1.Token) (*slurm.TokenClaims, time.Duration, metav1.Condition, error) {
	notReady := func(reason, msg string) metav1.Condition {
		return metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
	}
	keyRef := t.SigningKeyRef()
	if keyRef == nil {
		return nil, 0, notReady(ReasonSigningKeyNotFound, "neither jwtKeyRef nor jwtHs256KeyRef is set"), nil
	}
	key, err := r.secrets.GetSecretKey(ctx, t.Namespace, *keyRef)
	if refresolver.IsNotFound(err) {
		return nil, retryMissingKey, notReady(ReasonSigningKeyNotFound, err.Error()), nil
	}
	if err != nil {
		return nil, 0, metav1.Condition{}, err
	}

	ref := t.TokenSecretRef()
	user, lifetime, refresh := t.UsernameOrDefault(), t.LifetimeOrDefault(), ptr.Deref(t.Spec.Refresh, true)
	now := r.Now()
	existing := &corev1.Secret{}
	err = r.apiReader.Get(ctx, client.ObjectKey{Namespace: t.Namespace, Name: ref.Name}, existing)
	found := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, 0, metav1.Condition{}, fmt.Errorf("reading Secret %s: %w", ref.Name, err)
	}
	if found && !metav1.IsControlledBy(existing, t) {
		msg := fmt.Sprintf("Secret %s exists and is not this Token's; name another in spec.secretRef", ref.Name)
		return nil, 0, notReady(ReasonSecretNotOwned, msg), nil
	}

	var current *slurm.TokenClaims
	if found {
		if c, err := slurm.VerifyToken(key, string(existing.Data[ref.Key])); err == nil && c.UserName == user {
			current = &c
		}
	}
	if current != nil && (!refresh || now.Before(renewAt(*current, lifetime))) {
		return current, requeueFor(*current, lifetime, refresh, now), ready(user, *current), nil
	}

	claims := slurm.TokenClaims{UserName: user, IssuedAt: now.Unix(), ExpiresAt: now.Add(lifetime).Unix()}
	jwt, err := slurm.SignToken(key, claims)
	if err != nil {
		return nil, 0, metav1.Condition{}, err
	}
	if err := r.writeSecret(ctx, t, ref, existing, found, refresh, jwt); err != nil {
		return nil, 0, metav1.Condition{}, err
	}
	r.event(t, corev1.EventTypeNormal, ReasonTokenIssued, "Issued a token for %s into Secret %s, valid until %s",
		user, ref.Name, time.Unix(claims.ExpiresAt, 0).UTC().Format(time.RFC3339))
	return &claims, requeueFor(claims, lifetime, refresh, now), ready(user, claims), nil
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
		if err := r.client.Patch(ctx, existing, patch); err != nil {
			return fmt.Errorf("renewing the token in Secret %s: %w", ref.Name, err)
		}
		return nil
	}
	if found {
		if err := r.client.Delete(ctx, existing, client.Preconditions{UID: &existing.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("replacing immutable Secret %s: %w", ref.Name, err)
		}
	}
	secret := &corev1.Secret{
		ObjectMeta: builder.NewMetadata(ref.Name, t.Namespace).
			WithLabels(t.Labels).
			WithLabels(map[string]string{builder.LabelName: "slurm-token", builder.LabelInstance: t.Name, builder.LabelManagedBy: builder.ManagedByGantry}).
			WithOwner(t, slinkyv1beta1.TokenGVK).
			Build(),
		Type:      corev1.SecretTypeOpaque,
		Immutable: ptr.To(!refresh),
		Data:      map[string][]byte{ref.Key: []byte(jwt)},
	}
	if err := r.client.Create(ctx, secret); err != nil {
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

func ready(user string, c slurm.TokenClaims) metav1.Condition {
	return metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonIssued,
		Message: fmt.Sprintf("a token for %s valid until %s", user, time.Unix(c.ExpiresAt, 0).UTC().Format(time.RFC3339))}
}

// updateStatus writes issuedAt and the Ready condition when they change.
func (r *Reconciler) updateStatus(ctx context.Context, t *slinkyv1beta1.Token, claims *slurm.TokenClaims, cond metav1.Condition) error {
	next := t.DeepCopy()
	if claims != nil {
		next.Status.IssuedAt = ptr.To(metav1.NewTime(time.Unix(claims.IssuedAt, 0)))
	}
	cond.ObservedGeneration = t.Generation
	meta.SetStatusCondition(&next.Status.Conditions, cond)
	if equalStatus(t.Status, next.Status) {
		return nil
	}
	if err := r.client.Status().Patch(ctx, next, client.MergeFrom(t)); err != nil {
		return client.IgnoreNotFound(err)
	}
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

// warnOnTransition records a Warning when the Token becomes not Ready for
// a reason the user must act on (a missing key, someone else's Secret), once
// per change of reason or message: the retries that follow are in the
// condition, not in a new event each time.
func (r *Reconciler) warnOnTransition(t *slinkyv1beta1.Token, cond metav1.Condition) {
	if cond.Status != metav1.ConditionFalse || (cond.Reason != ReasonSigningKeyNotFound && cond.Reason != ReasonSecretNotOwned) {
		return
	}
	if prev := meta.FindStatusCondition(t.Status.Conditions, ConditionReady); prev != nil &&
		prev.Status == cond.Status && prev.Reason == cond.Reason && prev.Message == cond.Message {
		return
	}
	if !r.reported.Changed(t.UID, cond) {
		return
	}
	r.event(t, corev1.EventTypeWarning, cond.Reason, "%s", cond.Message)
}

func (r *Reconciler) event(t *slinkyv1beta1.Token, eventType, reason, format string, args ...any) {
	if r.recorder != nil {
		r.recorder.Eventf(t, nil, eventType, reason, "Sync", format, args...)
	}
}
