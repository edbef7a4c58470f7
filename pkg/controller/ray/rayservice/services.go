package rayservice

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	"github.com/gantry-dev/gantry/pkg/framework/builder"
)

// reconcileServices points the RayService's head and Serve Services at
// cluster, creating them the first time. A Service is changed only when it
// selects another cluster: that update is the traffic switch.
func (r *Reconciler) reconcileServices(ctx context.Context, s *scope, cluster *rayv1.RayCluster) (*corev1.Service, *corev1.Service, error) {
	head := BuildHeadService(s.Object, cluster, r.cfg.Build)
	serve, err := BuildServeService(s.Object, cluster)
	if err != nil {
		return nil, nil, err
	}
	if head, err = r.ensureService(ctx, s, head); err != nil {
		return nil, nil, err
	}
	if serve, err = r.ensureService(ctx, s, serve); err != nil {
		return nil, nil, err
	}
	return head, serve, nil
}

// ensureService creates want, or switches the existing Service to want's
// cluster. A Service of that name the RayService does not control (a
// user's) is left alone, with a Warning event: it is never taken over.
func (r *Reconciler) ensureService(ctx context.Context, s *scope, want *corev1.Service) (*corev1.Service, error) {
	svc := s.Object
	key := types.NamespacedName{Namespace: want.Namespace, Name: want.Name}
	existing, err := r.getService(ctx, key)
	if err != nil {
		return nil, err
	}
	if existing == nil {
		err := r.client.Create(ctx, want)
		if apierrors.IsAlreadyExists(err) {
			// Not in the cache: one without Gantry's label, read directly.
			if existing, err = r.getServiceUncached(ctx, key); err != nil {
				return nil, err
			}
		} else if err != nil {
			r.recorder.Warning(svc, string(rayv1.FailedToCreateService), "Failed to create the service %s/%s, %v", want.Namespace, want.Name, err)
			return nil, err
		} else {
			s.Events.Add(string(rayv1.CreatedService), "Created the service %s/%s", want.Namespace, want.Name)
			return want, nil
		}
	}
	if !metav1.IsControlledBy(existing, svc) {
		r.recorder.Warning(svc, string(rayv1.FailedToUpdateService),
			"Service %s/%s already exists and is not owned by this RayService; not modifying it", existing.Namespace, existing.Name)
		return nil, fmt.Errorf("service %s/%s is not owned by RayService %s", existing.Namespace, existing.Name, svc.Name)
	}
	switched := existing.Spec.Selector[rayv1.RayClusterLabelKey] != want.Spec.Selector[rayv1.RayClusterLabelKey]
	// One KubeRay made lacks Gantry's label, so the cache does not see it:
	// it gets the label with the next write, or alone.
	labelled := existing.Labels[builder.LabelManagedBy] == builder.ManagedByGantry
	if !switched && labelled {
		return existing, nil
	}
	updated := existing.DeepCopy()
	updated.Labels = builder.MergeLabels(updated.Labels, want.Labels)
	if switched {
		spec := *want.Spec.DeepCopy()
		// The allocated addresses are immutable: they carry over.
		spec.ClusterIP, spec.ClusterIPs = existing.Spec.ClusterIP, existing.Spec.ClusterIPs
		spec.IPFamilies, spec.IPFamilyPolicy = existing.Spec.IPFamilies, existing.Spec.IPFamilyPolicy
		if spec.HealthCheckNodePort == 0 {
			spec.HealthCheckNodePort = existing.Spec.HealthCheckNodePort
		}
		updated.Spec = spec
	}
	if err := r.client.Update(ctx, updated); err != nil {
		r.recorder.Warning(svc, string(rayv1.FailedToUpdateService), "Failed to update the service %s/%s, %v", existing.Namespace, existing.Name, err)
		return nil, err
	}
	if switched {
		s.Events.Add(string(rayv1.UpdatedService), "Updated the service %s/%s to select RayCluster %s",
			existing.Namespace, existing.Name, want.Spec.Selector[rayv1.RayClusterLabelKey])
	}
	return updated, nil
}

func (r *Reconciler) getService(ctx context.Context, key types.NamespacedName) (*corev1.Service, error) {
	svc := &corev1.Service{}
	if err := r.client.Get(ctx, key, svc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return svc, nil
}

func (r *Reconciler) getServiceUncached(ctx context.Context, key types.NamespacedName) (*corev1.Service, error) {
	svc := &corev1.Service{}
	if err := r.apiReader.Get(ctx, key, svc); err != nil {
		return nil, err
	}
	return svc, nil
}

// BuildHeadService is "<rayservice>-head-svc": the cluster's own head
// Service under the RayService's name and labels, selecting that
// cluster's head, so clients keep one address across upgrades. The
// cluster's headServiceAnnotations are its own head Service's, not this
// one's (as KubeRay's); spec.headGroupSpec.headService's annotations are.
func BuildHeadService(svc *rayv1.RayService, cluster *rayv1.RayCluster, opts podspec.BuildOptions) *corev1.Service {
	withoutAnnotations := *cluster
	withoutAnnotations.Spec.HeadServiceAnnotations = nil
	head := podspec.BuildHeadService(&withoutAnnotations, opts)
	head.Name = headServiceName(svc)
	head.Namespace = svc.Namespace
	head.Labels = map[string]string{
		rayv1.RayOriginatedFromCRNameLabelKey: svc.Name,
		rayv1.RayOriginatedFromCRDLabelKey:    rayv1.RayServiceKind,
		rayv1.RayNodeTypeLabelKey:             string(rayv1.HeadNode),
		rayv1.RayIDLabelKey:                   podspec.CheckLabel(svc.Name + "-" + string(rayv1.HeadNode)),
		builder.LabelManagedBy:                builder.ManagedByGantry,
	}
	head.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(svc, rayv1.RayServiceGroupVersionKind)}
	return head
}

