package webhook

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
)

// Fields Slinky accepts that Gantry does not act on. A manifest setting one
// of them to anything but its default is refused, so that no field is
// silently ignored; the schema keeps every one of them, so none is silently
// pruned either.
//
// On update they are checked only when the spec changes: an object admitted
// before (by an older Gantry, or by Slinky before Gantry took over) can still
// have its metadata edited — Gantry itself removes Slinky's finalizer from
// NodeSets — while any edit of its spec must first drop the field.

// notSupportedYet names the field in the path and says what Gantry lacks.
const notSupportedYet = "not supported by Gantry yet: "

// defaultScheduledUpdateDuration is the CRD default of
// spec.updateStrategy.scheduledUpdate.duration.
const defaultScheduledUpdateDuration = 30 * time.Minute

func unsupportedNodeSetFields(n *slinkyv1beta1.NodeSet) field.ErrorList {
	var errs field.ErrorList
	spec := &n.Spec
	// Slinky ignores pinToNode in DaemonSet scaling mode, where every pod is
	// bound to its node anyway; so does Gantry.
	if spec.PinToNode && spec.ScalingMode != slinkyv1beta1.ScalingModeDaemonset {
		errs = append(errs, field.Invalid(slurmSpec.Child("pinToNode"), true, notSupportedYet+
			"pods are not pinned to the Kubernetes node they first ran on; set pinToNode to false "+
			"(a nodeSelector or node affinity in spec.template keeps pods on chosen nodes)"))
	}
	strategy := slurmSpec.Child("updateStrategy")
	if spec.UpdateStrategy.Type == slinkyv1beta1.ScheduledUpdateNodeSetStrategyType {
		errs = append(errs, field.Invalid(strategy.Child("type"), spec.UpdateStrategy.Type, notSupportedYet+
			"no Slurm maintenance reservation is made for updates; use RollingUpdate or OnDelete"))
	} else if scheduledUpdateSet(spec.UpdateStrategy.ScheduledUpdate) {
		errs = append(errs, field.Forbidden(strategy.Child("scheduledUpdate"), notSupportedYet+
			"it configures the ScheduledUpdate strategy; remove startTime, flags and duration"))
	}
	if spec.TaintKubeNodes {
		errs = append(errs, field.Invalid(slurmSpec.Child("taintKubeNodes"), true,
			"removed in Slinky v1.2 because anyone allowed to create a NodeSet could taint every node NoExecute; "+
				"Gantry does not support it: remove taintKubeNodes or set it to false, and taint dedicated nodes yourself (kubectl taint)"))
	}
	return errs
}

// scheduledUpdateSet reports a scheduledUpdate with anything but what
// Slinky's Helm chart sends by default ({}, which the API server turns into
// a 30m duration) or what Slinky's Go types send when it is empty (0s).
func scheduledUpdateSet(s slinkyv1beta1.ScheduledUpdateNodeSetStrategy) bool {
	d := s.Duration.Duration
	return !s.StartTime.IsZero() || len(s.Flags) > 0 || (d != 0 && d != defaultScheduledUpdateDuration)
}

func unsupportedControllerFields(c *slinkyv1beta1.Controller) field.ErrorList {
	var errs field.ErrorList
	if c.Spec.HighAvailability.Enabled {
		errs = append(errs, field.Invalid(slurmSpec.Child("ha", "enabled"), true, notSupportedYet+
			"Gantry runs one slurmctld without backup controllers (its state survives restarts on the persistence volume); "+
			"set ha.enabled to false"))
	}
	return errs
}

// specChanged reports an update that is not to metadata or status alone.
func specChanged(oldSpec, newSpec any) bool {
	return !equality.Semantic.DeepEqual(oldSpec, newSpec)
}
