package raycluster

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	"github.com/gantry-dev/gantry/pkg/framework/apply"
)

// ensureOwned writes an object the cluster owns wholesale (a Service or the
// Ingress; their builders label them managed-by=gantry, which the manager's
// cache needs) only when it is missing or this cluster controls it,
// sending nothing when the live object already matches, and reports
// whether the object was new. Beyond KubeRay, whose objects are
// create-only, a changed annotation or port reaches the cluster and edits
// by others to fields Gantry owns are taken back.
//
// An object of that name the cluster does not control (a user's own
// Service or Ingress, or another cluster's) is never modified, as in
// KubeRay: taking it over would rewrite it and, through the owner
// reference, garbage-collect it with the cluster. ensureOwned then returns
// a *notOwnedError naming it. The cache holds only managed objects, so a
// miss there is asked of the API server before anything is written: one a
// user made, or one KubeRay made before the migration (the cluster's
// owner reference, no managed-by label; it is the cluster's and is
// updated), is seen before the apply.
func (r *Reconciler) ensureOwned(ctx context.Context, kind string, desired client.Object) (created bool, err error) {
	a := r.applier
	a.Uncached = r.apiReader
	res, _, err := a.EnsureOwn(ctx, desired)
	return r.owned(kind, desired, res, err)
}

// headServiceApplier writes the head Service, which it may create with a
// plain create (reconcileHeadService): its applies first move what the
// create wrote into the apply entry, reading managedFields past the cache.
func (r *Reconciler) headServiceApplier() apply.Applier {
	a := r.applier
	a.Uncached = r.apiReader
	a.Creates = true
	return a
}

// owned turns EnsureOwn's result into ensureOwned's.
func (r *Reconciler) owned(kind string, desired client.Object, res apply.Result, err error) (bool, error) {
	if err == nil && res == apply.Foreign {
		return false, &notOwnedError{kind: kind, key: client.ObjectKeyFromObject(desired)}
	}
	return res == apply.Created, err
}

// notOwnedError says that an object the cluster would own exists and is
// not the cluster's, in the words of KubeRay v1.7.0's Warning for such an
// Ingress (reconcileIngressKubernetes).
type notOwnedError struct {
	kind string
	key  client.ObjectKey
}

func (e *notOwnedError) Error() string {
	return fmt.Sprintf("%s %s already exists and is not owned by this RayCluster; not modifying it", e.kind, e.key)
}

// warnNotOwned records err as a Warning with reason on the cluster and
// returns nil when it is a *notOwnedError (the object is left as it is and
// the reconcile goes on, as KubeRay does for the Ingress and the Serve
// Service); any other error is returned.
func (r *Reconciler) warnNotOwned(s *scope, reason string, err error) error {
	var notOwned *notOwnedError
	if !errors.As(err, &notOwned) {
		return err
	}
	r.recorder.Warning(s.Object, reason, "%s", notOwned.Error())
	return nil
}

// ensureOwnRBAC writes the autoscaler's ServiceAccount, Role or RoleBinding
// only when it is missing or this cluster's: one that already exists under
// that name (a user's ServiceAccount with IRSA or Workload Identity
// annotations, say) is used as it is, as KubeRay does, and never taken
// over, which would garbage-collect it with the cluster.
// The cache holds only managed objects, so a miss there is asked of the
// API server before anything is written.
func (r *Reconciler) ensureOwnRBAC(ctx context.Context, desired client.Object) (created bool, err error) {
	a := r.applier
	a.Uncached = r.apiReader
	res, _, err := a.EnsureOwn(ctx, desired)
	return res == apply.Created, err
}

// ReasonAutoscalerServiceAccountNotFound is KubeRay's Warning for a head
// template naming a ServiceAccount that does not exist.
const ReasonAutoscalerServiceAccountNotFound = "AutoscalerServiceAccountNotFound"

// checkAutoscalerServiceAccount is KubeRay's check of a ServiceAccount the
// head template names when the autoscaler is on: the user owns that
// account (an operator-made one breaks RayService's rolling updates,
// ray-project/kuberay#1123), so a missing one is not created but reported,
// with KubeRay's event, and the reconcile stops before the Pods. Only
// Gantry's own ServiceAccounts are cached, so the API server is asked.
func (r *Reconciler) checkAutoscalerServiceAccount(ctx context.Context, s *scope) error {
	cluster := s.Object
	name := cluster.Spec.HeadGroupSpec.Template.Spec.ServiceAccountName
	if !cluster.Spec.AutoscalingEnabled() || name == "" {
		return nil
	}
	key := client.ObjectKey{Namespace: cluster.Namespace, Name: name}
	err := r.apiReader.Get(ctx, key, &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}})
	if err == nil || !apierrors.IsNotFound(err) {
		return err
	}
	msg := fmt.Sprintf("If users specify ServiceAccountName for the head Pod, they need to create a ServiceAccount themselves. "+
		"However, ServiceAccount %s is not found. Please create one. "+
		"See the PR description of https://github.com/ray-project/kuberay/pull/1128 for more details.", name)
	r.recorder.Warning(cluster, ReasonAutoscalerServiceAccountNotFound, "Failed to reconcile RayCluster %s/%s. %s", cluster.Namespace, cluster.Name, msg)
	return fmt.Errorf("%s: %w", msg, err)
}