// BuildServeService is "<rayservice>-serve-svc": the head's serving ports
// ("serve", "serve-*"), selecting the cluster's Pods labelled
// ray.io/serve=true. spec.serveService is the starting point when set:
// its selector is replaced, its ports win by name.
func BuildServeService(svc *rayv1.RayService, cluster *rayv1.RayCluster) (*corev1.Service, error) {
	numbers := podspec.ServicePortNumbers(cluster)
	var ports []corev1.ServicePort
	for _, name := range slices.Sorted(maps.Keys(numbers)) {
		if podspec.IsServingPort(name) {
			ports = append(ports, corev1.ServicePort{Name: name, Port: numbers[name], Protocol: corev1.ProtocolTCP})
		}
	}
	labels := map[string]string{
		rayv1.RayOriginatedFromCRNameLabelKey:  svc.Name,
		rayv1.RayOriginatedFromCRDLabelKey:     rayv1.RayServiceKind,
		rayv1.RayClusterServingServiceLabelKey: svc.Name + "-serve",
		builder.LabelManagedBy:                 builder.ManagedByGantry,
	}
	selector := map[string]string{
		rayv1.RayClusterLabelKey:               cluster.Name,
		rayv1.RayClusterServingServiceLabelKey: rayv1.EnableRayClusterServingServiceTrue,
	}
	serviceType := svc.Spec.RayClusterSpec.HeadGroupSpec.ServiceType

	var out *corev1.Service
	if user := svc.Spec.ServeService; user != nil {
		out = user.DeepCopy()
		out.Status = corev1.ServiceStatus{}
		out.ResourceVersion, out.UID, out.CreationTimestamp, out.ManagedFields = "", "", metav1.Time{}, nil
		if len(ports) > 0 {
			byName := map[string]corev1.ServicePort{}
			for _, p := range out.Spec.Ports {
				byName[p.Name] = p
			}
			merged := make([]corev1.ServicePort, 0, len(ports))
			for _, p := range ports {
				if u, ok := byName[p.Name]; ok {
					p = u
				}
				merged = append(merged, p)
			}
			out.Spec.Ports = merged
		}
		if out.Labels == nil {
			out.Labels = map[string]string{}
		}
		maps.Copy(out.Labels, labels)
		out.Name = serveServiceName(svc)
		if out.Spec.Type == "" {
			out.Spec.Type = serviceType
		}
	} else {
		if len(ports) == 0 {
			return nil, podspec.ErrNoServePort
		}
		out = &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: serveServiceName(svc), Labels: labels},
			Spec:       corev1.ServiceSpec{Ports: ports, Type: serviceType},
		}
	}
	out.Namespace = svc.Namespace
	out.Spec.Selector = selector
	out.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(svc, rayv1.RayServiceGroupVersionKind)}
	return out, nil
}

// countServeEndpoints is the number of distinct ready Pods in the Serve
// Service's EndpointSlices (a dual-stack Pod appears in two), from the
// cache. The cache holds only slices labelled managed-by=gantry, which the
// EndpointSlice controller copies from the Service; a Serve Service
// KubeRay made has none until Gantry labelled it and the controller
// followed. So where the cache finds none but the status counted some,
// the API server is asked before Ready turns False.
func (r *Reconciler) countServeEndpoints(ctx context.Context, key types.NamespacedName, counted int32) (int32, error) {
	n, err := readyServeEndpoints(ctx, r.client, key)
	if err != nil || n > 0 || counted == 0 {
		return n, err
	}
	return readyServeEndpoints(ctx, r.apiReader, key)
}

func readyServeEndpoints(ctx context.Context, reader client.Reader, key types.NamespacedName) (int32, error) {
	slices := &discoveryv1.EndpointSliceList{}
	if err := reader.List(ctx, slices, client.InNamespace(key.Namespace),
		client.MatchingLabels{discoveryv1.LabelServiceName: key.Name}); err != nil {
		return 0, err
	}
	ready := map[types.UID]struct{}{}
	for _, sl := range slices.Items {
		for _, ep := range sl.Endpoints {
			if ptr.Deref(ep.Conditions.Ready, false) && ep.TargetRef != nil && ep.TargetRef.UID != "" {
				ready[ep.TargetRef.UID] = struct{}{}
			}
		}
	}
	return int32(len(ready)), nil //nolint:gosec // bounded by the Pods of two clusters
}
