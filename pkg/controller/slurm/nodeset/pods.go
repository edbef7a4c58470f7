package nodeset

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/podspec"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	"github.com/gantry-dev/gantry/pkg/framework/builder"
)

// WorkerServiceName is the headless Service shared by every NodeSet of a
// Controller; pods use it as their subdomain so slurmctld can resolve the
// node names slurmd registers with.
func WorkerServiceName(controller string) string { return "slurm-workers-" + controller }

// WorkerPDBName is the PodDisruptionBudget over the Controller's pods that
// run jobs.
func WorkerPDBName(controller string) string { return "slurm-workers-pdb-" + controller }

// PodName is the name of the pod at ordinal: <nodeset>-<padded ordinal>.
func PodName(n *slinkyv1beta1.NodeSet, ordinal int) string {
	return n.Name + "-" + paddedOrdinal(n, ordinal)
}

func paddedOrdinal(n *slinkyv1beta1.NodeSet, ordinal int) string {
	return fmt.Sprintf("%0*d", int(n.Spec.OrdinalPadding), ordinal)
}

var ordinalSuffix = regexp.MustCompile(`^(.*)-([0-9]+)$`)

// parentAndOrdinal splits a pod name into its NodeSet name and ordinal;
// the ordinal is -1 when the name has no numeric suffix.
func parentAndOrdinal(podName string) (string, int) {
	m := ordinalSuffix.FindStringSubmatch(podName)
	if m == nil {
		return "", -1
	}
	i, err := strconv.ParseInt(m[2], 10, 32)
	if err != nil {
		return "", -1
	}
	return m[1], int(i)
}

// ordinalOf is the pod's ordinal, -1 when its name carries none.
func ordinalOf(pod *corev1.Pod) int {
	_, ordinal := parentAndOrdinal(pod.Name)
	return ordinal
}

// SlurmNodeName is the name slurmd registers the pod as. slurmd runs with
// -Z and no -N, so it registers its hostname as gethostname returns it, dots
// included (checked against Slurm 26.05: a host named node-a.example.org
// registers as node-a.example.org). On the host network that is the
// Kubernetes node's hostname, which kubelet also uses as the Node's name
// unless overridden; otherwise it is the pod's hostname: spec.hostname or
// the pod's name, cut to 63 characters as kubelet cuts it.
func SlurmNodeName(pod *corev1.Pod) string {
	if pod.Spec.HostNetwork && pod.Spec.NodeName != "" {
		return pod.Spec.NodeName
	}
	if pod.Spec.Hostname != "" {
		return pod.Spec.Hostname
	}
	return podHostname(pod.Name)
}

// podHostname is kubelet's hostname for a pod named name: at most 63
// characters, with no trailing '-' or '.' after the cut.
func podHostname(name string) string {
	const maxLen = 63
	if len(name) <= maxLen {
		return name
	}
	return strings.TrimRight(name[:maxLen], "-.")
}

// PodInputs are what a worker pod depends on besides the NodeSet.
type PodInputs struct {
	Controller   *slinkyv1beta1.Controller
	RevisionHash string
	Images       slinky.Images
	// Ssh are the hashes of sshd_config and sssd.conf (ssh enabled only).
	Ssh SshHashes
}

// BuildPod builds the pod at ordinal from the NodeSet's template.
func BuildPod(n *slinkyv1beta1.NodeSet, ordinal int, in PodInputs) *corev1.Pod {
	tmpl := podTemplate(n, in)
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: tmpl.ObjectMeta,
		Spec:       tmpl.Spec,
	}
	pod.Name = PodName(n, ordinal)
	pod.Namespace = n.Namespace
	pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(n, slinkyv1beta1.NodeSetGVK)}
	if pod.Spec.Hostname != "" {
		// A template hostname is a prefix shared by the NodeSet's nodes.
		pod.Spec.Hostname += paddedOrdinal(n, ordinal)
	} else {
		pod.Spec.Hostname = pod.Name
	}
	// The scheduler must place the pod so priority and affinity apply.
	pod.Spec.NodeName = ""
	pod.Labels[slinkyv1beta1.LabelNodeSetRevisionHash] = in.RevisionHash
	pod.Labels[slinkyv1beta1.LabelNodeSetScalingMode] = string(scalingMode(n))
	setIdentity(n, pod, SlurmNodeName(pod))
	setClaimVolumes(n, pod)
	return pod
}