func (r *Reconciler) reconcileAutoscalerRBAC(ctx context.Context, s *scope) error {
	cluster := s.Object
	if !cluster.Spec.AutoscalingEnabled() {
		return nil
	}
	rbac := BuildAutoscalerRBAC(cluster)
	if rbac.ServiceAccount != nil {
		if created, err := r.ensureOwnRBAC(ctx, rbac.ServiceAccount); err != nil {
			return err
		} else if created {
			s.Events.Add("CreatedServiceAccount", "Created ServiceAccount %s", rbac.ServiceAccount.Name)
		}
	}
	if created, err := r.ensureOwnRBAC(ctx, rbac.Role); err != nil {
		return err
	} else if created {
		s.Events.Add("CreatedRole", "Created Role %s", rbac.Role.Name)
	}
	if created, err := r.ensureOwnRBAC(ctx, rbac.RoleBinding); err != nil {
		return err
	} else if created {
		s.Events.Add("CreatedRoleBinding", "Created RoleBinding %s", rbac.RoleBinding.Name)
	}
	return nil
}

func (r *Reconciler) reconcileHeadService(ctx context.Context, s *scope) error {
	svc := podspec.BuildHeadService(s.Object, r.cfg.Build)
	key := client.ObjectKeyFromObject(svc)
	// A new cluster's head Service is in no cache: it is created with one
	// request, where a read past the cache and an apply would take two
	// (every new cluster pays this before its Pods). A Service that
	// exists there (a user's, or KubeRay's before the migration) makes the
	// create fail and change nothing; it is then read and judged below.
	cached := &corev1.Service{}
	err := r.client.Get(ctx, key, cached)
	switch {
	case err == nil:
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("reading Service %s: %w", key, err)
	default:
		created, err := r.headServiceApplier().Create(ctx, svc)
		if err != nil {
			return err
		}
		if created {
			s.Events.Add(string(rayv1.CreatedService), "Created head Service %s", svc.Name)
			s.headService = svc
			return nil
		}
		cached = nil
	}
	// One read, from the cache or else the API server, serves both the
	// immutable-field check and the ownership check.
	live := cached
	if live == nil {
		if live, err = r.liveService(ctx, key); err != nil {
			return err
		}
	}
	recreated, err := r.deleteHeadServiceIfImmutable(ctx, svc, live)
	if err != nil {
		return err
	}
	if recreated != "" {
		// Deleted and gone; whatever holds the name now (normally
		// nothing) is read again before the apply.
		if live, err = r.liveService(ctx, client.ObjectKeyFromObject(svc)); err != nil {
			return err
		}
	}
	// A nil *Service must reach EnsureOwnFrom as a nil interface, not as a
	// non-nil one holding nil.
	var liveObj client.Object
	if live != nil {
		liveObj = live
	}
	res, _, err := r.headServiceApplier().EnsureOwnFrom(ctx, svc, liveObj)
	created, err := r.owned("Service", svc, res, err)
	if err != nil {
		var notOwned *notOwnedError
		if errors.As(err, &notOwned) {
			// KubeRay v1.7.0's createService fails with AlreadyExists and
			// the reconcile ends before reconcilePods: no Pods while the
			// name is held, since workers would dial whatever the user's
			// Service selects. Pods already running are left as they are.
			s.servicesNotOwned = true
		}
		return err
	}
	switch {
	case recreated != "":
		s.Events.Add(string(rayv1.CreatedService), "Recreated head Service %s: %s", svc.Name, recreated)
	case created:
		s.Events.Add(string(rayv1.CreatedService), "Created head Service %s", svc.Name)
	}
	// The applied object has the allocated clusterIP the cache may not
	// have seen yet; status reports it.
	s.headService = svc
	if svc.ResourceVersion == "" {
		// Nothing was sent: the cached object is current.
		s.headService = nil
	}
	return nil
}

func (r *Reconciler) reconcileHeadlessService(ctx context.Context, s *scope) error {
	if !podspec.NeedsHeadlessService(s.Object) {
		return nil
	}
	svc := podspec.BuildHeadlessService(s.Object)
	created, err := r.ensureOwned(ctx, "Service", svc)
	var notOwned *notOwnedError
	if errors.As(err, &notOwned) {
		// As the head Service: KubeRay's createService fails and the
		// multi-host Pods, which address each other through this
		// Service, are not created.
		s.servicesNotOwned = true
	}
	if err == nil && created {
		s.Events.Add(string(rayv1.CreatedService), "Created headless Service %s", svc.Name)
	}
	return err
}

