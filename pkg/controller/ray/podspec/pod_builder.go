package podspec

import (
	"bytes"
	"crypto/sha1" //nolint:gosec // a change fingerprint, not a security boundary
	"encoding/base32"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/framework/builder"
	"github.com/gantry-dev/gantry/pkg/version"
)

// Default ports of a Ray head, and the names KubeRay gives them.
const (
	DefaultGcsServerPort            = 6379
	DefaultDashboardPort            = 8265
	DefaultClientPort               = 10001
	DefaultServingPort              = 8000
	DefaultMetricsPort              = 8080
	DefaultDashboardAgentListenPort = 52365

	GcsServerPortName = "gcs-server"
	DashboardPortName = "dashboard"
	ClientPortName    = "client"
	ServingPortName   = "serve"
	MetricsPortName   = "metrics"
)

// Values of the app.kubernetes.io labels KubeRay puts on what it creates;
// users select on them, so Gantry keeps them.
const (
	ApplicationName = "kuberay"
	ComponentName   = "kuberay-operator"
)

const (
	sharedMemoryVolumeName    = "shared-mem"
	sharedMemoryMountPath     = "/dev/shm"
	rayLogVolumeName          = "ray-logs"
	rayLogMountPath           = "/tmp/ray"
	WaitGCSReadyContainerName = "wait-gcs-ready"
)

// BuildOptions are the manager-wide settings the builders depend on. KubeRay
// reads them from environment variables on every call; Gantry reads them
// once at start-up (honouring the same variable names) and passes them in.
type BuildOptions struct {
	// OperatorVersion goes into the head Pod's ray.io/kuberay-version
	// annotation. It is the Gantry release this binary was built as
	// (pkg/version, set by -ldflags), so the Recreate strategy's version
	// guard sees a Gantry upgrade and refreshes the hash instead of
	// recreating every cluster whose hash recipe changed.
	OperatorVersion string
	// ClusterDomain is the cluster DNS suffix (CLUSTER_DOMAIN).
	ClusterDomain string
	// InjectWaitGCSReady adds the wait-gcs-ready init container to workers
	// (ENABLE_INIT_CONTAINER_INJECTION).
	InjectWaitGCSReady bool
	// InjectProbes adds default probes where the user set none
	// (ENABLE_PROBES_INJECTION).
	InjectProbes bool
	// Probes are the default probes' timings.
	Probes ProbeSettings
	// LoginShell runs generated commands under `bash -l` (ENABLE_LOGIN_SHELL).
	LoginShell bool
	// HeadClusterIPService gives the head Service a cluster IP instead of
	// making it headless (ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE).
	HeadClusterIPService bool
	// MultiHostIndexing is the RayMultiHostIndexing feature gate.
	MultiHostIndexing bool
	// DeterministicHeadPodName names the head Pod "<cluster>-head" instead
	// of generating a name (ENABLE_DETERMINISTIC_HEAD_POD_NAME).
	DeterministicHeadPodName bool
	// HeadSidecarContainers and WorkerSidecarContainers are appended to
	// every head or worker Pod.
	HeadSidecarContainers   []corev1.Container
	WorkerSidecarContainers []corev1.Container
	// DefaultContainerEnvs are added to every Ray container that does not
	// set them.
	DefaultContainerEnvs []corev1.EnvVar
	// BatchScheduler is --batch-scheduler (BatchSchedulers, or "" for
	// none): every Pod gets that scheduler's name, labels and annotations.
	BatchScheduler string
}

// KubeRayCompatibleVersion is the KubeRay release whose behaviour Gantry
// follows; Ray's usage-stats tags report it as kuberay_version.
const KubeRayCompatibleVersion = "v1.6.0"

// DefaultBuildOptions are KubeRay's defaults, and this build's version.
func DefaultBuildOptions() BuildOptions {
	return BuildOptions{
		OperatorVersion:    version.Version,
		ClusterDomain:      "cluster.local",
		InjectWaitGCSReady: true,
		InjectProbes:       true,
		Probes:             DefaultProbeSettings(),
		MultiHostIndexing:  true,
	}
}

