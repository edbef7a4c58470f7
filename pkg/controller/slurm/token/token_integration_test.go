package token_test

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	slurmworkload "github.com/gantry-dev/gantry/pkg/controller/slurm"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/token"
	"github.com/gantry-dev/gantry/pkg/framework/workload"
	"github.com/gantry-dev/gantry/pkg/slurm"
	"github.com/gantry-dev/gantry/test/testenv"
	"github.com/gantry-dev/gantry/test/testenv/managertest"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

// TestToken: a Token keeps a JWT for its user, signed with the cluster's
// key, in a Secret it owns; with refresh the JWT is issued again before it
// expires, without refresh the Secret is immutable and the JWT kept; a
// missing signing key is reported, and a Secret of the same name that is
// not the Token's is never overwritten.
func TestToken(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	env := testenv.Start(t, testenv.Options{AddToScheme: []func(*runtime.Scheme) error{slinkyv1beta1.AddToScheme}})
	managertest.Start(t, env, func(mgr ctrl.Manager) error {
		if err := slurmworkload.Integration().SetupIndexes(context.Background(), mgr.GetFieldIndexer()); err != nil {
			return err
		}
		r, err := token.New(mgr, token.Options{Options: workload.Options{MaxConcurrentReconciles: 1}})
		if err != nil {
			return err
		}
		return r.SetupWithManager(mgr)
	})
	ctx := context.Background()
	c := env.Client
	const ns = "tokens"
	key := []byte("the-cluster-jwt-key")
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	g.Expect(c.Create(ctx, slinkytesting.MakeSecret("keys", ns, map[string]string{"jwt.key": string(key)}).Obj())).To(Succeed())
	keyRef := &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "keys"}, Key: "jwt.key"}
	newToken := func(name, user string, lifetime time.Duration, refresh bool) *slinkyv1beta1.Token {
		return &slinkyv1beta1.Token{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: slinkyv1beta1.TokenSpec{
			JwtKeyRef: keyRef, Username: user, Lifetime: &metav1.Duration{Duration: lifetime}, Refresh: ptr.To(refresh)}}
	}
	jwtIn := func(g Gomega, secret string, k string) (slurm.TokenClaims, *corev1.Secret) {
		s := &corev1.Secret{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: secret}, s)).To(Succeed())
		// Signed with the cluster's key; whether it has expired is each
		// case's to check.
		claims, err := slurm.VerifyToken(key, string(s.Data[k]), time.Now())
		if errors.Is(err, slurm.ErrTokenExpired) {
			err = nil
		}
		g.Expect(err).NotTo(HaveOccurred(), "the token verifies with the cluster's key")
		return claims, s
	}
	readyOf := func(g Gomega, name string) *metav1.Condition {
		tok := &slinkyv1beta1.Token{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, tok)).To(Succeed())
		return meta.FindStatusCondition(tok.Status.Conditions, token.ConditionReady)
	}

	t.Run("a refreshed token is issued again before it expires", func(t *testing.T) {
		g := newG(t)
		tok := newToken("submit", "alice", 5*time.Second, true)
		g.Expect(c.Create(ctx, tok)).To(Succeed())
		var first slurm.TokenClaims
		g.Eventually(func(g Gomega) {
			claims, s := jwtIn(g, "submit-jwt-alice", "SLURM_JWT")
			g.Expect(claims.UserName).To(Equal("alice"))
			g.Expect(claims.ExpiresAt - claims.IssuedAt).To(Equal(int64(5)))
			g.Expect(s.Immutable).To(HaveValue(BeFalse()))
			g.Expect(metav1.IsControlledBy(s, tok)).To(BeTrue())
			first = claims
		}).Should(Succeed())
		g.Eventually(func(g Gomega) *metav1.Condition { return readyOf(g, "submit") }).
			Should(And(Not(BeNil()), HaveField("Status", metav1.ConditionTrue), HaveField("Reason", token.ReasonIssued)))
		// Renewed at 80% of its life: within 5 s, before the old one expires.
		g.Eventually(func(g Gomega) int64 {
			claims, _ := jwtIn(g, "submit-jwt-alice", "SLURM_JWT")
			return claims.IssuedAt
		}).WithTimeout(10 * time.Second).Should(BeNumerically(">", first.IssuedAt))
	})

	t.Run("without refresh the Secret is immutable and the token kept", func(t *testing.T) {
		g := newG(t)
		tok := newToken("once", "bob", 2*time.Second, false)
		tok.Spec.SecretRef = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "bob-token"}, Key: "token"}
		g.Expect(c.Create(ctx, tok)).To(Succeed())
		var first slurm.TokenClaims
		g.Eventually(func(g Gomega) {
			claims, s := jwtIn(g, "bob-token", "token")
			g.Expect(s.Immutable).To(HaveValue(BeTrue()))
			first = claims
		}).Should(Succeed())
		g.Consistently(func(g Gomega) slurm.TokenClaims {
			claims, _ := jwtIn(g, "bob-token", "token")
			return claims
		}).WithTimeout(4 * time.Second).Should(Equal(first))
	})

	t.Run("a token Secret Slinky made is taken over and renewed", func(t *testing.T) {
		g := newG(t)
		// Slinky v1.2.1 makes the token Secret controlled by the JWT key
		// Secret, not by the Token (common/token_secret.go, secret.go).
		keys := &corev1.Secret{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "keys"}, keys)).To(Succeed())
		now := time.Now()
		old, err := slurm.SignToken(key, slurm.TokenClaims{UserName: "erin", IssuedAt: now.Add(-time.Hour).Unix(), ExpiresAt: now.Add(3 * time.Second).Unix()})
		g.Expect(err).NotTo(HaveOccurred())
		slinkys := slinkytesting.MakeSecret("moved-jwt-erin", ns, map[string]string{"SLURM_JWT": old}).Obj()
		slinkys.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Secret", Name: keys.Name, UID: keys.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
		g.Expect(c.Create(ctx, slinkys)).To(Succeed())
		tok := newToken("moved", "erin", time.Hour, true)
		g.Expect(c.Create(ctx, tok)).To(Succeed())
		g.Eventually(func(g Gomega) {
			claims, s := jwtIn(g, "moved-jwt-erin", "SLURM_JWT")
			g.Expect(metav1.IsControlledBy(s, tok)).To(BeTrue(), "owners %+v", s.OwnerReferences)
			g.Expect(claims.ExpiresAt).To(BeNumerically(">", now.Add(30*time.Minute).Unix()), "the token was not renewed")
		}).Should(Succeed())
		g.Eventually(func(g Gomega) *metav1.Condition { return readyOf(g, "moved") }).
			Should(And(Not(BeNil()), HaveField("Status", metav1.ConditionTrue), HaveField("Reason", token.ReasonIssued)))
	})

	t.Run("a new signing key has the token issued again at once", func(t *testing.T) {
		g := newG(t)
		// A key of its own, so the other cases' tokens stay valid.
		g.Expect(c.Create(ctx, slinkytesting.MakeSecret("rotating", ns, map[string]string{"jwt.key": "old-key"}).Obj())).To(Succeed())
		tok := newToken("rotated", "frank", time.Hour, true)
		tok.Spec.JwtKeyRef = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "rotating"}, Key: "jwt.key"}
		g.Expect(c.Create(ctx, tok)).To(Succeed())
		verifiesWith := func(k string) func(g Gomega) {
			return func(g Gomega) {
				s := &corev1.Secret{}
				g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rotated-jwt-frank"}, s)).To(Succeed())
				_, err := slurm.VerifyToken([]byte(k), string(s.Data["SLURM_JWT"]), time.Now())
				g.Expect(err).NotTo(HaveOccurred())
			}
		}
		g.Eventually(verifiesWith("old-key")).Should(Succeed())
		keys := &corev1.Secret{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rotating"}, keys)).To(Succeed())
		keys.Data["jwt.key"] = []byte("new-key")
		g.Expect(c.Update(ctx, keys)).To(Succeed())
		// The token lives an hour: only the key's change can bring the
		// Token back within seconds.
		g.Eventually(verifiesWith("new-key")).WithTimeout(10 * time.Second).Should(Succeed())
	})

	t.Run("a signing key created late is used at once", func(t *testing.T) {
		g := newG(t)
		tok := newToken("late", "grace", time.Hour, true)
		tok.Spec.JwtKeyRef = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "late-key"}, Key: "jwt.key"}
		g.Expect(c.Create(ctx, tok)).To(Succeed())
		g.Eventually(func(g Gomega) *metav1.Condition { return readyOf(g, "late") }).
			Should(And(Not(BeNil()), HaveField("Reason", token.ReasonSigningKeyNotFound)))
		g.Expect(c.Create(ctx, slinkytesting.MakeSecret("late-key", ns, map[string]string{"jwt.key": "late"}).Obj())).To(Succeed())
		g.Eventually(func(g Gomega) *metav1.Condition { return readyOf(g, "late") }).WithTimeout(10 * time.Second).
			Should(And(Not(BeNil()), HaveField("Status", metav1.ConditionTrue), HaveField("Reason", token.ReasonIssued)))
	})

	t.Run("a missing signing key and someone else's Secret are reported", func(t *testing.T) {
		g := newG(t)
		noKey := newToken("nokey", "carol", time.Minute, true)
		noKey.Spec.JwtKeyRef = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "missing"}, Key: "jwt.key"}
		g.Expect(c.Create(ctx, noKey)).To(Succeed())
		g.Eventually(func(g Gomega) *metav1.Condition { return readyOf(g, "nokey") }).
			Should(And(Not(BeNil()), HaveField("Status", metav1.ConditionFalse), HaveField("Reason", token.ReasonSigningKeyNotFound)))

		g.Expect(c.Create(ctx, slinkytesting.MakeSecret("theirs-jwt-dave", ns, map[string]string{"SLURM_JWT": "not ours"}).Obj())).To(Succeed())
		g.Expect(c.Create(ctx, newToken("theirs", "dave", time.Minute, true))).To(Succeed())
		g.Eventually(func(g Gomega) *metav1.Condition { return readyOf(g, "theirs") }).
			Should(And(Not(BeNil()), HaveField("Status", metav1.ConditionFalse), HaveField("Reason", token.ReasonSecretNotOwned)))
		s := &corev1.Secret{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "theirs-jwt-dave"}, s)).To(Succeed())
		g.Expect(string(s.Data["SLURM_JWT"])).To(Equal("not ours"))
		g.Eventually(func(g Gomega) []string {
			list := &eventsv1.EventList{}
			g.Expect(c.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			var reasons []string
			for _, e := range list.Items {
				reasons = append(reasons, e.Reason)
			}
			return reasons
		}).Should(ContainElements(token.ReasonTokenIssued, token.ReasonSigningKeyNotFound, token.ReasonSecretNotOwned))
	})
}

func newG(t *testing.T) *WithT {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	return g
}
