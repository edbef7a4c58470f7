package nodeset

import (
	"regexp"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

func TestRevisionHashCoversPodShapingFields(t *testing.T) {
	base := slinkytesting.MakeNodeSet("cpu", "ns", "slurm").Obj()
	tests := []struct {
		name       string
		mutate     func(*slinkyv1beta1.NodeSet)
		wantChange bool
	}{
		{"pod template label", func(n *slinkyv1beta1.NodeSet) {
			n.Spec.Template.Metadata.Labels = map[string]string{"team": "a"}
		}, true},
		{"pod spec", func(n *slinkyv1beta1.NodeSet) { n.Spec.Template.Spec.PriorityClassName = "high" }, true},
		{"slurmd image", func(n *slinkyv1beta1.NodeSet) { n.Spec.Slurmd.Image = "slurmd:26.05" }, true},
		{"logfile container", func(n *slinkyv1beta1.NodeSet) { n.Spec.LogFile.Image = "busybox" }, true},
		{"extraConf", func(n *slinkyv1beta1.NodeSet) { n.Spec.ExtraConf = "Weight=10" }, true},
		{"ordinal padding", func(n *slinkyv1beta1.NodeSet) { n.Spec.OrdinalPadding = 3 }, true},
		{"oversubscribeNode", func(n *slinkyv1beta1.NodeSet) { n.Spec.OversubscribeNode = true }, true},
		{"ssh enabled", func(n *slinkyv1beta1.NodeSet) { n.Spec.Ssh = sshSpec(true) }, true},
		{"a disabled ssh does not", func(n *slinkyv1beta1.NodeSet) { n.Spec.Ssh = sshSpec(false) }, false},
		{"replicas do not shape a pod", func(n *slinkyv1beta1.NodeSet) { n.Spec.Replicas = ptr.To[int32](7) }, false},
		{"update strategy does not", func(n *slinkyv1beta1.NodeSet) {
			n.Spec.UpdateStrategy.Type = slinkyv1beta1.OnDeleteNodeSetStrategyType
		}, false},
		{"partition does not", func(n *slinkyv1beta1.NodeSet) { n.Spec.Partition.Enabled = true }, false},
		{"history limit does not", func(n *slinkyv1beta1.NodeSet) { n.Spec.RevisionHistoryLimit = 5 }, false},
	}
	baseData, err := revisionData(base, SshHashes{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := base.DeepCopy()
			tt.mutate(n)
			data, err := revisionData(n, SshHashes{})
			if err != nil {
				t.Fatal(err)
			}
			changed := RevisionHash(data, nil) != RevisionHash(baseData, nil)
			if changed != tt.wantChange {
				t.Errorf("hash changed = %v, want %v", changed, tt.wantChange)
			}
		})
	}
}

// sshSpec is a spec.ssh with every field set.
func sshSpec(enabled bool) slinkyv1beta1.NodeSetSsh {
	return slinkyv1beta1.NodeSetSsh{
		Enabled:         enabled,
		ExtraSshdConfig: "X11Forwarding no",
		SssdConfRef:     corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "sssd"}, Key: "sssd.conf"},
	}
}

// TestRevisionHashSsh: with ssh enabled, a change of its spec or of the
// files it produces (sssd.conf lives in a Secret) replaces the pods.
func TestRevisionHashSsh(t *testing.T) {
	n := slinkytesting.MakeNodeSet("cpu", "ns", "slurm").Ssh(sshSpec(true)).Obj()
	hashes := SshHashes{SshdConf: "a", SssdConf: "b"}
	hashOf := func(n *slinkyv1beta1.NodeSet, h SshHashes) string {
		t.Helper()
		data, err := revisionData(n, h)
		if err != nil {
			t.Fatal(err)
		}
		return RevisionHash(data, nil)
	}
	base := hashOf(n, hashes)
	edited := n.DeepCopy()
	edited.Spec.Ssh.ExtraSshdConfig = "X11Forwarding yes"
	for name, got := range map[string]string{
		"extraSshdConfig":    hashOf(edited, hashes),
		"sshd_config's hash": hashOf(n, SshHashes{SshdConf: "c", SssdConf: "b"}),
		"sssd.conf's hash":   hashOf(n, SshHashes{SshdConf: "a", SssdConf: "c"}),
	} {
		if got == base {
			t.Errorf("changing %s kept the revision hash %s", name, base)
		}
	}
	if hashOf(n, hashes) != base {
		t.Error("the hash is not deterministic")
	}
}