// ContainerCommand is the shell every generated command runs in, as
// KubeRay's utils.GetContainerCommand: `/bin/bash -c --`, a login shell
// only with ENABLE_LOGIN_SHELL.
func (o *BuildOptions) ContainerCommand() []string {
	if o.LoginShell {
		return []string{"/bin/bash", "-lc", "--"}
	}
	return []string{"/bin/bash", "-c", "--"}
}

// WorkerReplica places a worker Pod in its group. Index is the replica's
// ordinal in the group; Name and HostIndex matter only for multi-host
// groups, whose numOfHosts Pods form one replica.
type WorkerReplica struct {
	Name      string
	Index     int
	HostIndex int
}

// BuildHeadPod returns the head Pod of cluster.
func BuildHeadPod(cluster *rayv1.RayCluster, opts BuildOptions) corev1.Pod {
	head := &cluster.Spec.HeadGroupSpec
	tmpl := head.Template.DeepCopy()
	tmpl.Name, tmpl.GenerateName = "", podGenerateName(cluster.Name, rayv1.HeadNode)
	if opts.DeterministicHeadPodName {
		// There is one head, so a fixed name cannot collide; a head being
		// deleted is waited for before the next one is created.
		tmpl.Name, tmpl.GenerateName = podName(cluster.Name, rayv1.HeadNode), ""
	}
	tmpl.Namespace = cluster.Namespace

	params := completeRayStartParams(rayv1.HeadNode, head.RayStartParams, head.Resources, head.Labels, "")
	tmpl.Labels = RayPodLabels(cluster, rayv1.HeadNode, rayv1.RayNodeHeadGroupLabelValue, tmpl.Labels, head.Labels)
	tmpl.Annotations = templateAnnotations(cluster, tmpl.Annotations)

	if cluster.Spec.AutoscalingEnabled() {
		configureAutoscaler(cluster, tmpl, params, &opts)
	}
	configureGCSFaultTolerance(cluster, rayv1.HeadNode, tmpl, params)
	ensureMetricsPort(&tmpl.Spec.Containers[0])
	configureTokenAuth(cluster, &tmpl.Spec)
	tmpl.Spec.Containers = appendContainers(tmpl.Spec.Containers, opts.HeadSidecarContainers)

	pod := buildPod(cluster, tmpl, rayv1.HeadNode, params, &opts)
	// Stamped whatever the upgrade strategy, as KubeRay v1.6 does: Recreate
	// may be set later, and then compares against what the Pods were built
	// from (the hash leaves upgradeStrategy out).
	pod.Annotations[rayv1.UpgradeStrategyRecreateHashKey] = SpecHash(&cluster.Spec)
	pod.Annotations[rayv1.KubeRayVersion] = opts.OperatorVersion
	decorateForBatchScheduler(opts.BatchScheduler, cluster, &pod, rayv1.RayNodeHeadGroupLabelValue)
	return pod
}

// BuildWorkerPod returns a worker Pod of group, the replica and host given
// by r.
func BuildWorkerPod(cluster *rayv1.RayCluster, group *rayv1.WorkerGroupSpec, r WorkerReplica, opts BuildOptions) corev1.Pod {
	tmpl := group.Template.DeepCopy()
	// Worker Pods are many; only a generated name cannot collide.
	tmpl.Name = ""
	tmpl.GenerateName = podGenerateName(cluster.Name+"-"+group.GroupName, rayv1.WorkerNode)
	tmpl.Namespace = cluster.Namespace

	fqdn := HeadServiceFQDN(cluster, opts.ClusterDomain)
	port := headPort(cluster)
	if opts.InjectWaitGCSReady {
		tmpl.Spec.InitContainers = append(tmpl.Spec.InitContainers, waitGCSReadyContainer(&tmpl.Spec.Containers[0], fqdn, port, &opts))
	}

	params := completeRayStartParams(rayv1.WorkerNode, group.RayStartParams, group.Resources, group.Labels, fqdn+":"+port)
	tmpl.Labels = RayPodLabels(cluster, rayv1.WorkerNode, group.GroupName, tmpl.Labels, group.Labels)
	if opts.MultiHostIndexing {
		// The replica index also serves single-host multi-slice setups.
		tmpl.Labels[rayv1.RayWorkerReplicaIndexKey] = strconv.Itoa(r.Index)
		if group.Hosts() > 1 {
			tmpl.Labels[rayv1.RayWorkerReplicaNameKey] = r.Name
			tmpl.Labels[rayv1.RayHostIndexKey] = strconv.Itoa(r.HostIndex)
		}
	}
	tmpl.Annotations = templateAnnotations(cluster, tmpl.Annotations)
	configureGCSFaultTolerance(cluster, rayv1.WorkerNode, tmpl, params)
	ensureMetricsPort(&tmpl.Spec.Containers[0])
	if cluster.Spec.AutoscalingEnabled() && AutoscalerV2(&cluster.Spec) {
		setRestartPolicyNever(&tmpl.Spec)
	}
	configureTokenAuth(cluster, &tmpl.Spec)
	tmpl.Spec.Containers = appendContainers(tmpl.Spec.Containers, opts.WorkerSidecarContainers)

	pod := buildPod(cluster, tmpl, rayv1.WorkerNode, params, &opts)
	decorateForBatchScheduler(opts.BatchScheduler, cluster, &pod, group.GroupName)
	return pod
}

