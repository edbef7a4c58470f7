package nodeset

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/sshd"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	"github.com/gantry-dev/gantry/pkg/framework/refresolver"
)

// spec.ssh.enabled runs sshd (and sssd, which resolves its users) in the
// slurmd container, as Slinky's slurmd image does when /etc/ssh/sshd_config
// and /etc/sssd/sssd.conf are mounted: the sshd_config comes from the
// NodeSet's <name>-ssh-config ConfigMap, sssd.conf from ssh.sssdConfRef.
// The files, their volumes and sshd_config's rendering are package
// sshd's, shared with the LoginSets.
const (
	sshPortName       = "ssh"
	sshConfigNameTail = "-ssh-config"
)

// Pod annotations (Slinky's names) with the hashes of sshd_config and
// sssd.conf; they are part of the revision, so a change rolls the pods.
const (
	AnnotationSshdConfHash = sshd.AnnotationConfHash
	AnnotationSssdConfHash = sshd.AnnotationSssdConfHash
)

// SshConfigName names the ConfigMap holding the NodeSet's sshd_config.
func SshConfigName(n *slinkyv1beta1.NodeSet) string { return n.Name + sshConfigNameTail }

// workerSshdDefaults are Slinky's sshd settings for slurmd pods: PAM (for
// sssd's users and pam_slurm_adopt), the in-process sftp server, and a key
// or a password.
var workerSshdDefaults = []sshd.Directive{
	{Keyword: "UsePAM", Value: "yes"},
	{Keyword: "Subsystem", Value: "sftp internal-sftp"},
	{Keyword: "AuthenticationMethods", Value: "publickey password"},
}

// BuildSshdConfig renders the slurmd pods' sshd_config: the defaults, a
// default the user sets globally in extraSshdConfig left out, then
// extraSshdConfig.
func BuildSshdConfig(n *slinkyv1beta1.NodeSet) string {
	return sshd.RenderConfig(slinkyv1beta1.NodeSetKind, workerSshdDefaults, n.Spec.Ssh.ExtraSshdConfig)
}

// BuildSshConfigMap builds the NodeSet's <name>-ssh-config ConfigMap.
func BuildSshConfigMap(n *slinkyv1beta1.NodeSet) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            SshConfigName(n),
			Namespace:       n.Namespace,
			Labels:          slinky.NodeSetLabels(n),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(n, slinkyv1beta1.NodeSetGVK)},
		},
		Data: map[string]string{sshd.ConfigFile: BuildSshdConfig(n)},
	}
}

// SshHashes are the hashes of the files sshd and sssd read at start-up;
// empty when ssh is disabled.
type SshHashes struct {
	SshdConf, SssdConf string
}

// sshState is what a reconcile read for spec.ssh.
type sshState struct {
	hashes SshHashes
	// sssdMissing is set when the sssd.conf Secret or key does not exist:
	// the pods are built anyway (they start once it exists, and its
	// appearance changes the hash and so rolls them), and the SshConfig
	// step reports it.
	sssdMissing error
}

// errSssdConfMissing marks an ssh-enabled NodeSet whose sssd.conf cannot
// be found: the user's to fix; the Secret watch brings the NodeSet back.
var errSssdConfMissing = errors.New("sssd.conf not found")

// loadSsh hashes the NodeSet's sshd_config and its sssd.conf, read past
// the cache (which holds only the metadata of Secrets). A Secret that
// cannot be read for any other reason fails the reconcile: a revision
// computed without it would roll every pod.
func (r *Reconciler) loadSsh(ctx context.Context, n *slinkyv1beta1.NodeSet) (sshState, error) {
	var st sshState
	if !n.Spec.Ssh.Enabled {
		return st, nil
	}
	st.hashes.SshdConf = slinky.HashBytes([]byte(BuildSshdConfig(n)))
	if n.Spec.Ssh.SssdConfRef.Name == "" {
		// The user's to fix (the webhook refuses it): reported like a
		// missing Secret, not retried with back-off.
		st.sssdMissing = fmt.Errorf("%w: ssh is enabled and spec.ssh.sssdConfRef names no Secret; the pods cannot start until it does", errSssdConfMissing)
		return st, nil
	}
	sssd, err := r.Refs.GetSecretKey(ctx, n.Namespace, n.Spec.Ssh.SssdConfRef)
	switch {
	case refresolver.IsNotFound(err):
		st.sssdMissing = fmt.Errorf("%w: %v; the pods cannot start until it exists", errSssdConfMissing, err)
	case err != nil:
		return st, fmt.Errorf("reading ssh.sssdConfRef: %w", err)
	}
	st.hashes.SssdConf = slinky.HashBytes(sssd)
	return st, nil
}

// syncSshConfig keeps the ssh-config ConfigMap of an ssh-enabled NodeSet.
// Disabling ssh leaves it: pods of the older revision still mount it until
// they are replaced, and it goes with the NodeSet.
func (r *Reconciler) syncSshConfig(ctx context.Context, s *scope) error {
	n := s.Object
	if !n.Spec.Ssh.Enabled {
		return nil
	}
	if err := r.Sync(ctx, &s.Events, BuildSshConfigMap(n)); err != nil {
		return err
	}
	return s.ssh.sssdMissing
}

// sshRevisionEntry is spec.ssh's part of the revision data. Disabled, it
// is the constant an unset spec.ssh always contributed, so the revisions
// (and pods) of NodeSets without ssh keep their hashes whatever else
// spec.ssh holds. Enabled, it is spec.ssh with the hashes of the files it
// produces, so editing either rolls the pods.
func sshRevisionEntry(n *slinkyv1beta1.NodeSet, hashes SshHashes) (map[string]any, error) {
	if !n.Spec.Ssh.Enabled {
		return legacySshRevisionEntry(), nil
	}
	m, err := toMap(n.Spec.Ssh)
	if err != nil {
		return nil, err
	}
	m["$patch"] = "replace"
	m["sshdConfHash"] = hashes.SshdConf
	m["sssdConfHash"] = hashes.SssdConf
	return m, nil
}

// addSshToTemplate adds to an ssh-enabled NodeSet's pod the hash
// annotations and the volumes sshd and sssd read.
func addSshToTemplate(n *slinkyv1beta1.NodeSet, hashes SshHashes, tmpl *corev1.PodTemplateSpec) {
	if !n.Spec.Ssh.Enabled {
		return
	}
	if tmpl.Annotations == nil {
		tmpl.Annotations = map[string]string{}
	}
	tmpl.Annotations[AnnotationSshdConfHash] = hashes.SshdConf
	tmpl.Annotations[AnnotationSssdConfHash] = hashes.SssdConf
	tmpl.Spec.Volumes = append(tmpl.Spec.Volumes,
		sshd.ConfigVolumeFrom(SshConfigName(n)),
		sshd.SssdConfVolumeFrom(n.Spec.Ssh.SssdConfRef),
	)
}

// addSshToSlurmd gives the slurmd container of an ssh-enabled NodeSet the
// ssh port and the two files, each mounted alone over the image's.
func addSshToSlurmd(n *slinkyv1beta1.NodeSet, c *corev1.Container) {
	if !n.Spec.Ssh.Enabled {
		return
	}
	c.Ports = append(c.Ports, corev1.ContainerPort{Name: sshPortName, ContainerPort: sshd.DefaultPort, Protocol: corev1.ProtocolTCP})
	c.VolumeMounts = append(c.VolumeMounts, sshd.ConfigMount(), sshd.SssdConfMount())
}
