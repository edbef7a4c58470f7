package raycluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
	"github.com/gantry-dev/gantry/pkg/controller/ray/podspec"
	"github.com/gantry-dev/gantry/pkg/framework/builder"
)

// IngressClassAnnotationKey on a RayCluster sets the dashboard Ingress's class.
const IngressClassAnnotationKey = "kubernetes.io/ingress.class"

// IngressName is KubeRay's name for the dashboard Ingress.
func IngressName(cluster *rayv1.RayCluster) string {
	return podspec.CheckName(cluster.Name + "-head-ingress")
}

// BuildHeadIngress returns the Ingress that exposes the head's dashboard,
// as KubeRay v1.7's enableIngress does: one rule to the head Service's
// dashboard port, shaped by headGroupSpec.ingressOptions: path "/" of type
// Prefix unless it names others, its host (every host when unset) and TLS.
// (KubeRay up to v1.6 used the Exact path "/<cluster name>/(.*)" for a
// rewrite annotation; a cluster that relies on it sets ingressOptions.path
// and pathType to those.) The cluster's
// annotations are copied to it, so ingress-controller settings can be
// given on the RayCluster, except kubernetes.io/ingress.class: its value
// becomes spec.ingressClassName, and the deprecated annotation is not set
// next to the field.
func BuildHeadIngress(cluster *rayv1.RayCluster) *networkingv1.Ingress {
	port := podspec.ServicePortNumbers(cluster)[podspec.DashboardPortName]
	if port == 0 {
		port = podspec.DefaultDashboardPort
	}
	annotations := maps.Clone(cluster.Annotations)
	delete(annotations, IngressClassAnnotationKey)
	opts := cluster.Spec.HeadGroupSpec.IngressOptions
	if opts == nil {
		opts = &rayv1.IngressOptions{}
	}
	pathType, path := networkingv1.PathTypePrefix, "/"
	if opts.PathType != nil {
		pathType = networkingv1.PathType(*opts.PathType)
	}
	if opts.Path != nil {
		path = *opts.Path
	}
	ing := &networkingv1.Ingress{
		TypeMeta: metav1.TypeMeta{APIVersion: networkingv1.SchemeGroupVersion.String(), Kind: "Ingress"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      IngressName(cluster),
			Namespace: cluster.Namespace,
			Labels: map[string]string{
				rayv1.RayClusterLabelKey: cluster.Name,
				rayv1.RayIDLabelKey:      podspec.CheckLabel(cluster.Name + "-" + string(rayv1.HeadNode)),
				builder.LabelName:        podspec.ApplicationName,
				builder.LabelCreatedBy:   podspec.ComponentName,
				builder.LabelManagedBy:   builder.ManagedByGantry,
			},
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{podspec.OwnerReference(cluster)},
		},
		Spec: networkingv1.IngressSpec{
			Rules: []networkingv1.IngressRule{{Host: ptr.Deref(opts.Host, ""), IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{
					Path:     path,
					PathType: &pathType,
					Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
						Name: podspec.HeadServiceName(cluster),
						Port: networkingv1.ServiceBackendPort{Number: port},
					}},
				}},
			}}}},
		},
	}
	for i := range opts.TLS {
		ing.Spec.TLS = append(ing.Spec.TLS, *opts.TLS[i].DeepCopy())
	}
	if class, ok := cluster.Annotations[IngressClassAnnotationKey]; ok {
		ing.Spec.IngressClassName = &class
	}
	return ing
}

// BuildAuthSecret returns the Secret with a new random Ray auth token. It is
// created once and never rewritten: rotating the token would cut every
// client off.
func BuildAuthSecret(cluster *rayv1.RayCluster) (*corev1.Secret, error) {
	token := make([]byte, 32)
	if _, err := rand.Read(token); err != nil {
		return nil, fmt.Errorf("generating the Ray auth token: %w", err)
	}
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      podspec.AuthSecretName(cluster),
			Namespace: cluster.Namespace,
			Labels: map[string]string{
				rayv1.RayClusterLabelKey: cluster.Name,
				builder.LabelName:        podspec.ApplicationName,
				builder.LabelCreatedBy:   podspec.ComponentName,
				builder.LabelManagedBy:   builder.ManagedByGantry,
			},
			OwnerReferences: []metav1.OwnerReference{podspec.OwnerReference(cluster)},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{podspec.AuthTokenSecretKey: []byte(hex.EncodeToString(token))},
	}, nil
}

func (r *Reconciler) reconcileIngress(ctx context.Context, s *scope) error {
	cluster := s.Object
	if cluster.Spec.HeadGroupSpec.EnableIngress == nil || !*cluster.Spec.HeadGroupSpec.EnableIngress {
		return nil
	}
	ing := BuildHeadIngress(cluster)
	created, err := r.ensureOwned(ctx, "Ingress", ing)
	if err != nil {
		// KubeRay v1.7.0's reconcileIngressKubernetes leaves an Ingress
		// of that name it does not control as it is, with this Warning,
		// and goes on.
		return r.warnNotOwned(s, string(rayv1.FailedToCreateIngress), err)
	}
	if created {
		s.Events.Add(string(rayv1.CreatedIngress), "Created Ingress %s", ing.Name)
	}
	return nil
}

// reconcileAuthSecret creates the token Secret unless auth is off or the
// token comes from elsewhere (Kubernetes tokens, a Secret the user named).
// Like KubeRay's reconcileAuthSecret, "off" is no authOptions or mode
// disabled: authOptions with an empty mode gets the Secret too, ready for
// mode token, although its Pods do not use it (podspec.AuthEnabled). Secrets are
// not cached (the cache would hold every Secret of the cluster), so
// existence is checked against the API server, once per reconcile of such
// clusters only.
func (r *Reconciler) reconcileAuthSecret(ctx context.Context, s *scope) error {
	cluster := s.Object
	a := cluster.Spec.AuthOptions
	if a == nil || a.Mode == rayv1.AuthModeDisabled ||
		(a.EnableK8sTokenAuth != nil && *a.EnableK8sTokenAuth) || (a.SecretName != nil && *a.SecretName != "") {
		return nil
	}
	key := client.ObjectKey{Namespace: cluster.Namespace, Name: podspec.AuthSecretName(cluster)}
	err := r.apiReader.Get(ctx, key, &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}})
	if err == nil || !apierrors.IsNotFound(err) {
		return err
	}
	secret, err := BuildAuthSecret(cluster)
	if err != nil {
		return err
	}
	if err := r.client.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	s.Events.Add("CreatedSecret", "Created auth Secret %s", secret.Name)
	return nil
}
