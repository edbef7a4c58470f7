package runtime

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

// RuntimeNotFoundError says the runtimeRef names a runtime that does not
// exist. The controller fails the TrainJob for good: creating the runtime
// afterwards does not revive it.
type RuntimeNotFoundError struct {
	Kind, Namespace, Name string
}

func (e *RuntimeNotFoundError) Error() string {
	if e.Namespace == "" {
		return fmt.Sprintf("%s %q not found", e.Kind, e.Name)
	}
	return fmt.Sprintf("%s %s/%s not found", e.Kind, e.Namespace, e.Name)
}

// IsRuntimeNotFound reports whether err is, or wraps, a RuntimeNotFoundError.
func IsRuntimeNotFound(err error) bool {
	var nf *RuntimeNotFoundError
	return errors.As(err, &nf)
}

// ErrUnsupportedRuntimeKind marks a runtimeRef naming a group or kind other
// than trainer.kubeflow.org TrainingRuntime or ClusterTrainingRuntime.
var ErrUnsupportedRuntimeKind = errors.New("unsupported runtime kind")

// ResolveSpec reads the runtime trainJob references and returns a copy of
// its spec (the reader's objects are shared with the cache and must not be
// modified). apiGroup defaults to trainer.kubeflow.org and kind to
// ClusterTrainingRuntime, as in the API.
func ResolveSpec(ctx context.Context, reader client.Reader, trainJob *trainer.TrainJob) (*trainer.TrainingRuntimeSpec, error) {
	spec, _, err := ResolveRuntime(ctx, reader, trainJob)
	return spec, err
}

// ResolveRuntime is ResolveSpec that also returns the runtime itself (a
// *ClusterTrainingRuntime or a *TrainingRuntime), whose labels say, for
// one, whether it is deprecated.
func ResolveRuntime(ctx context.Context, reader client.Reader, trainJob *trainer.TrainJob) (*trainer.TrainingRuntimeSpec, client.Object, error) {
	if trainJob == nil {
		return nil, nil, errors.New("no TrainJob")
	}
	ref := trainJob.Spec.RuntimeRef
	group := ptr.Deref(ref.APIGroup, trainer.GroupVersion.Group)
	kind := ptr.Deref(ref.Kind, trainer.ClusterTrainingRuntimeKind)
	if group != trainer.GroupVersion.Group {
		return nil, nil, fmt.Errorf("%s.%s: %w", kind, group, ErrUnsupportedRuntimeKind)
	}
	switch kind {
	case trainer.ClusterTrainingRuntimeKind:
		ctr := &trainer.ClusterTrainingRuntime{}
		if err := reader.Get(ctx, client.ObjectKey{Name: ref.Name}, ctr); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, nil, &RuntimeNotFoundError{Kind: kind, Name: ref.Name}
			}
			return nil, nil, err
		}
		return ctr.Spec.DeepCopy(), ctr, nil
	case trainer.TrainingRuntimeKind:
		tr := &trainer.TrainingRuntime{}
		if err := reader.Get(ctx, client.ObjectKey{Namespace: trainJob.Namespace, Name: ref.Name}, tr); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, nil, &RuntimeNotFoundError{Kind: kind, Namespace: trainJob.Namespace, Name: ref.Name}
			}
			return nil, nil, err
		}
		return tr.Spec.DeepCopy(), tr, nil
	}
	return nil, nil, fmt.Errorf("%s.%s: %w", kind, group, ErrUnsupportedRuntimeKind)
}