// buildPod finishes a head or worker template that is already private to
// this call: volumes, the Ray command, env vars, probes, ownership.
func buildPod(cluster *rayv1.RayCluster, tmpl *corev1.PodTemplateSpec, nodeType rayv1.RayNodeType, params map[string]string, opts *BuildOptions) corev1.Pod {
	creator := creatorKind(cluster)
	if creator == "RayService" {
		// Workers' readiness probes gate Serve traffic; the head starts out
		// of rotation until the RayService controller admits it.
		serving := "true"
		if nodeType == rayv1.HeadNode {
			serving = "false"
		}
		tmpl.Labels[rayv1.RayClusterServingServiceLabelKey] = serving
	}
	pod := corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: tmpl.ObjectMeta,
		Spec:       tmpl.Spec,
	}
	pod.OwnerReferences = []metav1.OwnerReference{OwnerReference(cluster)}
	ray := &pod.Spec.Containers[0]

	// The object store lives in /dev/shm; the container runtime's 64Mi
	// default would push it to disk.
	if _, ok := params[paramPlasmaDirectory]; !ok {
		addEmptyDir(&pod.Spec, ray, sharedMemoryVolumeName, sharedMemoryMountPath, corev1.StorageMediumMemory)
	}
	if nodeType == rayv1.HeadNode && cluster.Spec.AutoscalingEnabled() {
		// The head's dashboard reads the autoscaler's event log.
		addEmptyDir(&pod.Spec, ray, rayLogVolumeName, rayLogMountPath, corev1.StorageMediumDefault)
		if i := ContainerIndex(pod.Spec.Containers, AutoscalerContainerName); i >= 0 {
			addEmptyDir(&pod.Spec, &pod.Spec.Containers[i], rayLogVolumeName, rayLogMountPath, corev1.StorageMediumDefault)
		}
	}

	rayStartCmd := GenerateRayStartCommand(nodeType, params, ray.Resources)
	setRayCommand(ray, rayStartCmd, pod.Annotations[rayv1.RayOverwriteContainerCmdAnnotationKey], opts)

	fqdn := HeadServiceFQDN(cluster, opts.ClusterDomain)
	for i := range pod.Spec.InitContainers {
		setInitContainerEnv(&pod.Spec.InitContainers[i], fqdn)
	}
	setRayContainerEnv(ray, nodeEnv{
		nodeType:    nodeType,
		fqdnRayIP:   fqdn,
		headPort:    headPort(cluster),
		rayStartCmd: rayStartCmd,
		creator:     creator,
		opts:        opts,
	})
	if opts.InjectProbes {
		setDefaultProbes(ray, nodeType, params, creator, cluster.Spec.RayVersion, opts.Probes)
	}
	return pod
}

