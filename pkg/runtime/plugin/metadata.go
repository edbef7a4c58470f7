package plugin

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/framework/builder"
)

// OwnedObjectMeta is the metadata of an object the TrainJob owns: the
// TrainJob's namespace, Gantry's managed-by label (the manager's caches are
// filtered on it) plus labels, and the TrainJob as controller owner so
// deleting the job garbage-collects the object.
func OwnedObjectMeta(name string, trainJob *trainer.TrainJob, labels map[string]string) metav1.ObjectMeta {
	return builder.NewMetadata(name, trainJob.Namespace).
		WithLabels(labels).
		WithOwner(trainJob, trainer.GroupVersion.WithKind(trainer.TrainJobKind)).
		Build()
}