// setIdentity writes the labels that tie a pod to its ordinal and to
// slurmNode, the Slurm node it registers as (SlurmNodeName).
func setIdentity(n *slinkyv1beta1.NodeSet, pod *corev1.Pod, slurmNode string) {
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[slinkyv1beta1.LabelNodeSetPodName] = pod.Name
	pod.Labels[slinkyv1beta1.LabelNodeSetPodHostname] = slurmNode
	if isDaemonPod(pod) {
		// A DaemonSet-mode pod has a generated name and no ordinal.
		delete(pod.Labels, slinkyv1beta1.LabelNodeSetPodIndex)
		return
	}
	if ordinal := ordinalOf(pod); ordinal >= 0 {
		pod.Labels[slinkyv1beta1.LabelNodeSetPodIndex] = paddedOrdinal(n, ordinal)
	}
}

// isDaemonPod reports a pod made for a NodeSet in DaemonSet scaling mode.
func isDaemonPod(pod *corev1.Pod) bool {
	return pod.Labels[slinkyv1beta1.LabelNodeSetScalingMode] == string(slinkyv1beta1.ScalingModeDaemonset)
}

// identityMatches reports whether the worker's identity labels are intact.
func identityMatches(n *slinkyv1beta1.NodeSet, w *worker) bool {
	want := *w.pod // setIdentity changes only the labels
	want.Labels = maps.Clone(w.pod.Labels)
	setIdentity(n, &want, w.slurmNode)
	return maps.Equal(want.Labels, w.pod.Labels)
}

func scalingMode(n *slinkyv1beta1.NodeSet) slinkyv1beta1.ScalingModeType {
	if n.Spec.ScalingMode == "" {
		return slinkyv1beta1.ScalingModeStatefulset
	}
	return n.Spec.ScalingMode
}

// claimName is the PersistentVolumeClaim of template claim for the pod
// whose claims carry suffix: <claim>-<nodeset>-<suffix>.
func claimName(n *slinkyv1beta1.NodeSet, claim, suffix string) string {
	return fmt.Sprintf("%s-%s-%s", claim, n.Name, suffix)
}

// claimSuffix ends the names of the pod's claims: its padded ordinal, as
// StatefulSets name theirs, or in DaemonSet mode its hostname (the node
// it runs on), as Slinky names them, so a pod replaced on the same node
// gets the same volumes back.
func claimSuffix(n *slinkyv1beta1.NodeSet, pod *corev1.Pod) string {
	if isDaemonPod(pod) {
		return pod.Labels[slinkyv1beta1.LabelNodeSetPodHostname]
	}
	return paddedOrdinal(n, ordinalOf(pod))
}

// setClaimVolumes points the template's claim volumes at the pod's own claims.
func setClaimVolumes(n *slinkyv1beta1.NodeSet, pod *corev1.Pod) {
	if len(n.Spec.VolumeClaimTemplates) == 0 {
		return
	}
	suffix := claimSuffix(n, pod)
	claimed := map[string]bool{}
	var volumes []corev1.Volume
	for _, t := range n.Spec.VolumeClaimTemplates {
		claimed[t.Name] = true
		volumes = append(volumes, corev1.Volume{Name: t.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName(n, t.Name, suffix)},
		}})
	}
	for _, v := range pod.Spec.Volumes {
		if !claimed[v.Name] {
			volumes = append(volumes, v)
		}
	}
	pod.Spec.Volumes = volumes
}

// podClaims are the claims the pod needs, labelled like the pods.
func podClaims(n *slinkyv1beta1.NodeSet, pod *corev1.Pod) []*corev1.PersistentVolumeClaim {
	suffix := claimSuffix(n, pod)
	out := make([]*corev1.PersistentVolumeClaim, 0, len(n.Spec.VolumeClaimTemplates))
	for _, t := range n.Spec.VolumeClaimTemplates {
		c := t.DeepCopy()
		c.Name = claimName(n, t.Name, suffix)
		c.Namespace = n.Namespace
		c.Labels = builder.MergeLabels(c.Labels, slinky.NodeSetLabels(n))
		c.ResourceVersion, c.UID = "", ""
		c.Status = corev1.PersistentVolumeClaimStatus{}
		out = append(out, c)
	}
	return out
}

