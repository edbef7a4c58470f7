package slurmctld_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slurmctld"
	"github.com/gantry-dev/gantry/test/testenv"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

// TestGenerateAuthKeysIntegration covers the generate-auth-keys annotation
// against a real API server: missing key Secrets are created (and only
// those), owned by the Controller, and the Controller goes on to create its
// StatefulSet.
func TestGenerateAuthKeysIntegration(t *testing.T) {
	env := testenv.Start(t, testenv.Options{AddToScheme: []func(*runtime.Scheme) error{slinkyv1beta1.AddToScheme}})
	startManager(t, env)
	ctx := context.Background()
	c := env.Client

	newNamespace := func(g Gomega, name string) {
		g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	}
	withAnnotation := func(obj *slinkyv1beta1.Controller, v string) *slinkyv1beta1.Controller {
		obj.Annotations = map[string]string{slinkyv1beta1.AnnotationGenerateAuthKeys: v}
		return obj
	}
	getSecret := func(ns, name string) func() (*corev1.Secret, error) {
		return func() (*corev1.Secret, error) {
			s := &corev1.Secret{}
			err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s)
			return s, err
		}
	}
	statefulSet := func(ns string) func() error {
		return func() error {
			return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "slurm-controller"}, &appsv1.StatefulSet{})
		}
	}
	readyCondition := func(ns string) func() *metav1.Condition {
		return func() *metav1.Condition {
			obj := &slinkyv1beta1.Controller{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "slurm"}, obj); err != nil {
				return nil
			}
			return meta.FindStatusCondition(obj.Status.Conditions, slurmctld.ConditionReady)
		}
	}
	eventNotes := func(ns, reason string) func(g Gomega) []string {
		return func(g Gomega) []string {
			list := &eventsv1.EventList{}
			g.Expect(c.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			var notes []string
			for _, e := range list.Items {
				if e.Regarding.Kind == slinkyv1beta1.ControllerKind && e.Regarding.Name == "slurm" && e.Reason == reason {
					notes = append(notes, e.Note)
				}
			}
			return notes
		}
	}
	// generated checks a Secret Gantry made for owner: only the requested
	// key, the size of Slinky's chart, controlled by the Controller and
	// labelled like its other objects.
	generated := func(g Gomega, s *corev1.Secret, owner *slinkyv1beta1.Controller, keys ...string) {
		g.Expect(s.Data).To(HaveLen(len(keys)))
		for _, k := range keys {
			g.Expect(s.Data).To(HaveKeyWithValue(k, HaveLen(slurmctld.GeneratedAuthKeySize)))
		}
		g.Expect(s.Type).To(Equal(corev1.SecretTypeOpaque))
		g.Expect(s.OwnerReferences).To(ConsistOf(And(
			HaveField("UID", owner.UID),
			HaveField("Kind", slinkyv1beta1.ControllerKind),
			HaveField("Controller", HaveValue(BeTrue())),
		)))
		for k, v := range slinky.ControllerLabels(owner) {
			g.Expect(s.Labels).To(HaveKeyWithValue(k, v))
		}
	}

	t.Run("missing Secrets are generated and the Controller proceeds", func(t *testing.T) {
		g := NewWithT(t)
		const ns = "authkeys-gen"
		newNamespace(g, ns)
		obj := withAnnotation(slinkytesting.MakeController("slurm", ns).
			SlurmKey("slurm-auth-slurm", "slurm.key").JwtKey("slurm-auth-jwt", "jwt.key").Image("slurmctld:25.11").Obj(), "true")
		g.Expect(c.Create(ctx, obj)).To(Succeed())

		var slurmKey, jwtKey *corev1.Secret
		g.Eventually(getSecret(ns, "slurm-auth-slurm")).WithTimeout(30 * time.Second).Should(Not(BeNil()))
		g.Eventually(func(g Gomega) {
			var err error
			slurmKey, err = getSecret(ns, "slurm-auth-slurm")()
			g.Expect(err).NotTo(HaveOccurred())
			jwtKey, err = getSecret(ns, "slurm-auth-jwt")()
			g.Expect(err).NotTo(HaveOccurred())
		}).WithTimeout(30 * time.Second).Should(Succeed())
		generated(g, slurmKey, obj, "slurm.key")
		generated(g, jwtKey, obj, "jwt.key")
		g.Expect(slurmKey.Data["slurm.key"]).NotTo(Equal(jwtKey.Data["jwt.key"]), "each key is drawn separately")

		g.Eventually(statefulSet(ns)).WithTimeout(30 * time.Second).Should(Succeed())
		g.Eventually(readyCondition(ns)).WithTimeout(30 * time.Second).
			Should(And(Not(BeNil()), HaveField("Reason", slurmctld.ReasonStatefulSetNotReady)))

		g.Eventually(eventNotes(ns, slurmctld.ReasonAuthKeyGenerated)).WithTimeout(30 * time.Second).
			Should(ConsistOf(And(ContainSubstring("slurm-auth-slurm (slurm.key)"), ContainSubstring("slurm-auth-jwt (jwt.key)"))))
		for _, note := range eventNotes(ns, slurmctld.ReasonAuthKeyGenerated)(g) {
			g.Expect(note).NotTo(ContainSubstring(string(slurmKey.Data["slurm.key"])))
			g.Expect(note).NotTo(ContainSubstring(string(jwtKey.Data["jwt.key"])))
		}

		// Later reconciles (the Controller changing) never regenerate.
		// (A merge patch: the reconciler writes the status concurrently.)
		patch := client.MergeFrom(obj.DeepCopy())
		obj.Spec.ExtraConf = "MaxJobCount=5000"
		g.Expect(c.Patch(ctx, obj, patch)).To(Succeed())
		g.Consistently(func(g Gomega) {
			s, err := getSecret(ns, "slurm-auth-slurm")()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(s.ResourceVersion).To(Equal(slurmKey.ResourceVersion))
			g.Expect(s.Data).To(Equal(slurmKey.Data))
		}).WithTimeout(2 * time.Second).Should(Succeed())
		g.Expect(eventNotes(ns, slurmctld.ReasonAuthKeyGenerated)(g)).To(HaveLen(1))

		// Deleting a generated Secret rotates its key: a new one is
		// generated and slurmctld rolls.
		keyHash := func() string {
			sts := &appsv1.StatefulSet{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "slurm-controller"}, sts); err != nil {
				return ""
			}
			return sts.Spec.Template.Annotations[slinky.AnnotationSlurmKeyHash]
		}
		oldHash := keyHash()
		g.Expect(oldHash).NotTo(BeEmpty())
		g.Expect(c.Delete(ctx, slurmKey)).To(Succeed())
		g.Eventually(func(g Gomega) {
			s, err := getSecret(ns, "slurm-auth-slurm")()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(s.UID).NotTo(Equal(slurmKey.UID))
			generated(g, s, obj, "slurm.key")
			g.Expect(s.Data["slurm.key"]).NotTo(Equal(slurmKey.Data["slurm.key"]))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		g.Eventually(keyHash).WithTimeout(30 * time.Second).Should(And(Not(BeEmpty()), Not(Equal(oldHash))))
	})

	t.Run("both keys in one Secret", func(t *testing.T) {
		g := NewWithT(t)
		const ns = "authkeys-shared"
		newNamespace(g, ns)
		obj := withAnnotation(slinkytesting.MakeController("slurm", ns).Keys("keys").Image("slurmctld:25.11").Obj(), "true")
		g.Expect(c.Create(ctx, obj)).To(Succeed())
		g.Eventually(statefulSet(ns)).WithTimeout(30 * time.Second).Should(Succeed())
		s, err := getSecret(ns, "keys")()
		g.Expect(err).NotTo(HaveOccurred())
		generated(g, s, obj, "slurm.key", "jwt.key")
		// The event follows the status write, which may come after the StatefulSet.
		g.Eventually(eventNotes(ns, slurmctld.ReasonAuthKeyGenerated)).WithTimeout(30 * time.Second).
			Should(ConsistOf(ContainSubstring("keys (slurm.key, jwt.key)")))
	})

	t.Run("an existing Secret without the key is left untouched", func(t *testing.T) {
		g := NewWithT(t)
		const ns = "authkeys-existing"
		newNamespace(g, ns)
		existing := slinkytesting.MakeSecret("slurm-auth-slurm", ns, map[string]string{"other.key": "mine"}).Obj()
		g.Expect(c.Create(ctx, existing)).To(Succeed())
		obj := withAnnotation(slinkytesting.MakeController("slurm", ns).
			SlurmKey("slurm-auth-slurm", "slurm.key").JwtKey("slurm-auth-jwt", "jwt.key").Image("slurmctld:25.11").Obj(), "true")
		g.Expect(c.Create(ctx, obj)).To(Succeed())

		// The missing jwt Secret is still generated...
		g.Eventually(getSecret(ns, "slurm-auth-jwt")).WithTimeout(30 * time.Second).Should(Not(BeNil()))
		jwt, err := getSecret(ns, "slurm-auth-jwt")()
		g.Expect(err).NotTo(HaveOccurred())
		generated(g, jwt, obj, "jwt.key")
		// ...but the user's Secret is not, and the Controller reports it.
		g.Eventually(readyCondition(ns)).WithTimeout(30 * time.Second).Should(And(Not(BeNil()),
			HaveField("Reason", slurmctld.ReasonReferenceNotFound),
			HaveField("Message", ContainSubstring(`key "slurm.key" not found in Secret authkeys-existing/slurm-auth-slurm`))))
		g.Consistently(func(g Gomega) {
			s, err := getSecret(ns, "slurm-auth-slurm")()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(s.ResourceVersion).To(Equal(existing.ResourceVersion))
			g.Expect(s.Data).To(Equal(map[string][]byte{"other.key": []byte("mine")}))
			g.Expect(s.OwnerReferences).To(BeEmpty())
		}).WithTimeout(2 * time.Second).Should(Succeed())
		g.Expect(statefulSet(ns)()).To(Satisfy(apierrors.IsNotFound))
	})

	t.Run("the sample brings what it references", func(t *testing.T) {
		g := NewWithT(t)
		const ns = "authkeys-sample"
		newNamespace(g, ns)
		raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "samples", "slinky_v1beta1_controller.yaml"))
		g.Expect(err).NotTo(HaveOccurred())
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
		var kinds []string
		for {
			obj := &unstructured.Unstructured{}
			if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
				break
			} else {
				g.Expect(err).NotTo(HaveOccurred())
			}
			if len(obj.Object) == 0 {
				continue
			}
			obj.SetNamespace(ns)
			g.Expect(c.Create(ctx, obj, client.FieldValidation(metav1.FieldValidationStrict))).To(Succeed())
			kinds = append(kinds, obj.GetKind())
		}
		g.Expect(kinds).To(Equal([]string{slinkyv1beta1.ControllerKind, "ConfigMap"}),
			"the Controller comes first, so single-document loaders of the samples read it")

		g.Eventually(statefulSet(ns)).WithTimeout(30 * time.Second).Should(Succeed())
		owner := &slinkyv1beta1.Controller{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "slurm"}, owner)).To(Succeed())
		for name, key := range map[string]string{"slurm-auth-slurm": "slurm.key", "slurm-auth-jwt": "jwt.key"} {
			s, err := getSecret(ns, name)()
			g.Expect(err).NotTo(HaveOccurred())
			generated(g, s, owner, key)
		}
	})

	for _, tc := range []struct{ name, annotation string }{
		{name: "no annotation"},
		{name: "annotation not true", annotation: "yes"},
	} {
		t.Run(tc.name+": nothing is generated", func(t *testing.T) {
			g := NewWithT(t)
			ns := "authkeys-" + strings.ReplaceAll(tc.name, " ", "-")
			newNamespace(g, ns)
			obj := slinkytesting.MakeController("slurm", ns).
				SlurmKey("slurm-auth-slurm", "slurm.key").JwtKey("slurm-auth-jwt", "jwt.key").Image("slurmctld:25.11").Obj()
			if tc.annotation != "" {
				obj = withAnnotation(obj, tc.annotation)
			}
			g.Expect(c.Create(ctx, obj)).To(Succeed())
			g.Eventually(readyCondition(ns)).WithTimeout(30 * time.Second).Should(And(Not(BeNil()),
				HaveField("Reason", slurmctld.ReasonReferenceNotFound),
				HaveField("Message", ContainSubstring("Secret "+ns+"/slurm-auth-slurm not found"))))
			g.Consistently(func(g Gomega) {
				for _, name := range []string{"slurm-auth-slurm", "slurm-auth-jwt"} {
					_, err := getSecret(ns, name)()
					g.Expect(err).To(Satisfy(apierrors.IsNotFound), name)
				}
			}).WithTimeout(2 * time.Second).Should(Succeed())
			g.Expect(eventNotes(ns, slurmctld.ReasonAuthKeyGenerated)(g)).To(BeEmpty())
		})
	}
}