// TestRevisionHashStable pins the hashes of revisions written before ssh
// was supported: a manager upgrade must not replace the pods of existing
// NodeSets, which have ssh disabled.
func TestRevisionHashStable(t *testing.T) {
	custom := slinkytesting.MakeNodeSet("gpu", "ns", "slurm").Obj()
	custom.Spec.Template.Metadata.Labels = map[string]string{"team": "a"}
	custom.Spec.Template.Spec.PriorityClassName = "high"
	custom.Spec.Slurmd.Image = "slurmd:26.05"
	custom.Spec.LogFile.Image = "busybox"
	custom.Spec.ExtraConf = "Features=gpu Weight=10"
	custom.Spec.OrdinalPadding = 3
	tests := []struct {
		name    string
		nodeSet *slinkyv1beta1.NodeSet
		want    string
	}{
		{"defaults", slinkytesting.MakeNodeSet("cpu", "ns", "slurm").Obj(), "6d66bff8bd"},
		{"every hashed field set", custom, "77b8fc6f5d"},
		{"ssh disabled but configured", slinkytesting.MakeNodeSet("cpu", "ns", "slurm").Ssh(sshSpec(false)).Obj(), "6d66bff8bd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := revisionData(tt.nodeSet, SshHashes{SshdConf: "ignored", SssdConf: "when disabled"})
			if err != nil {
				t.Fatal(err)
			}
			if got := RevisionHash(data, nil); got != tt.want {
				t.Errorf("hash = %s, want %s (data %s)", got, tt.want, data)
			}
		})
	}
}

func TestRevisionHash(t *testing.T) {
	data := []byte(`{"spec":{"template":{"$patch":"replace"}}}`)
	h := RevisionHash(data, nil)
	if RevisionHash(data, nil) != h {
		t.Fatal("hash is not deterministic")
	}
	// A label value and DNS name part without vowels (no accidental words).
	if !regexp.MustCompile(`^[bcdfghjklmnpqrstvwxz2456789]{1,10}$`).MatchString(h) {
		t.Errorf("hash %q is not a safe-encoded string", h)
	}
	for _, count := range []int32{0, 1, 2} {
		if RevisionHash(data, ptr.To(count)) == h {
			t.Errorf("collision count %d did not change the hash", count)
		}
	}
	if RevisionHash(data, ptr.To[int32](1)) == RevisionHash(data, ptr.To[int32](2)) {
		t.Error("different collision counts gave the same hash")
	}
}

func TestBuildPodIdentity(t *testing.T) {
	ctrl := slinkytesting.MakeController("slurm", "ns").Keys("keys").Obj()
	tests := []struct {
		name         string
		nodeset      *slinkyv1beta1.NodeSet
		ordinal      int
		wantName     string
		wantHostname string
	}{
		{"plain", slinkytesting.MakeNodeSet("cpu", "ns", "slurm").Obj(), 3, "cpu-3", "cpu-3"},
		{"padded", func() *slinkyv1beta1.NodeSet {
			n := slinkytesting.MakeNodeSet("cpu", "ns", "slurm").Obj()
			n.Spec.OrdinalPadding = 3
			return n
		}(), 7, "cpu-007", "cpu-007"},
		{"hostname prefix", slinkytesting.MakeNodeSet("cpu", "ns", "slurm").Hostname("node").Obj(), 12, "cpu-12", "node12"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := BuildPod(tt.nodeset, tt.ordinal, PodInputs{Controller: ctrl, RevisionHash: "abc"})
			if pod.Name != tt.wantName || pod.Spec.Hostname != tt.wantHostname || SlurmNodeName(pod) != tt.wantHostname {
				t.Errorf("name/hostname = %s/%s, want %s/%s", pod.Name, pod.Spec.Hostname, tt.wantName, tt.wantHostname)
			}
			if pod.Spec.Subdomain != "slurm-workers-slurm" {
				t.Errorf("subdomain = %q", pod.Spec.Subdomain)
			}
			for k, v := range map[string]string{
				"app.kubernetes.io/managed-by":         "gantry",
				"app.kubernetes.io/name":               "slurmd",
				"app.kubernetes.io/instance":           "cpu",
				slinkyv1beta1.LabelNodeSetRevisionHash: "abc",
				slinkyv1beta1.LabelNodeSetPodName:      tt.wantName,
				slinkyv1beta1.LabelNodeSetPodHostname:  tt.wantHostname,
				slinkyv1beta1.LabelNodeSetScalingMode:  "StatefulSet",
				"slinky.slurm.net/cluster":             "slurm",
			} {
				if pod.Labels[k] != v {
					t.Errorf("label %s = %q, want %q", k, pod.Labels[k], v)
				}
			}
			if ref := pod.OwnerReferences; len(ref) != 1 || ref[0].Kind != "NodeSet" || ref[0].Controller == nil || !*ref[0].Controller {
				t.Errorf("owner references = %+v", ref)
			}
			if !identityMatches(tt.nodeset, newWorker(pod)) {
				t.Error("a freshly built pod does not match its identity")
			}
		})
	}
}