func (r *Reconciler) reconcileServeService(ctx context.Context, s *scope) error {
	cluster := s.Object
	if !podspec.ServeServiceEnabled(cluster) {
		return nil
	}
	svc, err := podspec.BuildServeService(cluster)
	if errors.Is(err, podspec.ErrNoServePort) {
		// KubeRay only creates the Serve Service when the head exposes a
		// serve port; without one there is nothing to route to.
		return nil
	}
	if err != nil {
		return err
	}
	created, err := r.ensureOwned(ctx, "Service", svc)
	if err == nil && created {
		s.Events.Add(string(rayv1.CreatedService), "Created serve Service %s", svc.Name)
	}
	// KubeRay v1.7.0's reconcileServeService uses any Service of that
	// name as it is and goes on; Gantry says so in a Warning.
	return r.warnNotOwned(s, string(rayv1.FailedToCreateService), err)
}

// deleteHeadServiceIfImmutable deletes the live head Service when desired
// changes what a Service cannot change in place (its cluster IP, e.g. a
// headless Service becoming NodePort after a serviceType edit): the apply
// would fail on every reconcile. It returns why it deleted it ("" when it
// did not). The caller applies desired at once, creating the new Service.
func (r *Reconciler) deleteHeadServiceIfImmutable(ctx context.Context, desired, live *corev1.Service) (string, error) {
	if live == nil {
		return "", nil
	}
	why := immutableServiceChange(live, desired)
	// Only the cluster's own Service is ever deleted; one that is not
	// (a user's) is reported by ensureOwned and left alone.
	if why == "" || !live.DeletionTimestamp.IsZero() || !controlledBySame(live, desired) {
		return "", nil
	}
	if err := r.client.Delete(ctx, live, client.Preconditions{UID: &live.UID}); client.IgnoreNotFound(err) != nil {
		return "", fmt.Errorf("deleting head Service %s to recreate it (%s): %w", live.Name, why, err)
	}
	// A finalizer (a load balancer's cleanup) can keep the old Service a
	// while; an apply now would patch the terminating one. Its deletion
	// event brings the next reconcile, which creates the new one.
	gone := &corev1.Service{}
	err := r.apiReader.Get(ctx, client.ObjectKeyFromObject(live), gone)
	switch {
	case apierrors.IsNotFound(err) || (err == nil && gone.UID != live.UID):
		return why, nil
	case err != nil:
		return "", err
	}
	return "", fmt.Errorf("waiting for the old head Service %s to be deleted before recreating it (%s)", live.Name, why)
}

// liveService reads the Service key names from the cache or, when the
// cache does not hold it (one KubeRay made before the migration, a user's,
// or none at all), from the API server; nil when it does not exist.
func (r *Reconciler) liveService(ctx context.Context, key client.ObjectKey) (*corev1.Service, error) {
	live := &corev1.Service{}
	err := r.client.Get(ctx, key, live)
	if apierrors.IsNotFound(err) {
		err = r.apiReader.Get(ctx, key, live)
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading Service %s: %w", key, err)
	}
	return live, nil
}

// immutableServiceChange says why live cannot become desired in place, or
// "" when it can. The API server keeps an allocated cluster IP on update
// and refuses to change it; a headless Service (clusterIP None) cannot be
// of type NodePort or LoadBalancer.
func immutableServiceChange(live, desired *corev1.Service) string {
	if live.Spec.Type == corev1.ServiceTypeExternalName || desired.Spec.Type == corev1.ServiceTypeExternalName {
		return ""
	}
	liveIP, wantIP := live.Spec.ClusterIP, desired.Spec.ClusterIP
	switch {
	case wantIP != "" && liveIP != "" && wantIP != liveIP:
		return fmt.Sprintf("its clusterIP cannot change from %s to %s in place", liveIP, wantIP)
	case wantIP == "" && liveIP == corev1.ClusterIPNone &&
		(desired.Spec.Type == corev1.ServiceTypeNodePort || desired.Spec.Type == corev1.ServiceTypeLoadBalancer):
		return fmt.Sprintf("it was headless (clusterIP None) and type %s needs a cluster IP", desired.Spec.Type)
	}
	return ""
}

// controlledBySame reports whether live has desired's controller (by UID),
// as apply.EnsureOwn decides whether an object is the cluster's.
func controlledBySame(live, desired client.Object) bool {
	owner, want := metav1.GetControllerOfNoCopy(live), metav1.GetControllerOfNoCopy(desired)
	return owner != nil && want != nil && owner.UID == want.UID
}