// podTemplate is the operator's worker pod with the user's template merged
// over it. Labels the operator sets win so selectors keep matching.
func podTemplate(n *slinkyv1beta1.NodeSet, in PodInputs) corev1.PodTemplateSpec {
	controller := n.Spec.ControllerRef.Name
	base := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels: builder.MergeLabels(n.Labels, slinky.NodeSetLabels(n)),
			Annotations: builder.MergeLabels(n.Annotations, map[string]string{
				slinky.AnnotationDefaultContainer: slinky.AppSlurmd,
			}),
		},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: ptr.To(false),
			EnableServiceLinks:           ptr.To(false),
			Subdomain:                    WorkerServiceName(controller),
			DNSConfig: &corev1.PodDNSConfig{Searches: []string{
				slinky.ServiceFQDN(WorkerServiceName(controller), n.Namespace),
			}},
			Containers:     []corev1.Container{slurmdContainer(n, in)},
			InitContainers: []corev1.Container{podspec.LogfileSidecar(n.Spec.LogFile.Container, in.Images.Logfile, slinky.SlurmdLogFilePath)},
			Volumes:        podVolumes(in.Controller),
			// One slurmd per Kubernetes node: two would fight over the
			// node's cgroups and devices.
			Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					TopologyKey: corev1.LabelHostname,
					LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
						Key: builder.LabelName, Operator: metav1.LabelSelectorOpIn, Values: []string{slinky.AppSlurmd},
					}}},
				}},
			}},
		},
	}
	addSshToTemplate(n, in.Ssh, &base)
	if n.Spec.OversubscribeNode {
		// The user accepts several slurmd pods on one Kubernetes node.
		base.Spec.Affinity = nil
	}
	user := podspec.UserPodTemplate(n.Spec.Template.Metadata.Labels, n.Spec.Template.Metadata.Annotations, n.Spec.Template.Spec.PodSpec)
	out := builder.MergePodTemplate(base, user)
	addPodTolerations(n, &out.Spec)
	if !n.Spec.OversubscribeNode && user.Spec.Affinity != nil {
		// The strategic merge keeps the base's one-per-node term next to a
		// user's node affinity, but a user's own required anti-affinity
		// terms replace the base's list (it has no merge key): the rule is
		// put back in front of them.
		var userTerms []corev1.PodAffinityTerm
		if user.Spec.Affinity.PodAntiAffinity != nil {
			userTerms = user.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		}
		if out.Spec.Affinity.PodAntiAffinity == nil {
			out.Spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{}
		}
		out.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(
			slices.Clone(base.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution), userTerms...)
	}
	return out
}

// PreStopReason is the reason slurmd's preStop leaves on the pod's Slurm
// node; it carries Gantry's prefix, so Gantry (or Slinky, whose preStop
// uses the same text) lifts it once a pod of that name is Ready again.
const PreStopReason = reasonPrefix + "Pod is terminating"

// PreStopScript is slurmd's preStop. It takes the pod's Slurm node out of
// service without deleting its record:
//
//   - DRAIN first, then DOWN, both with PreStopReason. No new job lands on
//     a terminating pod: the DRAIN flag survives a return to service
//     (under ReturnToService=2 any answer of the still-running slurmd,
//     to a ping, a registration or a job's termination, lifts a DOWN), and DOWN
//     has slurmctld requeue at once what still runs on a pod that is going
//     anyway (an eviction).
//   - The record stays: slurmctld fails, on its next reconfigure or
//     restart, every pending job that names a node that no longer exists
//     (sbatch -w). The pod that replaces this one registers onto the same
//     record; Gantry deletes records only of pods that will not come back.
//   - A node carrying someone else's reason (an administrator's drain or
//     DOWN) is left exactly as it is, reason included: it comes back
//     drained, as the administrator left it.
//
// It needs only sh and scontrol, as Slinky's preStop does.
const PreStopScript = `n="$(hostname)"
s="$(scontrol --oneliner show node "$n" 2>/dev/null)" || exit 0
case "$s" in
*" Reason=` + reasonPrefix + `"*) ;;
*" Reason="*) exit 0 ;;
esac
scontrol update nodename="$n" state=drain reason='` + PreStopReason + `'
scontrol update nodename="$n" state=down reason='` + PreStopReason + `'
`

