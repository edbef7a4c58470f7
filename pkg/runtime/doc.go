// Package runtime turns a TrainJob and the TrainingRuntime or
// ClusterTrainingRuntime it references into the objects that run it, the
// way Kubeflow Trainer v2 does, and maps the resulting JobSet's status back.
//
// Entry points for the TrainJob controller (see Runtime):
//
//	spec, err := runtime.ResolveSpec(ctx, reader, trainJob)  // which runtime
//	res, err := rt.NewObjects(ctx, trainJob, spec)           // what to apply
//	errs := rt.Validate(oldJob, newJob, spec)                 // for a webhook
//	status := rt.Status(trainJob, jobSet, now)                // JobSet → TrainJob
//	cond := runtime.CreatedCondition(err)                     // any error above → condition
//
// # Plugins and their fixed order
//
// The framework runs plugins from a slice, never a map, so the result of a
// build does not depend on iteration order. The order is:
//
//  1. PlainML      ML policy for runtimes without a framework policy
//  2. Torch        ML policy: PET_* env for torchrun
//  3. MPI          ML policy: SSH Secret, hostfile ConfigMap, OpenMPI env
//  4. JAX          ML policy: JAX_* env
//  5. XGBoost      ML policy: DMLC_* env
//  6. Flux         ML policy: installer init container, CURVE Secret,
//     scripts and broker configuration ConfigMap, wrapped command
//  7. TrainJobStatus progress endpoint env, token and CA (gate TrainJobStatus)
//  8. Coscheduling gang scheduling: PodGroup and pod label
//  9. Volcano      gang scheduling: Volcano PodGroup and pod annotation
//  10. JobSet      pod network, the JobSet itself, status mapping
//
// At most one ML plugin is active for a runtime (the API allows one policy),
// so their relative order only fixes the order of validation messages; the
// same holds for the two gang-scheduling plugins. Coscheduling and Volcano
// // run after the ML plugins because they sum the pod counts those set. JobSet
// is last so that, among the built components, the objects pods need (Secrets, ConfigMaps, PodGroups) come before the JobSet that creates the
// pods.
//
// # Extension points, in the order NewObjects runs them
//
//  1. CustomValidation     (Validate; NewObjects runs it too, since a
//     webhook may not be installed)
//  2. EnforceMLPolicy      pod counts, env, ports, volumes
//  3. EnforcePodGroupPolicy
//  4. PodNetwork           pod DNS names (needs final counts; MPI's hostfile reads them)
//  5. ComponentBuilder     the objects to apply, in plugin order
//
// Errors a spec change must fix are framework.BuildErrors (IsBuildError);
// the controller reports them as a Created=False condition instead of
// requeueing. Unsupported policies (MPI implementations other than
// OpenMPI) are also ErrUnsupportedPolicy.
package runtime
