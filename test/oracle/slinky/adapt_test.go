package slinky_test

// asSlinkyV11 is a manifest written for Slinky v1.2 as Slinky v1.1.0 needs
// it. One change only: v1.1.0's references to other objects
// (spec.controllerRef, spec.accountingRef, the Controller's config file
// and script refs) are ObjectReferences that must name their namespace,
// and its builders look them up there (internal/utils/refresolver);
// v1.2.1 made them LocalObjectReferences resolved in the object's own
// namespace (api/v1beta1/controller_types.go:51, nodeset_types.go:25,
// restapi_types.go:24, loginset_types.go:25 at v1.2.1). So each gets the
// object's namespace, which is where v1.2.1 resolves it.
func asSlinkyV11(doc map[string]any) map[string]any {
	out := deepCopy(doc)
	namespace := str(out, "metadata", "namespace")
	spec := mapAt(out, "spec")
	if spec == nil {
		return out
	}
	withNamespace := func(v any) {
		if m, ok := v.(map[string]any); ok && m["namespace"] == nil {
			m["namespace"] = namespace
		}
	}
	switch out["kind"] {
	case "NodeSet", "RestApi", "LoginSet":
		withNamespace(spec["controllerRef"])
	case "Controller":
		withNamespace(spec["accountingRef"])
		for _, f := range []string{"configFileRefs", "prologScriptRefs", "epilogScriptRefs", "prologSlurmctldScriptRefs", "epilogSlurmctldScriptRefs"} {
			refs, _ := spec[f].([]any)
			for _, r := range refs {
				withNamespace(r)
			}
		}
	}
	return out
}
