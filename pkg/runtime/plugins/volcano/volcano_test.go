package volcano

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime/plugin"
	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

func mapperWithPodGroup() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(PodGroupGVK, meta.RESTScopeNamespace)
	return m
}

type failingMapper struct{ meta.RESTMapper }

func (failingMapper) RESTMapping(schema.GroupKind, ...string) (*meta.RESTMapping, error) {
	return nil, errors.New("discovery unavailable")
}

// runtimeSpec: a dataset initializer (500m) and a three-node trainer (2 CPU, 1Gi each).
func runtimeSpec(edit func(*trainer.TrainingRuntimeSpec)) *trainer.TrainingRuntimeSpec {
	node := trainertesting.MakeContainer("node", "t").Resources(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")}, nil).Obj()
	init := trainertesting.MakeContainer("dataset-initializer", "d").Resources(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}, nil).Obj()
	spec := trainertesting.MakeRuntimeSpec().NumNodes(3).Volcano().
		ReplicatedJob(trainertesting.ReplicatedJob("dataset-initializer", "dataset-initializer", init)).
		ReplicatedJob(trainertesting.ReplicatedJob("node", "trainer", node)).Obj()
	if edit != nil {
		edit(spec)
	}
	return spec
}

func newInfo(t *testing.T, job *trainer.TrainJob, spec *trainer.TrainingRuntimeSpec) *plugin.Info {
	t.Helper()
	info, err := plugin.NewInfo(job, spec)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func newReader(objs ...client.Object) client.Reader {
	return fake.NewClientBuilder().WithScheme(apiruntime.NewScheme()).WithObjects(objs...).Build()
}

func build(t *testing.T, p *Volcano, reader client.Reader, job *trainer.TrainJob, spec *trainer.TrainingRuntimeSpec) (*plugin.Info, []plugin.Component) {
	t.Helper()
	info := newInfo(t, job, spec)
	if err := p.EnforcePodGroupPolicy(info, job); err != nil {
		t.Fatal(err)
	}
	comps, err := p.Build(context.Background(), reader, info, job)
	if err != nil {
		t.Fatal(err)
	}
	return info, comps
}

func TestPodGroup(t *testing.T) {
	job := trainertesting.MakeTrainJob("gang", "default").Obj()
	info, comps := build(t, New(mapperWithPodGroup()), newReader(), job, runtimeSpec(nil))
	if diff := cmp.Diff(map[string]string{GroupNameAnnotation: "gang"}, info.Scheduler.PodAnnotations); diff != "" {
		t.Errorf("pod annotations (-want +got):\n%s", diff)
	}
	if len(info.Scheduler.PodLabels) != 0 {
		t.Errorf("pod labels = %v, want none", info.Scheduler.PodLabels)
	}
	if len(comps) != 1 {
		t.Fatalf("got %d components", len(comps))
	}
	pg := comps[0].Object.(*unstructured.Unstructured)
	if pg.GroupVersionKind() != PodGroupGVK || pg.GetName() != "gang" || pg.GetNamespace() != "default" {
		t.Errorf("object %s %s/%s", pg.GroupVersionKind(), pg.GetNamespace(), pg.GetName())
	}
	owners := pg.GetOwnerReferences()
	if len(owners) != 1 || owners[0].Kind != trainer.TrainJobKind || !ptr.Deref(owners[0].Controller, false) || !ptr.Deref(owners[0].BlockOwnerDeletion, false) {
		t.Errorf("owner references %+v", owners)
	}
	want := map[string]any{
		"minMember":    int64(4),
		"minResources": map[string]any{"cpu": "6500m", "memory": "3Gi"},
	}
	if diff := cmp.Diff(want, pg.Object["spec"]); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
}

func TestPodGroupQueuePriorityAndTopology(t *testing.T) {
	spec := runtimeSpec(func(s *trainer.TrainingRuntimeSpec) {
		s.Template.Annotations = map[string]string{QueueAnnotation: "research"}
		s.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.PriorityClassName = "low"
		s.Template.Spec.ReplicatedJobs[1].Template.Spec.Template.Spec.PriorityClassName = "high"
		s.PodGroupPolicy.Volcano.NetworkTopology = &trainer.VolcanoNetworkTopologySpec{
			Mode: ptr.To(trainer.VolcanoNetworkTopologySoft), HighestTierAllowed: ptr.To(2),
		}
	})
	// A runtime patch overrides the runtime's queue, as in Trainer.
	job := trainertesting.MakeTrainJob("gang", "default").RuntimePatch("example.com/kueue", &trainer.TrainingRuntimeSpecPatch{
		Template: &trainer.JobSetTemplatePatch{Metadata: &metav1.ObjectMeta{Annotations: map[string]string{QueueAnnotation: "urgent"}}},
	}).Obj()
	_, comps := build(t, New(mapperWithPodGroup()), newReader(), job, spec)
	if len(comps) != 1 {
		t.Fatalf("got %d components", len(comps))
	}
	got := comps[0].Object.(*unstructured.Unstructured).Object["spec"].(map[string]any)
	if got["queue"] != "urgent" {
		t.Errorf("queue = %v, want urgent", got["queue"])
	}
	if got["priorityClassName"] != "high" {
		t.Errorf("priorityClassName = %v, want the last replicated job's, high", got["priorityClassName"])
	}
	if diff := cmp.Diff(map[string]any{"mode": "soft", "highestTierAllowed": int64(2)}, got["networkTopology"]); diff != "" {
		t.Errorf("networkTopology (-want +got):\n%s", diff)
	}
	if got["minMember"] != int64(4) {
		t.Errorf("minMember = %v, want 4", got["minMember"])
	}
}

func TestValidateQueue(t *testing.T) {
	p := New(mapperWithPodGroup())
	job := trainertesting.MakeTrainJob("gang", "default").Obj()
	for name, tc := range map[string]struct {
		annotations map[string]string
		wantErr     bool
	}{
		"no annotation":    {},
		"named queue":      {annotations: map[string]string{QueueAnnotation: "q"}},
		"empty queue name": {annotations: map[string]string{QueueAnnotation: ""}, wantErr: true},
	} {
		t.Run(name, func(t *testing.T) {
			spec := runtimeSpec(func(s *trainer.TrainingRuntimeSpec) { s.Template.Annotations = tc.annotations })
			errs := p.Validate(newInfo(t, job, spec), nil, job)
			if (len(errs) > 0) != tc.wantErr {
				t.Fatalf("errors %v, want error %v", errs, tc.wantErr)
			}
			if tc.wantErr && errs[0].Field != "spec.annotations[scheduling.volcano.sh/queue-name]" {
				t.Errorf("field %s", errs[0].Field)
			}
		})
	}
}

func TestInactiveWithoutPolicy(t *testing.T) {
	job := trainertesting.MakeTrainJob("plain", "default").Obj()
	spec := runtimeSpec(func(s *trainer.TrainingRuntimeSpec) {
		s.PodGroupPolicy = nil
		s.Template.Annotations = map[string]string{QueueAnnotation: ""}
	})
	p := New(mapperWithPodGroup())
	info, comps := build(t, p, newReader(), job, spec)
	if len(comps) != 0 || len(info.Scheduler.PodAnnotations) != 0 || len(info.Warnings) != 0 {
		t.Errorf("components %v, annotations %v, warnings %v", comps, info.Scheduler.PodAnnotations, info.Warnings)
	}
	if errs := p.Validate(info, nil, job); len(errs) != 0 {
		t.Errorf("Validate without a Volcano policy: %v", errs)
	}
}

func TestCRDMissing(t *testing.T) {
	job := trainertesting.MakeTrainJob("gang", "default").Obj()
	for name, mapper := range map[string]meta.RESTMapper{"nil mapper": nil, "kind not served": meta.NewDefaultRESTMapper(nil)} {
		t.Run(name, func(t *testing.T) {
			info, comps := build(t, New(mapper), newReader(), job, runtimeSpec(nil))
			if len(comps) != 0 || len(info.Scheduler.PodAnnotations) != 0 {
				t.Errorf("components %v, annotations %v", comps, info.Scheduler.PodAnnotations)
			}
			if diff := cmp.Diff([]string{CRDMissingWarning}, info.Warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
	info := newInfo(t, job, runtimeSpec(nil))
	if err := New(failingMapper{}).EnforcePodGroupPolicy(info, job); err == nil {
		t.Error("a discovery failure must be an error, not a missing CRD")
	}
}

func TestExistingPodGroupKeptWhileRunning(t *testing.T) {
	existing := &unstructured.Unstructured{}
	existing.SetGroupVersionKind(PodGroupGVK)
	existing.SetName("gang")
	existing.SetNamespace("default")
	reader := newReader(existing)
	p := New(mapperWithPodGroup())

	running := trainertesting.MakeTrainJob("gang", "default").Obj()
	if _, comps := build(t, p, reader, running, runtimeSpec(nil)); len(comps) != 0 {
		t.Errorf("running job: got %d components, want the PodGroup left alone", len(comps))
	}
	suspended := trainertesting.MakeTrainJob("gang", "default").Suspend(true).Obj()
	if _, comps := build(t, p, reader, suspended, runtimeSpec(nil)); len(comps) != 1 {
		t.Errorf("suspended job: got %d components, want the PodGroup rewritten", len(comps))
	}
}
