package trainjob

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	"sigs.k8s.io/yaml"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	gbuilder "github.com/gantry-dev/gantry/pkg/framework/builder"
)

// The chart's shipped ClusterTrainingRuntimes reach the cluster through the
// manager: Helm cannot create them in the release that creates their CRD
// (it maps every object before creating any), and Trainer's chart needs a
// hook Job that downloads kubectl. The chart renders them into a ConfigMap
// instead, one YAML document per key, and the manager applies them.
//
// The ConfigMap is read with the chart's Role in the release namespace
// (get, by name), whatever namespaces the manager watches.
//
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=clustertrainingruntimes,verbs=create;delete

const (
	// LabelRuntimeSet marks the ClusterTrainingRuntimes applied from one
	// ConfigMap; its value is "<namespace>.<name>" of that ConfigMap.
	// Runtimes with it that the ConfigMap no longer lists are deleted.
	LabelRuntimeSet = "trainer.gantry.dev/runtime-set"
	// runtimeInstallerOwner is the field manager of the applied runtimes.
	runtimeInstallerOwner = "gantry-runtimes"
	// What Helm writes on the objects of a release: the runtimes an
	// earlier chart version created itself carry the release's name and
	// namespace, the ConfigMap its name (the instance label).
	labelInstance                  = "app.kubernetes.io/instance"
	annotationHelmRelease          = "meta.helm.sh/release-name"
	annotationHelmReleaseNamespace = "meta.helm.sh/release-namespace"
)

// runtimeInstaller applies the ClusterTrainingRuntimes of one ConfigMap
// and deletes those it applied before that the ConfigMap no longer lists.
// It runs on start (leader only) and whenever one of its runtimes changes
// or is deleted, so a runtime a user deletes comes back, as a Deployment's
// Pod would. A runtime of the same name it did not create (a user's, or
// another release's) is left alone and reported.
type runtimeInstaller struct {
	client client.Client
	reader client.Reader
	key    client.ObjectKey
}

func (r *runtimeInstaller) setValue() string { return r.key.Namespace + "." + r.key.Name }

// setupRuntimeInstaller registers the installer for the ConfigMap named
// "namespace/name".
func setupRuntimeInstaller(mgr ctrl.Manager, configMap string) error {
	ns, name, ok := strings.Cut(configMap, "/")
	if !ok {
		return fmt.Errorf("--trainjob-runtimes-configmap %q is not namespace/name", configMap)
	}
	r := &runtimeInstaller{client: mgr.GetClient(), reader: mgr.GetAPIReader(), key: client.ObjectKey{Namespace: ns, Name: name}}
	req := reconcile.Request{NamespacedName: r.key}
	ours := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetLabels()[LabelRuntimeSet] == r.setValue() })
	return ctrl.NewControllerManagedBy(mgr).Named("trainingruntime-installer").
		WatchesRawSource(source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			q.Add(req)
			return nil
		})).
		Watches(&trainer.ClusterTrainingRuntime{}, handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
			return []reconcile.Request{req}
		}), builder.WithPredicates(ours)).
		Complete(r)
}

