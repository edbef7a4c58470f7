package common

import (
	"context"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
)

// Field indexes behind the mapped watches: "which Controllers use this
// Secret", "which NodeSets belong to this Controller". They are shared by
// the Slurm reconcilers; RegisterIndexes may be called by each of them.
const (
	// IndexControllerSecrets maps a Controller to the names of the Secrets
	// holding its keys (same namespace).
	IndexControllerSecrets = "slinky.controller.secretRefs"
	// IndexControllerConfigMaps maps a Controller to the names of the
	// ConfigMaps it reads (config files, scripts, JWKS; same namespace).
	IndexControllerConfigMaps = "slinky.controller.configMapRefs"
	// IndexNodeSetController maps a NodeSet to "<namespace>/<name>" of its
	// Controller, which may live in another namespace.
	IndexNodeSetController = "slinky.nodeset.controllerRef"
	// IndexRestApiController maps a RestApi to its Controller's name (same
	// namespace).
	IndexRestApiController = "slinky.restapi.controllerRef"
	// IndexAccountingSecrets maps an Accounting to the names of the Secrets
	// it reads (keys, database password; same namespace).
	IndexAccountingSecrets = "slinky.accounting.secretRefs"
	// IndexAccountingConfigMaps maps an Accounting to the ConfigMap holding
	// its JWKS (same namespace).
	IndexAccountingConfigMaps = "slinky.accounting.configMapRefs"
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

// NodeSetControllerIndexValue is the IndexNodeSetController value of n.
func NodeSetControllerIndexValue(n *slinkyv1beta1.NodeSet) string {
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
	{&slinkyv1beta1.Controller{}, IndexControllerSecrets, func(o client.Object) []string {
		return ControllerSecretNames(o.(*slinkyv1beta1.Controller))
	}},
	{&slinkyv1beta1.Controller{}, IndexControllerConfigMaps, func(o client.Object) []string {
		return ControllerConfigMapNames(o.(*slinkyv1beta1.Controller))
	}},
	{&slinkyv1beta1.NodeSet{}, IndexNodeSetController, func(o client.Object) []string {
		return []string{NodeSetControllerIndexValue(o.(*slinkyv1beta1.NodeSet))}
	}},
	{&slinkyv1beta1.RestApi{}, IndexRestApiController, func(o client.Object) []string {
		return []string{o.(*slinkyv1beta1.RestApi).Spec.ControllerRef.Name}
	}},
	{&slinkyv1beta1.Accounting{}, IndexAccountingSecrets, func(o client.Object) []string {
		return AccountingSecretNames(o.(*slinkyv1beta1.Accounting))
	}},
	{&slinkyv1beta1.Accounting{}, IndexAccountingConfigMaps, func(o client.Object) []string {
		return AccountingConfigMapNames(o.(*slinkyv1beta1.Accounting))
	}},
}

// RegisterIndexes adds every Slurm field index to indexer (the manager's).
// Registering an index that already exists is not an error, so each Slurm
// reconciler can call it without knowing which others are enabled.
func RegisterIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	for _, ix := range indexes {
		if err := indexer.IndexField(ctx, ix.obj, ix.field, ix.fn); err != nil && !isIndexConflict(err) {
			return err
		}
	}
	return nil
}

// client-go reports a duplicate index only through this message.
func isIndexConflict(err error) bool {
	return strings.Contains(err.Error(), "indexer conflict")
}
