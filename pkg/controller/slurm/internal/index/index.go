package index

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/gantry/pkg/framework/refwatch"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
)

// Field indexes behind the mapped watches: "which Controllers use this
// Secret", "which NodeSets belong to this Controller". They are shared by
// the Slurm reconcilers and registered once, by Register.
const (
	// ControllerSecrets maps a Controller to the names of the Secrets
	// holding its keys (same namespace).
	ControllerSecrets = "slinky.controller.secretRefs"
	// ControllerConfigMaps maps a Controller to the names of the
	// ConfigMaps it reads (config files, scripts, JWKS; same namespace).
	ControllerConfigMaps = "slinky.controller.configMapRefs"
	// NodeSetController maps a NodeSet to "<namespace>/<name>" of its
	// Controller, which may live in another namespace.
	NodeSetController = "slinky.nodeset.controllerRef"
	// RestApiController maps a RestApi to its Controller's name (same
	// namespace).
	RestApiController = "slinky.restapi.controllerRef"
	// AccountingSecrets maps an Accounting to the names of the Secrets
	// it reads (keys, database password; same namespace).
	AccountingSecrets = "slinky.accounting.secretRefs"
	// AccountingConfigMaps maps an Accounting to the ConfigMap holding
	// its JWKS (same namespace).
	AccountingConfigMaps = "slinky.accounting.configMapRefs"
	// TokenSigningKey maps a Token to the Secret holding the key it signs
	// with (same namespace).
	TokenSigningKey = "slinky.token.signingKeyRef"
)

// ControllerSecretNames lists the Secrets c reads its keys from.
func ControllerSecretNames(c *slinkyv1beta1.Controller) []string {
	var names []string
	if c.Spec.SlurmKeyRef != nil {
		names = append(names, c.Spec.SlurmKeyRef.Name)
	}
	if c.Spec.JwtKeyRef != nil {
		names = append(names, c.Spec.JwtKeyRef.Name)
	}
	if c.Spec.JwtHs256KeyRef != nil {
		names = append(names, c.Spec.JwtHs256KeyRef.Name)
	}
	return compact(names)
}

// ControllerConfigMapNames lists the user ConfigMaps c reads.
func ControllerConfigMapNames(c *slinkyv1beta1.Controller) []string {
	var names []string
	for _, refs := range [][]corev1.LocalObjectReference{
		c.Spec.ConfigFileRefs, c.Spec.PrologScriptRefs, c.Spec.EpilogScriptRefs,
		c.Spec.PrologSlurmctldScriptRefs, c.Spec.EpilogSlurmctldScriptRefs,
	} {
		for _, r := range refs {
			names = append(names, r.Name)
		}
	}
	if c.Spec.JwksKeyRef != nil {
		names = append(names, c.Spec.JwksKeyRef.Name)
	}
	return compact(names)
}

// AccountingSecretNames lists the Secrets a reads: its keys and its
// database password.
func AccountingSecretNames(a *slinkyv1beta1.Accounting) []string {
	names := []string{a.Spec.StorageConfig.PasswordKeyRef.Name}
	for _, ref := range []*corev1.SecretKeySelector{a.Spec.SlurmKeyRef, a.Spec.JwtKeyRef, a.Spec.JwtHs256KeyRef} {
		if ref != nil {
			names = append(names, ref.Name)
		}
	}
	return compact(names)
}

// AccountingConfigMapNames lists the ConfigMaps a reads.
func AccountingConfigMapNames(a *slinkyv1beta1.Accounting) []string {
	if a.Spec.JwksKeyRef == nil {
		return nil
	}
	return compact([]string{a.Spec.JwksKeyRef.Name})
}

// NodeSetControllerValue is the NodeSetController value of n.
func NodeSetControllerValue(n *slinkyv1beta1.NodeSet) string {
	return n.ControllerKey().String()
}

func compact(names []string) []string {
	names = slices.DeleteFunc(names, func(s string) bool { return s == "" })
	slices.Sort(names)
	return slices.Compact(names)
}

type index struct {
	obj   client.Object
	field string
	fn    client.IndexerFunc
}

var indexes = []index{
	{&slinkyv1beta1.Controller{}, ControllerSecrets, func(o client.Object) []string {
		return ControllerSecretNames(o.(*slinkyv1beta1.Controller))
	}},
	{&slinkyv1beta1.Controller{}, ControllerConfigMaps, func(o client.Object) []string {
		return ControllerConfigMapNames(o.(*slinkyv1beta1.Controller))
	}},
	{&slinkyv1beta1.NodeSet{}, NodeSetController, func(o client.Object) []string {
		return []string{NodeSetControllerValue(o.(*slinkyv1beta1.NodeSet))}
	}},
	{&slinkyv1beta1.RestApi{}, RestApiController, func(o client.Object) []string {
		return []string{o.(*slinkyv1beta1.RestApi).Spec.ControllerRef.Name}
	}},
	{&slinkyv1beta1.Accounting{}, AccountingSecrets, func(o client.Object) []string {
		return AccountingSecretNames(o.(*slinkyv1beta1.Accounting))
	}},
	{&slinkyv1beta1.Accounting{}, AccountingConfigMaps, func(o client.Object) []string {
		return AccountingConfigMapNames(o.(*slinkyv1beta1.Accounting))
	}},
	{&slinkyv1beta1.Token{}, TokenSigningKey, func(o client.Object) []string {
		if ref := o.(*slinkyv1beta1.Token).SigningKeyRef(); ref != nil && ref.Name != "" {
			return []string{ref.Name}
		}
		return nil
	}},
}

// Holder is the refwatch holder behind the index field: its kind and its
// index function, which lists the names the holder references.
func Holder(field string) refwatch.Holder {
	for _, ix := range indexes {
		if ix.field == field {
			return refwatch.Holder{Object: ix.obj, Names: ix.fn}
		}
	}
	panic("index: no index " + field)
}

// Register adds the field indexes the Slurm reconcilers share to
// indexer (the manager's). The slurm Integration registers them once,
// before any reconciler is set up.
func Register(ctx context.Context, indexer client.FieldIndexer) error {
	for _, ix := range indexes {
		if err := indexer.IndexField(ctx, ix.obj, ix.field, ix.fn); err != nil {
			return err
		}
	}
	return nil
}
