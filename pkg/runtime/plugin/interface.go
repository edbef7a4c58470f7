package plugin

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

// Plugin is anything the framework runs; it implements one or more of the
// extension-point interfaces below.
type Plugin interface {
	Name() string
}

// CustomValidationPlugin checks a TrainJob against the runtime it references.
// info is built without running any other plugin; oldJob is nil on create.
type CustomValidationPlugin interface {
	Plugin
	Validate(info *Info, oldJob, newJob *trainer.TrainJob) field.ErrorList
}

// EnforceMLPolicyPlugin applies a framework policy (torch, mpi, ...) to Info:
// pod counts, environment, ports, volumes.
type EnforceMLPolicyPlugin interface {
	Plugin
	EnforceMLPolicy(info *Info, trainJob *trainer.TrainJob) error
}

// EnforcePodGroupPolicyPlugin applies a gang-scheduling policy to Info.
type EnforcePodGroupPolicyPlugin interface {
	Plugin
	EnforcePodGroupPolicy(info *Info, trainJob *trainer.TrainJob) error
}

// PodNetworkPlugin fills PodSet.Endpoints once pod counts are final.
type PodNetworkPlugin interface {
	Plugin
	IdentifyPodNetwork(info *Info, trainJob *trainer.TrainJob) error
}

// ComponentBuilderPlugin renders the objects to apply. existing reads
// objects already in the cluster, for builders that must not regenerate an
// object (an immutable Secret) or must not touch a running one (a JobSet).
type ComponentBuilderPlugin interface {
	Plugin
	Build(ctx context.Context, existing client.Reader, info *Info, trainJob *trainer.TrainJob) ([]Component, error)
}

// Component is one object to put in the cluster.
type Component struct {
	Object client.Object
	// CreateOnly objects are created when missing and otherwise left alone
	// (an AlreadyExists error is success): their content must not change
	// once written, like the MPI SSH key Secret, and a stale cache must not
	// turn into an update with a freshly generated key.
	CreateOnly bool
}

// BuildError is a failure caused by the TrainJob or its runtime (an invalid
// template, a patch that does not apply): retrying without a spec change
// cannot succeed, so the controller reports it as a condition instead of
// requeueing.
type BuildError struct {
	Err error
}

func (e *BuildError) Error() string { return e.Err.Error() }
func (e *BuildError) Unwrap() error { return e.Err }

// NewBuildError wraps err as a BuildError; format and args describe it.
func NewBuildError(format string, args ...any) error {
	return &BuildError{Err: fmt.Errorf(format, args...)}
}

// IsBuildError reports whether err, or an error it wraps, is a BuildError.
func IsBuildError(err error) bool {
	var be *BuildError
	return errors.As(err, &be)
}

// ErrUnsupportedPolicy marks a runtime policy Gantry has no plugin for (MPI
// implementations other than OpenMPI). It is also a BuildError.
var ErrUnsupportedPolicy = errors.New("policy not supported")