func TestBuildPodMergesUserTemplate(t *testing.T) {
	n := slinkytesting.MakeNodeSet("gpu", "ns", "slurm").Obj()
	n.Spec.Template.Metadata.Labels = map[string]string{"team": "ml", "app.kubernetes.io/name": "hijack"}
	n.Spec.Template.Spec.NodeSelector = map[string]string{"gpu": "true"}
	n.Spec.Slurmd.Image = "slurmd:custom"
	n.Spec.ExtraConf = "Weight=5 Features=a100"
	n.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{}}
	n.Spec.VolumeClaimTemplates[0].Name = "scratch"
	pod := BuildPod(n, 2, PodInputs{Controller: slinkytesting.MakeController("slurm", "ns").Keys("keys").Obj()})

	if pod.Labels["team"] != "ml" || pod.Labels["app.kubernetes.io/name"] != "slurmd" {
		t.Errorf("labels = %v: want the user's label kept and the operator's selector label winning", pod.Labels)
	}
	if pod.Spec.NodeSelector["gpu"] != "true" {
		t.Errorf("nodeSelector = %v", pod.Spec.NodeSelector)
	}
	slurmd := pod.Spec.Containers[0]
	if slurmd.Image != "slurmd:custom" {
		t.Errorf("image = %q", slurmd.Image)
	}
	if got, want := slurmd.Args[len(slurmd.Args)-1], "'Features=gpu,a100 Weight=5'"; got != want {
		t.Errorf("--conf = %s, want %s", got, want)
	}
	var claim string
	for _, v := range pod.Spec.Volumes {
		if v.Name == "scratch" && v.PersistentVolumeClaim != nil {
			claim = v.PersistentVolumeClaim.ClaimName
		}
	}
	if claim != "scratch-gpu-2" {
		t.Errorf("claim volume = %q, want scratch-gpu-2", claim)
	}
}

// TestOversubscribeNode: by default a NodeSet keeps one slurmd pod per
// Kubernetes node (required anti-affinity, the user's terms added to it);
// with oversubscribeNode the rule is dropped and only the user's remain.
func TestOversubscribeNode(t *testing.T) {
	userTerm := corev1.PodAffinityTerm{TopologyKey: "zone", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}}}
	n := slinkytesting.MakeNodeSet("cpu", "ns", "slurm").Obj()
	n.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{userTerm},
	}}
	terms := func(p *corev1.Pod) []corev1.PodAffinityTerm {
		if p.Spec.Affinity == nil || p.Spec.Affinity.PodAntiAffinity == nil {
			return nil
		}
		return p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	in := PodInputs{Controller: slinkytesting.MakeController("slurm", "ns").Keys("keys").Obj()}
	got := terms(BuildPod(n, 0, in))
	if len(got) != 2 || got[0].TopologyKey != corev1.LabelHostname || got[1].TopologyKey != "zone" {
		t.Errorf("default anti-affinity = %+v, want one pod per hostname plus the user's term", got)
	}
	n.Spec.OversubscribeNode = true
	got = terms(BuildPod(n, 0, in))
	if len(got) != 1 || got[0].TopologyKey != "zone" {
		t.Errorf("oversubscribed anti-affinity = %+v, want only the user's term", got)
	}
	n.Spec.Template.Spec.Affinity = nil
	if got := terms(BuildPod(n, 0, in)); len(got) != 0 {
		t.Errorf("oversubscribed anti-affinity without the user's = %+v, want none", got)
	}
}

// TestBuildPodSearchesTheClusterDomain: slurmd resolves the other Slurm
// nodes by their short names through the workers' Service, under the
// cluster's DNS domain as Slinky finds it (slinky.ClusterDomain, from the
// manager's resolv.conf), not always cluster.local. Run on a host whose
// resolv.conf searches svc.<another domain> (or in a mount namespace with
// one bound over it) to see the difference.
func TestBuildPodSearchesTheClusterDomain(t *testing.T) {
	ctrl := slinkytesting.MakeController("slurm", "ns").Keys("keys").Obj()
	pod := BuildPod(slinkytesting.MakeNodeSet("cpu", "ns", "slurm").Obj(), 0, PodInputs{Controller: ctrl})
	want := []string{"slurm-workers-slurm.ns.svc." + slinky.ClusterDomain()}
	if pod.Spec.DNSConfig == nil || !slices.Equal(pod.Spec.DNSConfig.Searches, want) {
		t.Errorf("DNS searches = %+v, want %q", pod.Spec.DNSConfig, want)
	}
}