// setRayCommand replaces the Ray container's command with the generated
// `ray start`, keeping a user command that does not start Ray as a prefix.
// A command that already runs `ray start`, or the overwrite annotation,
// leaves the container as the user wrote it.
func setRayCommand(ray *corev1.Container, rayStartCmd, overwriteAnnotation string, opts *BuildOptions) {
	if strings.EqualFold(overwriteAnnotation, "true") {
		return
	}
	user := strings.Join(append(append([]string(nil), ray.Command...), ray.Args...), " ")
	if strings.Contains(user, "ray start") {
		return
	}
	generated := fmt.Sprintf("ulimit -n ${%s:-65536}; %s", EnvRayStartUlimitOpenFiles, rayStartCmd)
	if user != "" {
		// `ray start --block` never returns, so the user's part runs first.
		generated = user + " && " + generated
	}
	ray.Command = opts.ContainerCommand()
	ray.Args = []string{generated}
}

// waitGCSReadyContainer keeps a worker from starting Ray before the head's
// GCS answers; otherwise the raylet exits and the Pod restarts in a loop.
// It runs from the Ray image with the Ray container's env and mounts (TLS
// settings live there) but fixed small resources: it only polls.
func waitGCSReadyContainer(ray *corev1.Container, fqdn, port string, opts *BuildOptions) corev1.Container {
	address := fqdn + ":" + port
	script := fmt.Sprintf(`SECONDS=0
while true; do
  if (( SECONDS <= 120 )); then
    if ray health-check --address %[1]s > /dev/null 2>&1; then echo "GCS is ready."; break; fi
    echo "$SECONDS seconds elapsed: Waiting for GCS to be ready."
  else
    if ray health-check --address %[1]s; then echo "GCS is ready. Any error messages above can be safely ignored."; break; fi
    echo "$SECONDS seconds elapsed: Still waiting for GCS to be ready. See https://docs.ray.io/en/master/cluster/kubernetes/troubleshooting.html."
  fi
  sleep 5
done`, address)
	fixed := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("200m"),
		corev1.ResourceMemory: resource.MustParse("256Mi"),
	}
	c := ray.DeepCopy()
	return corev1.Container{
		Name:            WaitGCSReadyContainerName,
		Image:           c.Image,
		ImagePullPolicy: c.ImagePullPolicy,
		Command:         opts.ContainerCommand(),
		Args:            []string{script},
		SecurityContext: c.SecurityContext,
		Env:             c.Env,
		VolumeMounts:    c.VolumeMounts,
		Resources:       corev1.ResourceRequirements{Limits: fixed, Requests: fixed.DeepCopy()},
	}
}

// RayPodLabels are the labels of a Ray Pod: the template's, then the
// group's Ray node labels, then KubeRay's. ray.io/cluster, node-type and
// group cannot be overridden (the controller lists Pods by them), nor can
// managed-by (the manager's cache only sees Pods carrying it).
func RayPodLabels(cluster *rayv1.RayCluster, nodeType rayv1.RayNodeType, group string, templateLabels, groupLabels map[string]string) map[string]string {
	labels := map[string]string{
		rayv1.RayNodeLabelKey:  rayv1.RayNodeLabelValue,
		rayv1.RayIDLabelKey:    CheckLabel(cluster.Name + "-" + string(nodeType)),
		builder.LabelName:      ApplicationName,
		builder.LabelCreatedBy: ComponentName,
	}
	maps.Copy(labels, templateLabels)
	maps.Copy(labels, groupLabels)
	labels[rayv1.RayClusterLabelKey] = cluster.Name
	labels[rayv1.RayNodeTypeLabelKey] = string(nodeType)
	labels[rayv1.RayNodeGroupLabelKey] = group
	labels[builder.LabelManagedBy] = builder.ManagedByGantry
	return labels
}

func templateAnnotations(cluster *rayv1.RayCluster, annotations map[string]string) map[string]string {
	if annotations == nil {
		annotations = map[string]string{}
	}
	if v := cluster.Annotations[rayv1.RayOverwriteContainerCmdAnnotationKey]; strings.EqualFold(v, "true") {
		annotations[rayv1.RayOverwriteContainerCmdAnnotationKey] = "true"
	}
	return annotations
}

