// Package trainertesting has fluent builders for TrainJobs and runtimes, so tests
// read as the manifest they describe:
//
//	MakeTrainJob("tj", "default").RuntimeRef(trainer.ClusterTrainingRuntimeKind, "torch").NumNodes(2).Obj()
//	MakeRuntimeSpec().Torch(nil).ReplicatedJob(TrainerJob("node", "torch:1")).Obj()
package trainertesting

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

// TrainJobWrapper builds a TrainJob.
type TrainJobWrapper struct {
	trainer.TrainJob
}

// MakeTrainJob starts a TrainJob named name in namespace ns referencing
// the ClusterTrainingRuntime "runtime", with a UID so owner references are
// real.
func MakeTrainJob(name, ns string) *TrainJobWrapper {
	return &TrainJobWrapper{trainer.TrainJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: trainer.GroupVersion.String(), Kind: trainer.TrainJobKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name)},
		Spec: trainer.TrainJobSpec{RuntimeRef: trainer.RuntimeRef{
			Name:     "runtime",
			APIGroup: ptr.To(trainer.GroupVersion.Group),
			Kind:     ptr.To(trainer.ClusterTrainingRuntimeKind),
		}},
	}}
}

// Obj returns a copy of the TrainJob.
func (w *TrainJobWrapper) Obj() *trainer.TrainJob { return w.TrainJob.DeepCopy() }

// Clone returns a copy of the wrapper, to vary a common base.
func (w *TrainJobWrapper) Clone() *TrainJobWrapper { return &TrainJobWrapper{*w.TrainJob.DeepCopy()} }

// RuntimeRef points the job at a runtime of kind (TrainingRuntime or ClusterTrainingRuntime).
func (w *TrainJobWrapper) RuntimeRef(kind, name string) *TrainJobWrapper {
	w.Spec.RuntimeRef.Kind, w.Spec.RuntimeRef.Name = ptr.To(kind), name
	return w
}

// RuntimeRefGroup sets the runtimeRef's apiGroup.
func (w *TrainJobWrapper) RuntimeRefGroup(group string) *TrainJobWrapper {
	w.Spec.RuntimeRef.APIGroup = ptr.To(group)
	return w
}

func (w *TrainJobWrapper) trainer() *trainer.Trainer {
	if w.Spec.Trainer == nil {
		w.Spec.Trainer = &trainer.Trainer{}
	}
	return w.Spec.Trainer
}

// NumNodes sets spec.trainer.numNodes.
func (w *TrainJobWrapper) NumNodes(n int32) *TrainJobWrapper {
	w.trainer().NumNodes = ptr.To(n)
	return w
}

// NumProcPerNode sets spec.trainer.numProcPerNode.
func (w *TrainJobWrapper) NumProcPerNode(n int32) *TrainJobWrapper {
	w.trainer().NumProcPerNode = ptr.To(n)
	return w
}

// Image sets spec.trainer.image.
func (w *TrainJobWrapper) Image(image string) *TrainJobWrapper {
	w.trainer().Image = ptr.To(image)
	return w
}

// Command sets spec.trainer.command.
func (w *TrainJobWrapper) Command(cmd ...string) *TrainJobWrapper {
	w.trainer().Command = cmd
	return w
}

// Args sets spec.trainer.args.
func (w *TrainJobWrapper) Args(args ...string) *TrainJobWrapper { w.trainer().Args = args; return w }

// Env adds a variable to spec.trainer.env.
func (w *TrainJobWrapper) Env(name, value string) *TrainJobWrapper {
	w.trainer().Env = append(w.trainer().Env, corev1.EnvVar{Name: name, Value: value})
	return w
}

// ResourcesPerNode sets spec.trainer.resourcesPerNode.
func (w *TrainJobWrapper) ResourcesPerNode(requests, limits corev1.ResourceList) *TrainJobWrapper {
	w.trainer().ResourcesPerNode = &corev1.ResourceRequirements{Requests: requests, Limits: limits}
	return w
}

// Suspend sets spec.suspend.
func (w *TrainJobWrapper) Suspend(s bool) *TrainJobWrapper { w.Spec.Suspend = ptr.To(s); return w }

// DatasetInitializer sets spec.initializer.dataset.
func (w *TrainJobWrapper) DatasetInitializer(storageURI, secret string, env ...corev1.EnvVar) *TrainJobWrapper {
	d := &trainer.DatasetInitializer{Env: env}
	if storageURI != "" {
		d.StorageURI = ptr.To(storageURI)
	}
	if secret != "" {
		d.SecretRef = &corev1.LocalObjectReference{Name: secret}
	}
	if w.Spec.Initializer == nil {
		w.Spec.Initializer = &trainer.Initializer{}
	}
	w.Spec.Initializer.Dataset = d
	return w
}

// ModelInitializer sets spec.initializer.model.
func (w *TrainJobWrapper) ModelInitializer(storageURI, secret string, env ...corev1.EnvVar) *TrainJobWrapper {
	m := &trainer.ModelInitializer{Env: env}
	if storageURI != "" {
		m.StorageURI = ptr.To(storageURI)
	}
	if secret != "" {
		m.SecretRef = &corev1.LocalObjectReference{Name: secret}
	}
	if w.Spec.Initializer == nil {
		w.Spec.Initializer = &trainer.Initializer{}
	}
	w.Spec.Initializer.Model = m
	return w
}

// RuntimePatch appends a runtime patch owned by manager.
func (w *TrainJobWrapper) RuntimePatch(manager string, spec *trainer.TrainingRuntimeSpecPatch) *TrainJobWrapper {
	w.Spec.RuntimePatches = append(w.Spec.RuntimePatches, trainer.RuntimePatch{Manager: manager, TrainingRuntimeSpec: spec})
	return w
}

// Condition sets a status condition.
func (w *TrainJobWrapper) Condition(c metav1.Condition) *TrainJobWrapper {
	w.Status.Conditions = append(w.Status.Conditions, c)
	return w
}