func slurmdContainer(n *slinkyv1beta1.NodeSet, in PodInputs) corev1.Container {
	probe := func(path string) corev1.ProbeHandler {
		return corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString(slinky.AppSlurmd)}}
	}
	args := []string{"-Z"}
	if in.Controller != nil {
		args = append(args, slinky.ConfServerArgs(in.Controller)...)
	}
	args = append(args, "--conf", slurmdConf(n))
	cpus, memoryMiB := slurmdLimits(n)
	base := corev1.Container{
		Name:  slinky.AppSlurmd,
		Image: in.Images.Slurmd,
		Args:  args,
		// Slinky's slurmd image sizes the node from these (its CPUs and
		// RealMemory, hence CoreSpecCount and MemSpecLimit), not from the
		// whole host; 0 means no limit. POD_TOPOLOGY is the pod's copy of
		// its Kubernetes node's topology annotation, when there is one.
		Env: []corev1.EnvVar{
			{Name: "POD_TOPOLOGY", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
				FieldPath: "metadata.annotations['" + slinkyv1beta1.AnnotationNodeTopologySpec + "']",
			}}},
			{Name: "POD_CPUS", Value: strconv.FormatInt(cpus, 10)},
			{Name: "POD_MEMORY", Value: strconv.FormatInt(memoryMiB, 10)},
		},
		Ports: []corev1.ContainerPort{{Name: slinky.AppSlurmd, ContainerPort: slinky.SlurmdPort, Protocol: corev1.ProtocolTCP}},
		StartupProbe: &corev1.Probe{
			ProbeHandler: probe(slinky.SlurmctldLivez), FailureThreshold: 6, PeriodSeconds: 10,
		},
		LivenessProbe: &corev1.Probe{
			ProbeHandler: probe(slinky.SlurmctldLivez), FailureThreshold: 6, PeriodSeconds: 10,
		},
		ReadinessProbe: &corev1.Probe{ProbeHandler: probe(slinky.SlurmctldReadyz)},
		// slurmd manages cgroups, devices and job processes of any user.
		SecurityContext: &corev1.SecurityContext{
			Privileged:   ptr.To(true),
			Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"BPF", "NET_ADMIN", "SYS_ADMIN", "SYS_NICE"}},
		},
		Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{
			Command: []string{"/usr/bin/sh", "-c", PreStopScript},
		}}},
		VolumeMounts: []corev1.VolumeMount{
			{Name: slinky.SlurmEtcVolume, MountPath: slinky.SlurmEtcDir, ReadOnly: true},
			{Name: slinky.SlurmLogFileVolume, MountPath: slinky.SlurmLogFileDir},
		},
	}
	addSshToSlurmd(n, &base)
	return builder.MergeContainer(base, n.Spec.Slurmd.Container)
}

// slurmdLimits are the slurmd pod's CPU limit in whole CPUs (rounded up)
// and memory limit in MiB, as Slinky computes them: the slurmd container's
// limits where set, else the pod-level limits of the template, else 0.
func slurmdLimits(n *slinkyv1beta1.NodeSet) (cpus, memoryMiB int64) {
	var cpu, memory int64
	if r := n.Spec.Template.Spec.Resources; r != nil {
		cpu, memory = r.Limits.Cpu().Value(), r.Limits.Memory().Value()
	}
	if limits := n.Spec.Slurmd.Resources.Limits; limits != nil {
		if c := limits.Cpu().Value(); c != 0 {
			cpu = c
		}
		if m := limits.Memory().Value(); m != 0 {
			memory = m
		}
	}
	return cpu, memory / (1024 * 1024)
}

// slurmdConf is slurmd's --conf value: the node's features (always the
// NodeSet's Slurm name, so partitions can select it) plus the user's
// extraConf. Repeated keys are joined with commas, as slurmd expects.
func slurmdConf(n *slinkyv1beta1.NodeSet) string {
	values := map[string][]string{"Features": {slinky.SlurmNodeSetName(n)}}
	for _, item := range strings.Fields(n.Spec.ExtraConf) {
		key, val, ok := strings.Cut(item, "=")
		if !ok {
			continue
		}
		if strings.EqualFold(key, "Feature") || strings.EqualFold(key, "Features") {
			key = "Features"
		}
		values[key] = append(values[key], val)
	}
	keys := slices.Sorted(maps.Keys(values))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+strings.Join(values[k], ","))
	}
	// The images' entrypoint passes the arguments through a shell.
	return "'" + strings.Join(parts, " ") + "'"
}

// podVolumes holds the auth/slurm key (slurmd fetches slurm.conf from
// slurmctld in configless mode) and the log FIFO.
func podVolumes(c *slinkyv1beta1.Controller) []corev1.Volume {
	var sources []corev1.VolumeProjection
	if c != nil && c.Spec.SlurmKeyRef != nil {
		sources = append(sources, podspec.SecretKeyProjection(c.Spec.SlurmKeyRef, slinky.SlurmKeyFile))
	}
	return []corev1.Volume{
		{Name: slinky.SlurmEtcVolume, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			DefaultMode: ptr.To[int32](0o600),
			Sources:     sources,
		}}},
		podspec.LogFileVolume(),
	}
}