// ensureMetricsPort exposes the metrics port for Prometheus unless the
// user named one.
func ensureMetricsPort(c *corev1.Container) {
	for _, p := range c.Ports {
		if p.Name == MetricsPortName {
			return
		}
	}
	c.Ports = append(c.Ports, corev1.ContainerPort{Name: MetricsPortName, ContainerPort: DefaultMetricsPort})
}

func appendContainers(containers, extra []corev1.Container) []corev1.Container {
	for i := range extra {
		containers = append(containers, *extra[i].DeepCopy())
	}
	return containers
}

func ContainerIndex(containers []corev1.Container, name string) int {
	for i := range containers {
		if containers[i].Name == name {
			return i
		}
	}
	return -1
}

func hasVolume(volumes []corev1.Volume, name string) bool {
	for i := range volumes {
		if volumes[i].Name == name {
			return true
		}
	}
	return false
}

// addEmptyDir mounts an emptyDir at path unless something is mounted there
// already. A memory-backed volume is capped at the container's memory so
// it cannot outgrow the Pod's own limit.
func addEmptyDir(spec *corev1.PodSpec, c *corev1.Container, name, path string, medium corev1.StorageMedium) {
	for _, m := range c.VolumeMounts {
		if m.MountPath == path {
			return
		}
	}
	if !hasVolume(spec.Volumes, name) {
		var sizeLimit *resource.Quantity
		if medium == corev1.StorageMediumMemory {
			if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
				sizeLimit = ptr.To(q.DeepCopy())
			} else if q, ok := c.Resources.Requests[corev1.ResourceMemory]; ok {
				sizeLimit = ptr.To(q.DeepCopy())
			}
		}
		spec.Volumes = append(spec.Volumes, corev1.Volume{
			Name:         name,
			VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: medium, SizeLimit: sizeLimit}},
		})
	}
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: path})
}

func OwnerReference(cluster *rayv1.RayCluster) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         rayv1.GroupVersion.String(),
		Kind:               rayv1.RayClusterKind,
		Name:               cluster.Name,
		UID:                cluster.UID,
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}
}

// podGenerateName is "<prefix>-<type>-" with the prefix cut to 50
// characters, leaving room for the suffix the API server appends.
func podGenerateName(prefix string, nodeType rayv1.RayNodeType) string {
	return podName(prefix, nodeType) + "-"
}

// podName is "<prefix>-<type>" in lower case with the prefix cut to 50
// characters, KubeRay's utils.PodName for a fixed name.
func podName(prefix string, nodeType rayv1.RayNodeType) string {
	const maxPrefix = 50
	if len(prefix) > maxPrefix {
		prefix = prefix[:maxPrefix]
	}
	return strings.ToLower(prefix + "-" + string(nodeType))
}

// CheckName shortens s to 50 characters by dropping its start and makes it
// begin with a letter, as KubeRay does for the names of generated objects;
// Gantry must derive the same names to find objects KubeRay created.
func CheckName(s string) string {
	const maxLength = 50
	if len(s) > maxLength {
		s = s[len(s)-maxLength:]
	}
	return fixFirstChar(s)
}

// CheckLabel shortens a label value to 63 characters the same way; label
// values may start with a digit, so only punctuation is replaced.
func CheckLabel(s string) string {
	const maxLength = 63
	if len(s) > maxLength {
		s = s[len(s)-maxLength:]
	}
	if s != "" && !isAlphanumeric(s[0]) {
		return "r" + s[1:]
	}
	return s
}

