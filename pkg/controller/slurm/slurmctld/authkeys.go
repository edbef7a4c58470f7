package slurmctld

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
)

// ReasonAuthKeyGenerated is the event reason for a key Secret Gantry
// generated because the Controller asked for it.
const ReasonAuthKeyGenerated = "AuthKeyGenerated"

// GeneratedAuthKeySize is the size in bytes of a generated key: Slinky's
// chart generates both slurm.key and the jwt key as `randAscii 1024`
// (helm/slurm/templates/secrets/{slurmkey,jwtkey}.yaml). Gantry draws raw
// bytes from crypto/rand, which Slurm reads as is.
const GeneratedAuthKeySize = 1024

// generatesAuthKeys reports whether c asks Gantry to create its missing key
// Secrets. An external slurmctld has its own keys, which random ones could
// only contradict (Slinky's chart makes none for it either).
func generatesAuthKeys(c *slinkyv1beta1.Controller) bool {
	return c.Annotations[slinkyv1beta1.AnnotationGenerateAuthKeys] == "true" && !c.Spec.External
}

// authKeyRefs groups the keys c references by Secret name, in a stable
// order; both references may name the same Secret.
func authKeyRefs(c *slinkyv1beta1.Controller) (names []string, keys map[string][]string) {
	keys = map[string][]string{}
	for _, ref := range []*corev1.SecretKeySelector{c.Spec.SlurmKeyRef, c.Spec.EffectiveJwtKeyRef()} {
		if ref == nil || ref.Name == "" || ref.Key == "" {
			continue
		}
		if _, seen := keys[ref.Name]; !seen {
			names = append(names, ref.Name)
		}
		if !slices.Contains(keys[ref.Name], ref.Key) {
			keys[ref.Name] = append(keys[ref.Name], ref.Key)
		}
	}
	return names, keys
}

// BuildAuthKeySecret builds a Secret holding a fresh random value for each
// of keys, labelled like c's other objects and controlled by c. Like the
// Secrets of Slinky's chart it is immutable: a key is rotated by deleting
// the Secret, which Gantry then generates anew.
func BuildAuthKeySecret(c *slinkyv1beta1.Controller, name string, keys []string) (*corev1.Secret, error) {
	data := make(map[string][]byte, len(keys))
	for _, k := range keys {
		v := make([]byte, GeneratedAuthKeySize)
		if _, err := rand.Read(v); err != nil {
			return nil, fmt.Errorf("generating %s: %w", k, err)
		}
		data[k] = v
	}
	return &corev1.Secret{
		ObjectMeta: objectMeta(c, name),
		Type:       corev1.SecretTypeOpaque,
		Immutable:  ptr.To(true),
		Data:       data,
	}, nil
}

// ensureAuthKeys creates the key Secrets c references that do not exist,
// when c carries the generate-auth-keys annotation. A Secret that exists is
// never touched, even if it lacks the key: that stays the user's to fix, and
// the StatefulSet step reports it.
func (r *Reconciler) ensureAuthKeys(ctx context.Context, s *scope) error {
	c := s.Object
	if !generatesAuthKeys(c) {
		return nil
	}
	names, keys := authKeyRefs(c)
	// One event for the reconcile, not one per Secret: the events API folds
	// events differing only in their note into one series anyway.
	var made []string
	defer func() {
		if len(made) > 0 {
			s.Events.Add(ReasonAuthKeyGenerated, "Generated %d-byte random keys in Secret %s", GeneratedAuthKeySize, strings.Join(made, ", "))
		}
	}()
	for _, name := range names {
		// Read from the API server, not the metadata cache: a Secret the
		// cache has not seen yet must not be taken for a missing one.
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, &corev1.Secret{})
		if err == nil {
			continue
		}
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("getting Secret %s/%s: %w", c.Namespace, name, err)
		}
		secret, err := BuildAuthKeySecret(c, name, keys[name])
		if err != nil {
			return err
		}
		// Create, never update: AlreadyExists means someone else made it
		// since the read, and theirs wins.
		if err := r.Client.Create(ctx, secret); err != nil {
			if apierrors.IsAlreadyExists(err) {
				continue
			}
			return fmt.Errorf("creating Secret %s/%s: %w", c.Namespace, name, err)
		}
		log.FromContext(ctx).Info("generated auth key Secret", "secret", name, "keys", keys[name])
		made = append(made, fmt.Sprintf("%s (%s)", name, strings.Join(keys[name], ", ")))
	}
	return nil
}
