package builder

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// MergePodTemplate layers a user's pod template over the operator's base
// template and returns a new template; neither input is modified and the
// result shares no memory with them.
//
// The specs are merged by Kubernetes' strategic merge patch
// (k8s.io/apimachinery/pkg/util/strategicpatch), with the operator's spec as
// the document and the user's spec as the patch. That is the order Slinky's
// slurm-operator uses since v1.1.0 for its pod templates and containers
// (internal/utils/structutils.StrategicMergePatch, called from
// internal/builder/common BuildPodTemplate and BuildContainer); v1.0.0 still
// merged field by field, without a strategic merge. So, as in the API's own
// PATCH:
//
//   - lists with a patch merge key merge element by element on that key:
//     containers, init containers, volumes, image pull secrets and
//     scheduling gates by name, host aliases by IP, topology spread
//     constraints by topology key, and in a container env by name, ports by
//     containerPort, volume mounts by mountPath, volume devices by
//     devicePath;
//   - every other list (tolerations, args, command, envFrom, …) is replaced
//     by the user's when the user sets it, but for a container's args
//     (MergeContainer), which follow the operator's;
//   - objects (securityContext, affinity, resources, probes, dnsConfig,
//     nodeSelector, …) merge field by field: a field the user leaves out
//     keeps the operator's value.
//
// Labels and annotations are not part of the patch: the operator's keys win
// (selectors and hashes depend on them) and the user's other keys are kept,
// as MergeLabels does. Other user metadata is ignored.
//
// Gantry writes into the user's patch a few directives of the strategic
// merge patch format, where the user's intent is plain but a typed value
// cannot carry it (see strategicMerge for the details):
//
//   - elements only the user has come after the operator's, in the user's
//     order, and the operator's keep theirs ($setElementOrder), so a user
//     env var can refer to an operator one with $(VAR);
//   - a user volume with the name of an operator volume replaces its source
//     ($retainKeys, which the API declares for volumes);
//   - where the user picks one member of a one-of (env value or valueFrom,
//     the kind of valueFrom, a probe's or a lifecycle hook's handler), the
//     operator's other member is removed, so the pod stays valid;
//   - a user port that reuses the name of an operator port at another
//     containerPort moves that port ($patch: delete of the operator's
//     port), so a named port can be moved and names stay unique.
//
// Directives written by the user cannot reach this function: the CRDs
// decode the user's template into a typed corev1.PodSpec (PodSpecWrapper),
// which drops "$patch", "$retainKeys" and "$setElementOrder" keys, as
// Slinky's decoding does. For the same reason zero values and empty lists
// (omitted by omitempty) cannot be told from unset fields: they leave the
// operator's value, and a user cannot delete an operator element.
//
// The merge cannot fail in practice: marshalling corev1 values does not fail,
// and the patch is built so the library accepts it (tested with random
// templates). Should the library still refuse it, the error is logged and
// the operator's spec is returned with the user's labels and annotations
// merged, rather than panicking in a reconcile or returning a half-merged
// pod.
func MergePodTemplate(base, user corev1.PodTemplateSpec) corev1.PodTemplateSpec {
	out := corev1.PodTemplateSpec{ObjectMeta: *base.ObjectMeta.DeepCopy()}
	out.Labels = MergeLabels(user.Labels, base.Labels)
	out.Annotations = MergeLabels(user.Annotations, base.Annotations)
	spec, err := strategicMerge(&base.Spec, &user.Spec)
	if err != nil {
		logf.Log.WithName("builder").Error(err, "cannot merge the user's pod template; using the operator's pod spec")
		spec = *base.Spec.DeepCopy()
	}
	out.Spec = spec
	return out
}

// MergeContainer layers user over base with the same strategic merge as
// MergePodTemplate, corev1.Container being the patch's type: env merged by
// name, ports by containerPort, volume mounts by mountPath, volume devices
// by devicePath, objects field by field, args appended to the operator's,
// other lists replaced. A user container without a name keeps the
// operator's name (the CRDs' container fields usually leave it empty).
// Neither input is modified.
func MergeContainer(base, user corev1.Container) corev1.Container {
	if user.Name == "" {
		// user is a copy; only its name changes, nothing it points to.
		user.Name = base.Name
	}
	if len(user.Args) > 0 && len(base.Args) > 0 {
		// As Slinky's BuildContainer (common/container.go): the user's
		// arguments follow the operator's, which a daemon needs to join
		// the cluster (slurmd's -Z and --conf-server), where the merge
		// would replace them.
		user.Args = append(slices.Clone(base.Args), user.Args...)
	}
	out, err := strategicMerge(&base, &user)
	if err != nil {
		logf.Log.WithName("builder").Error(err, "cannot merge the user's container; using the operator's container", "container", base.Name)
		return *base.DeepCopy()
	}
	return out
}
