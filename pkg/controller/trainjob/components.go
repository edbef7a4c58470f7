package trainjob

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/gantry-dev/gantry/pkg/framework/apply"
	"github.com/gantry-dev/gantry/pkg/runtime"
)

// applyComponents puts the built objects in the cluster, in the order the
// runtime returned them (the Secret, ConfigMap and PodGroup pods need come
// before the JobSet that creates the pods). Objects already matching their
// cached copy are not sent at all; create-only objects are created when
// missing and otherwise left alone.
//
// It returns a description of each object that did not exist before (for
// the Created event) and the JobSet as the server returned it, or nil when
// the runtime did not build one (it leaves a running JobSet alone).
func (r *Reconciler) applyComponents(ctx context.Context, comps []runtime.Component) ([]string, *jobsetv1alpha2.JobSet, error) {
	var created []string
	var jobSet *jobsetv1alpha2.JobSet
	for _, comp := range comps {
		obj := comp.Object
		describe, err := r.describe(obj)
		if err != nil {
			return created, nil, err
		}
		if comp.CreateOnly {
			err := r.client.Create(ctx, obj)
			switch {
			case err == nil:
				created = append(created, describe)
			case !apierrors.IsAlreadyExists(err):
				return created, nil, fmt.Errorf("creating %s: %w", describe, err)
			}
			continue
		}
		res, live, err := r.applier.Ensure(ctx, obj)
		if err != nil {
			return created, nil, err
		}
		if res == apply.Created {
			created = append(created, describe)
		}
		if js, ok := obj.(*jobsetv1alpha2.JobSet); ok {
			jobSet = js
			if res == apply.Unchanged {
				jobSet = live.(*jobsetv1alpha2.JobSet)
			}
		}
	}
	return created, jobSet, nil
}

func (r *Reconciler) describe(obj client.Object) (string, error) {
	gvk, err := apiutil.GVKForObject(obj, r.client.Scheme())
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s %s", gvk.Kind, obj.GetName()), nil
}
