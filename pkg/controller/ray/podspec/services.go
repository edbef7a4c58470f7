package podspec

import (
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/framework/builder"
)

// HeadlessServiceSuffix names the worker Service of multi-host groups:
// "<cluster>-headless".
const HeadlessServiceSuffix = "headless"

// defaultServiceAppProtocol is KubeRay's appProtocol on head Service ports.
const defaultServiceAppProtocol = "tcp"

// ErrNoServePort means the head exposes no port for Ray Serve (its
// container declares ports, none of them serving ports), so no Serve
// Service can be built. The message is KubeRay's.
var ErrNoServePort = errors.New("Please specify a port named 'serve' (or with the prefix 'serve-', e.g. 'serve-grpc') " +
	"in the Ray head container; otherwise, the Kubernetes service for Ray Serve will not be created.")

// HeadlessServiceName is "<cluster>-headless".
func HeadlessServiceName(cluster *rayv1.RayCluster) string {
	return cluster.Name + "-" + HeadlessServiceSuffix
}

// ServeServiceName is "<cluster>-serve-svc", never shortened, as
// KubeRay's GenerateServeServiceName.
func ServeServiceName(cluster *rayv1.RayCluster) string {
	return cluster.Name + "-serve-svc"
}

// NeedsHeadlessService reports whether any worker group is multi-host: its
// Pods address each other by name through the headless Service.
func NeedsHeadlessService(cluster *rayv1.RayCluster) bool {
	for i := range cluster.Spec.WorkerGroupSpecs {
		if cluster.Spec.WorkerGroupSpecs[i].NumOfHosts > 1 {
			return true
		}
	}
	return false
}

// ServeServiceEnabled reports whether the user asked for a Serve Service on
// a plain RayCluster (RayService makes its own).
func ServeServiceEnabled(cluster *rayv1.RayCluster) bool {
	return cluster.Annotations[rayv1.EnableServeServiceKey] == rayv1.EnableServeServiceTrue
}

// headServiceSelectorKeys are the head Pod labels the head Service selects on.
var headServiceSelectorKeys = []string{
	rayv1.RayClusterLabelKey,
	rayv1.RayNodeTypeLabelKey,
	rayv1.RayIDLabelKey,
	builder.LabelName,
	builder.LabelCreatedBy,
}

// headServiceSelector takes KubeRay's selector keys with the values the
// head Pod really carries. KubeRay uses fixed values, so a user label that
// overrides one of them (allowed on the Pod) left the Service selecting
// nothing; reading them from the Pod's labels keeps the two in step.
func headServiceSelector(cluster *rayv1.RayCluster) map[string]string {
	head := &cluster.Spec.HeadGroupSpec
	podLabels := RayPodLabels(cluster, rayv1.HeadNode, rayv1.RayNodeHeadGroupLabelValue, head.Template.Labels, head.Labels)
	selector := make(map[string]string, len(headServiceSelectorKeys))
	for _, k := range headServiceSelectorKeys {
		selector[k] = podLabels[k]
	}
	return selector
}

// BuildHeadService returns the head Service in full (for server-side
// apply): every port the head exposes plus KubeRay's defaults, sorted by
// name. By default it is headless and publishes the head before it is ready
// (there is one head; its address matters more than its health). A
// user-provided spec.headGroupSpec.headService is the starting point: its
// selector is replaced, and operator ports, labels and the
// headServiceAnnotations win over the user's on equal keys.
func BuildHeadService(cluster *rayv1.RayCluster, opts BuildOptions) *corev1.Service {
	selector := headServiceSelector(cluster)
	labels := maps.Clone(selector)
	labels[builder.LabelManagedBy] = builder.ManagedByGantry
	ports := headServicePorts(cluster)
	head := &cluster.Spec.HeadGroupSpec

	var svc *corev1.Service
	if head.HeadService != nil {
		svc = head.HeadService.DeepCopy()
		svc.Status = corev1.ServiceStatus{}
		// Server-owned metadata must not reach an apply request.
		svc.ResourceVersion, svc.UID, svc.CreationTimestamp, svc.ManagedFields = "", "", metav1.Time{}, nil
		svc.Spec.Ports = mergeServicePorts(svc.Spec.Ports, ports)
		if svc.Spec.Type == "" {
			svc.Spec.Type = head.ServiceType
		}
	} else {
		svc = &corev1.Service{Spec: corev1.ServiceSpec{Ports: ports, Type: head.ServiceType}}
		if !opts.HeadClusterIPService && (svc.Spec.Type == "" || svc.Spec.Type == corev1.ServiceTypeClusterIP) {
			svc.Spec.ClusterIP = corev1.ClusterIPNone
			svc.Spec.PublishNotReadyAddresses = true
		}
	}
	svc.TypeMeta = serviceTypeMeta()
	svc.Name = HeadServiceName(cluster)
	svc.Namespace = cluster.Namespace
	svc.Labels = builder.MergeLabels(svc.Labels, labels)
	svc.Annotations = builder.MergeLabels(svc.Annotations, cluster.Spec.HeadServiceAnnotations)
	svc.OwnerReferences = []metav1.OwnerReference{OwnerReference(cluster)}
	svc.Spec.Selector = selector
	return svc
}