func fixFirstChar(s string) string {
	if s != "" && !isLetter(s[0]) {
		return "r" + s[1:]
	}
	return s
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isAlphanumeric(c byte) bool { return isLetter(c) || c >= '0' && c <= '9' }

// SpecHash fingerprints the spec fields whose change means the Pods are
// stale under upgradeStrategy Recreate. Replica counts and workersToDelete
// are left out (the autoscaler changes them all the time), and so is the
// upgrade strategy itself. The format (base32 of a SHA-1 over the JSON) is
// KubeRay's.
func SpecHash(spec *rayv1.RayClusterSpec) string {
	s := spec.DeepCopy()
	// Like KubeRay v1.6, tolerations and scheduling gates are left out:
	// Kueue and similar controllers add them after creation.
	s.HeadGroupSpec.Template.Spec.Tolerations = nil
	s.HeadGroupSpec.Template.Spec.SchedulingGates = nil
	for i := range s.WorkerGroupSpecs {
		g := &s.WorkerGroupSpecs[i]
		g.Replicas, g.MinReplicas, g.MaxReplicas = nil, nil, nil
		g.ScaleStrategy.WorkersToDelete = nil
		g.Template.Spec.Tolerations = nil
		g.Template.Spec.SchedulingGates = nil
	}
	s.UpgradeStrategy = nil
	raw, err := kubeRaySpecJSON(s)
	if err != nil {
		// A RayClusterSpec holds only JSON-safe types.
		panic(fmt.Sprintf("marshalling RayClusterSpec: %v", err))
	}
	sum := sha1.Sum(raw) //nolint:gosec // see import
	return base32.HexEncoding.EncodeToString(sum[:])
}

// kubeRaySpecJSON is spec's JSON as KubeRay's types write it, so that
// SpecHash gives KubeRay's hash for the same spec: a cluster or Pod that
// KubeRay annotated is recognised as unchanged after a migration, and the
// other way round. The field order is the same; the only difference is
// that KubeRay's rayStartParams (head and worker groups), minReplicas and
// maxReplicas have no omitempty, so they are written as null (or {}) where
// Gantry's encoding leaves them out. The oracle test
// (test/oracle/kuberay) checks the result against KubeRay's own hash.
func kubeRaySpecJSON(spec *rayv1.RayClusterSpec) ([]byte, error) {
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	top, err := decodeObject(raw)
	if err != nil {
		return nil, err
	}
	if i := top.index("headGroupSpec"); i >= 0 {
		head, err := decodeObject(top[i].value)
		if err != nil {
			return nil, err
		}
		head = head.insertBefore("rayStartParams", mapJSON(spec.HeadGroupSpec.RayStartParams), "serviceType")
		top[i].value = head.encode()
	}
	if i := top.index("workerGroupSpecs"); i >= 0 {
		var groups []json.RawMessage
		if err := json.Unmarshal(top[i].value, &groups); err != nil {
			return nil, err
		}
		for j := range groups {
			g, err := decodeObject(groups[j])
			if err != nil {
				return nil, err
			}
			group := &spec.WorkerGroupSpecs[j]
			g = g.insertBefore("minReplicas", ptrJSON(group.MinReplicas), "maxReplicas", "idleTimeoutSeconds", "priority", "resources", "labels", "rayStartParams", "template")
			g = g.insertBefore("maxReplicas", ptrJSON(group.MaxReplicas), "idleTimeoutSeconds", "priority", "resources", "labels", "rayStartParams", "template")
			g = g.insertBefore("rayStartParams", mapJSON(group.RayStartParams), "template")
			groups[j] = g.encode()
		}
		if top[i].value, err = json.Marshal(groups); err != nil {
			return nil, err
		}
	}
	return top.encode(), nil
}

// jsonObject is a JSON object with its keys in order.
type jsonObject []jsonField

type jsonField struct {
	key   string
	value json.RawMessage
}

func decodeObject(raw []byte) (jsonObject, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	var out jsonObject
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, jsonField{key: tok.(string), value: v})
	}
	return out, nil
}

func (o jsonObject) index(key string) int {
	for i, f := range o {
		if f.key == key {
			return i
		}
	}
	return -1
}

// insertBefore adds key unless present, before the first of next that is
// present, else at the end.
func (o jsonObject) insertBefore(key string, value json.RawMessage, next ...string) jsonObject {
	if o.index(key) >= 0 {
		return o
	}
	at := len(o)
	for _, n := range next {
		if i := o.index(n); i >= 0 {
			at = i
			break
		}
	}
	return slices.Insert(o, at, jsonField{key: key, value: value})
}

func (o jsonObject) encode() json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(f.value)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// mapJSON is a map as encoding/json writes it without omitempty.
func mapJSON(m map[string]string) json.RawMessage {
	raw, _ := json.Marshal(m)
	return raw
}

func ptrJSON(p *int32) json.RawMessage {
	raw, _ := json.Marshal(p)
	return raw
}
