package coscheduling

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
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

// failingMapper fails every lookup the way an unreachable discovery does.
type failingMapper struct{ meta.RESTMapper }

func (failingMapper) RESTMapping(schema.GroupKind, ...string) (*meta.RESTMapping, error) {
	return nil, errors.New("discovery unavailable")
}

func newInfo(t *testing.T, job *trainer.TrainJob) *plugin.Info {
	t.Helper()
	node := trainertesting.MakeContainer("node", "t").Resources(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")}, nil).Obj()
	init := trainertesting.MakeContainer("dataset-initializer", "d").Resources(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}, nil).Obj()
	spec := trainertesting.MakeRuntimeSpec().NumNodes(3).Coscheduling(nil).
		ReplicatedJob(trainertesting.ReplicatedJob("dataset-initializer", "dataset-initializer", init)).
		ReplicatedJob(trainertesting.ReplicatedJob("node", "trainer", node)).Obj()
	info, err := plugin.NewInfo(job, spec)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func newReader(t *testing.T, objs ...client.Object) client.Reader {
	return fake.NewClientBuilder().WithScheme(apiruntime.NewScheme()).WithObjects(objs...).Build()
}

func TestPodGroup(t *testing.T) {
	job := trainertesting.MakeTrainJob("gang", "default").Obj()
	info := newInfo(t, job)
	p := New(mapperWithPodGroup())
	if err := p.EnforcePodGroupPolicy(info, job); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{PodGroupLabel: "gang"}, info.Scheduler.PodLabels); diff != "" {
		t.Errorf("pod labels (-want +got):\n%s", diff)
	}
	comps, err := p.Build(context.Background(), newReader(t), info, job)
	if err != nil {
		t.Fatal(err)
	}
	if len(comps) != 1 {
		t.Fatalf("got %d components", len(comps))
	}
	pg := comps[0].Object.(*unstructured.Unstructured)
	want := map[string]any{
		"minMember":              int64(4),
		"minResources":           map[string]any{"cpu": "6500m", "memory": "3Gi"},
		"scheduleTimeoutSeconds": int64(60),
	}
	if diff := cmp.Diff(want, pg.Object["spec"]); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	if pg.GetName() != "gang" || pg.GetNamespace() != "default" || pg.GroupVersionKind() != PodGroupGVK || len(pg.GetOwnerReferences()) != 1 {
		t.Errorf("metadata = %s/%s %v owners %v", pg.GetNamespace(), pg.GetName(), pg.GroupVersionKind(), pg.GetOwnerReferences())
	}
}

func TestCRDMissingIsAWarningNotAFailure(t *testing.T) {
	for name, mapper := range map[string]meta.RESTMapper{"no mapper": nil, "kind not served": meta.NewDefaultRESTMapper(nil)} {
		t.Run(name, func(t *testing.T) {
			job := trainertesting.MakeTrainJob("gang", "default").Obj()
			info := newInfo(t, job)
			p := New(mapper)
			if err := p.EnforcePodGroupPolicy(info, job); err != nil {
				t.Fatal(err)
			}
			if len(info.Scheduler.PodLabels) != 0 || len(info.Warnings) != 1 {
				t.Errorf("labels %v warnings %v", info.Scheduler.PodLabels, info.Warnings)
			}
			comps, err := p.Build(context.Background(), newReader(t), info, job)
			if err != nil || len(comps) != 0 {
				t.Errorf("Build = %d components, %v", len(comps), err)
			}
		})
	}
}

func TestDiscoveryErrorIsReturned(t *testing.T) {
	job := trainertesting.MakeTrainJob("gang", "default").Obj()
	if err := New(failingMapper{}).EnforcePodGroupPolicy(newInfo(t, job), job); err == nil {
		t.Fatal("a failed lookup must be retried, not read as a missing CRD")
	}
}

func TestExistingPodGroupOnlyRewrittenWhileSuspended(t *testing.T) {
	existing := &unstructured.Unstructured{}
	existing.SetGroupVersionKind(PodGroupGVK)
	existing.SetName("gang")
	existing.SetNamespace("default")
	for _, suspend := range []bool{false, true} {
		job := trainertesting.MakeTrainJob("gang", "default").Suspend(suspend).Obj()
		info := newInfo(t, job)
		p := New(mapperWithPodGroup())
		if err := p.EnforcePodGroupPolicy(info, job); err != nil {
			t.Fatal(err)
		}
		comps, err := p.Build(context.Background(), newReader(t, existing.DeepCopy()), info, job)
		if err != nil {
			t.Fatal(err)
		}
		if want := ptr.To(suspend); (len(comps) == 1) != *want {
			t.Errorf("suspend=%v: got %d components", suspend, len(comps))
		}
	}
}

func TestInactiveWithoutPolicy(t *testing.T) {
	job := trainertesting.MakeTrainJob("a", "default").Obj()
	info, err := plugin.NewInfo(job, trainertesting.MakeRuntimeSpec().ReplicatedJob(trainertesting.TrainerJob("t")).Obj())
	if err != nil {
		t.Fatal(err)
	}
	p := New(mapperWithPodGroup())
	if err := p.EnforcePodGroupPolicy(info, job); err != nil || len(info.Scheduler.PodLabels) != 0 || len(info.Warnings) != 0 {
		t.Errorf("acted without a policy: %v %v %v", err, info.Scheduler.PodLabels, info.Warnings)
	}
}