// BuildHeadlessService returns the headless Service that gives every
// worker Pod a DNS name, for the hosts of multi-host replicas to find each
// other. Not-ready Pods are published: peers must meet while starting.
func BuildHeadlessService(cluster *rayv1.RayCluster) *corev1.Service {
	meta := builder.NewMetadata(HeadlessServiceName(cluster), cluster.Namespace).
		WithLabels(map[string]string{rayv1.RayClusterHeadlessServiceLabelKey: cluster.Name}).
		Build()
	meta.OwnerReferences = []metav1.OwnerReference{OwnerReference(cluster)}
	return builder.HeadlessService(builder.ServiceOptions{
		Meta: meta,
		Selector: map[string]string{
			rayv1.RayClusterLabelKey:  cluster.Name,
			rayv1.RayNodeTypeLabelKey: string(rayv1.WorkerNode),
		},
		PublishNotReadyAddresses: true,
	})
}

// BuildServeService returns the Service for Ray Serve traffic on a plain
// RayCluster: every serving port of the head (IsServingPort), sorted by
// name, selecting every Pod of the cluster (each runs a Serve proxy).
func BuildServeService(cluster *rayv1.RayCluster) (*corev1.Service, error) {
	numbers := ServicePortNumbers(cluster)
	var ports []corev1.ServicePort
	for _, name := range slices.Sorted(maps.Keys(numbers)) {
		if IsServingPort(name) {
			ports = append(ports, corev1.ServicePort{Name: name, Port: numbers[name], Protocol: corev1.ProtocolTCP})
		}
	}
	if len(ports) == 0 {
		return nil, ErrNoServePort
	}
	meta := builder.NewMetadata(ServeServiceName(cluster), cluster.Namespace).
		WithLabels(map[string]string{
			rayv1.RayOriginatedFromCRNameLabelKey:  cluster.Name,
			rayv1.RayOriginatedFromCRDLabelKey:     rayv1.RayClusterKind,
			rayv1.RayClusterServingServiceLabelKey: cluster.Name + "-serve",
		}).
		Build()
	meta.OwnerReferences = []metav1.OwnerReference{OwnerReference(cluster)}
	return builder.Service(builder.ServiceOptions{
		Meta:     meta,
		Type:     cluster.Spec.HeadGroupSpec.ServiceType,
		Selector: map[string]string{rayv1.RayClusterLabelKey: cluster.Name},
		Ports:    ports,
	}), nil
}

// ServicePortNumbers maps port names to numbers as KubeRay's
// getServicePorts: the head container's ports (an unnamed one as
// "<port>-port"), or KubeRay's defaults when it declares none; then the
// metrics port, unless one is named so.
func ServicePortNumbers(cluster *rayv1.RayCluster) map[string]int32 {
	ports := map[string]int32{}
	if cs := cluster.Spec.HeadGroupSpec.Template.Spec.Containers; len(cs) > 0 {
		for _, p := range cs[0].Ports {
			name := p.Name
			if name == "" {
				name = strconv.Itoa(int(p.ContainerPort)) + "-port"
			}
			ports[name] = p.ContainerPort
		}
	}
	if len(ports) == 0 {
		ports = map[string]int32{
			ClientPortName:    DefaultClientPort,
			GcsServerPortName: DefaultGcsServerPort,
			DashboardPortName: DefaultDashboardPort,
			MetricsPortName:   DefaultMetricsPort,
			ServingPortName:   DefaultServingPort,
		}
	}
	if _, ok := ports[MetricsPortName]; !ok {
		ports[MetricsPortName] = DefaultMetricsPort
	}
	return ports
}

// IsServingPort reports whether a head port carries Ray Serve traffic:
// KubeRay's "serve", or "serve-<protocol>" such as serve-grpc.
func IsServingPort(name string) bool {
	return name == ServingPortName || strings.HasPrefix(name, ServingPortName+"-")
}

// headServicePorts are the head Service's ports sorted by name, so that
// the desired object is stable and an apply never reorders them.
func headServicePorts(cluster *rayv1.RayCluster) []corev1.ServicePort {
	numbers := ServicePortNumbers(cluster)
	ports := make([]corev1.ServicePort, 0, len(numbers))
	for _, name := range slices.Sorted(maps.Keys(numbers)) {
		ports = append(ports, corev1.ServicePort{
			Name:        name,
			Port:        numbers[name],
			Protocol:    corev1.ProtocolTCP,
			AppProtocol: ptr.To(defaultServiceAppProtocol),
		})
	}
	return ports
}

// mergeServicePorts merges operator ports into user ports by name (the
// operator's win, so workers always reach the GCS), sorted by name, with
// unnamed user ports last.
func mergeServicePorts(user, operator []corev1.ServicePort) []corev1.ServicePort {
	byName := map[string]corev1.ServicePort{}
	var unnamed []corev1.ServicePort
	for _, list := range [][]corev1.ServicePort{user, operator} {
		for _, p := range list {
			if p.Name == "" {
				unnamed = append(unnamed, *p.DeepCopy())
				continue
			}
			byName[p.Name] = *p.DeepCopy()
		}
	}
	out := make([]corev1.ServicePort, 0, len(byName)+len(unnamed))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, byName[name])
	}
	return append(out, unnamed...)
}

func serviceTypeMeta() metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}
}