// Reconcile brings the cluster's runtimes to what the ConfigMap lists.
func (r *runtimeInstaller) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	cm := &unstructured.Unstructured{}
	cm.SetAPIVersion("v1")
	cm.SetKind("ConfigMap")
	if err := r.reader.Get(ctx, r.key, cm); err != nil {
		return reconcile.Result{}, fmt.Errorf("reading the training runtimes ConfigMap %s: %w", r.key, err)
	}
	data, _, err := unstructured.NestedStringMap(cm.Object, "data")
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("ConfigMap %s: %w", r.key, err)
	}
	desired, err := r.decode(data)
	if err != nil {
		// A broken ConfigMap is the chart's bug, not a transient error:
		// applying half of it could delete runtimes in use.
		log.Error(err, "not installing the training runtimes", "configMap", r.key.String())
		return reconcile.Result{}, nil
	}
	release := cm.GetLabels()[labelInstance]
	names := sets.New[string]()
	for _, rt := range desired {
		names.Insert(rt.GetName())
		live := &trainer.ClusterTrainingRuntime{}
		err := r.reader.Get(ctx, client.ObjectKey{Name: rt.GetName()}, live)
		switch {
		case apierrors.IsNotFound(err):
		case meta.IsNoMatchError(err):
			return reconcile.Result{}, fmt.Errorf("the ClusterTrainingRuntime CRD is not served yet: %w", err)
		case err != nil:
			return reconcile.Result{}, err
		case !r.mayTake(live, release):
			log.Info("a ClusterTrainingRuntime of this name exists and is not Gantry's: leaving it as it is",
				"runtime", rt.GetName(), "configMap", r.key.String())
			continue
		}
		if err := r.client.Patch(ctx, rt, client.Apply, client.FieldOwner(runtimeInstallerOwner), client.ForceOwnership); err != nil {
			return reconcile.Result{}, fmt.Errorf("applying ClusterTrainingRuntime %s: %w", rt.GetName(), err)
		}
	}
	// What an earlier version of the ConfigMap listed and this one does
	// not (a runtime turned off) goes; TrainJobs using it are protected by
	// its in-use finalizer.
	var list trainer.ClusterTrainingRuntimeList
	if err := r.reader.List(ctx, &list, client.MatchingLabels{LabelRuntimeSet: r.setValue()}); err != nil {
		return reconcile.Result{}, err
	}
	for i := range list.Items {
		rt := &list.Items[i]
		if names.Has(rt.Name) || !rt.DeletionTimestamp.IsZero() {
			continue
		}
		if err := r.client.Delete(ctx, rt); client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, fmt.Errorf("deleting ClusterTrainingRuntime %s, no longer shipped: %w", rt.Name, err)
		}
		log.Info("deleted a ClusterTrainingRuntime no longer in the chart's list", "runtime", rt.Name)
	}
	return reconcile.Result{}, nil
}

// mayTake reports whether the installer may apply over live: one it
// applied, or one the same release (name and namespace, as Helm records
// them) created itself before the runtimes moved into the ConfigMap.
func (r *runtimeInstaller) mayTake(live *trainer.ClusterTrainingRuntime, release string) bool {
	if live.GetLabels()[LabelRuntimeSet] == r.setValue() {
		return true
	}
	a := live.GetAnnotations()
	return release != "" && a[annotationHelmRelease] == release && a[annotationHelmReleaseNamespace] == r.key.Namespace
}

// decode parses the ConfigMap's documents, in key order, into the objects
// to apply: ClusterTrainingRuntimes only, each named once, labelled as
// Gantry's and as this set's.
func (r *runtimeInstaller) decode(data map[string]string) ([]*unstructured.Unstructured, error) {
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	seen := sets.New[string]()
	var out []*unstructured.Unstructured
	for _, k := range keys {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(data[k]), &obj.Object); err != nil {
			return nil, fmt.Errorf("key %s: %w", k, err)
		}
		if obj.Object == nil {
			continue
		}
		if gvk := obj.GroupVersionKind(); gvk != trainer.GroupVersion.WithKind(trainer.ClusterTrainingRuntimeKind) {
			return nil, fmt.Errorf("key %s: %s is not a %s", k, gvk, trainer.ClusterTrainingRuntimeKind)
		}
		if obj.GetName() == "" || seen.Has(obj.GetName()) {
			return nil, fmt.Errorf("key %s: the runtime name %q is empty or repeated", k, obj.GetName())
		}
		seen.Insert(obj.GetName())
		labels := obj.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[LabelRuntimeSet] = r.setValue()
		labels[gbuilder.LabelManagedBy] = gbuilder.ManagedByGantry
		obj.SetLabels(labels)
		out = append(out, obj)
	}
	return out, nil
}
