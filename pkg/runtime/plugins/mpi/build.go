package mpi

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"

	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime/plugin"
)

// Build returns the SSH Secret, only when it does not exist yet and marked
// create-only, and the hostfile ConfigMap, which follows the node count.
func (MPI) Build(ctx context.Context, existing client.Reader, info *plugin.Info, trainJob *trainer.TrainJob) ([]plugin.Component, error) {
	if !active(info) {
		return nil, nil
	}
	var out []plugin.Component
	secretKey := client.ObjectKey{Namespace: trainJob.Namespace, Name: SSHAuthSecretName(trainJob.Name)}
	// Existence is all that matters: a metadata-only read keeps Secret
	// contents out of the manager's cache.
	err := existing.Get(ctx, secretKey, &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}})
	switch {
	case apierrors.IsNotFound(err):
		secret, err := newSSHAuthSecret(trainJob)
		if err != nil {
			return nil, fmt.Errorf("generating the SSH key pair: %w", err)
		}
		out = append(out, plugin.Component{Object: secret, CreateOnly: true})
	case err != nil:
		return nil, fmt.Errorf("looking up Secret %s: %w", secretKey, err)
	}
	out = append(out, plugin.Component{Object: hostfileConfigMap(info, trainJob)})
	return out, nil
}

// newSSHAuthSecret generates a P-521 ECDSA key pair: the private key in PEM
// under ssh-privatekey, the public key in authorized_keys format under
// ssh-publickey.
func newSSHAuthSecret(trainJob *trainer.TrainJob) (*corev1.Secret, error) {
	key, err := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	pub, err := ssh.NewPublicKey(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: plugin.OwnedObjectMeta(SSHAuthSecretName(trainJob.Name), trainJob, nil),
		Type:       corev1.SecretTypeSSHAuth,
		Immutable:  ptr.To(true),
		Data: map[string][]byte{
			corev1.SSHAuthPrivateKey: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}),
			SSHPublicKey:             ssh.MarshalAuthorizedKey(pub),
		},
	}, nil
}

// hostfileConfigMap lists every pod that runs ranks, in replicated-job
// order: the node pods, and the launcher when it runs as a node.
func hostfileConfigMap(info *plugin.Info, trainJob *trainer.TrainJob) *corev1.ConfigMap {
	policy := info.MPIPolicy()
	slots := ptr.Deref(policy.NumProcPerNode, defaultSlotsPerNode)
	var hostfile strings.Builder
	for _, ps := range info.PodSets {
		if ps.Name != trainer.TrainerNodeName && !(ps.Name == trainer.LauncherName && runLauncherAsNode(policy)) {
			continue
		}
		for _, endpoint := range ps.Endpoints {
			fmt.Fprintf(&hostfile, "%s slots=%d\n", endpoint, slots)
		}
	}
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: plugin.OwnedObjectMeta(HostfileConfigMapName(trainJob.Name), trainJob, nil),
		Data:       map[string]string{trainer.MPIHostfileName: hostfile.String()},
	}
}
