package trainer_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	upstream "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	upstreamruntime "github.com/kubeflow/trainer/v2/pkg/runtime"
	upstreamcore "github.com/kubeflow/trainer/v2/pkg/runtime/core"
	upstreamtesting "github.com/kubeflow/trainer/v2/pkg/util/testing"

	gantry "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/controller/trainjob"
	gantryruntime "github.com/gantry-dev/gantry/pkg/runtime"
	"github.com/gantry-dev/gantry/pkg/webhook"
	trainertesting "github.com/gantry-dev/gantry/test/wrappers/trainer"
)

// asTrainer converts a Gantry object into Trainer's type of the same kind
// (the two share their JSON).
func asTrainer(t *testing.T, from, to any) {
	t.Helper()
	data, err := json.Marshal(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, to); err != nil {
		t.Fatal(err)
	}
}

// upstreamRuntimes are Trainer v2.3.0's TrainingRuntime and
// ClusterTrainingRuntime over a fake client holding objs, set up as its
// own tests do.
func upstreamRuntimes(t *testing.T, objs ...client.Object) (training, cluster upstreamruntime.Runtime) {
	t.Helper()
	ctx := context.Background()
	builder := upstreamtesting.NewClientBuilder().WithObjects(objs...)
	c := builder.Build()
	training, err := upstreamcore.NewTrainingRuntime(ctx, c, upstreamtesting.AsIndex(builder), nil)
	if err != nil {
		t.Fatal(err)
	}
	cluster, err = upstreamcore.NewClusterTrainingRuntime(ctx, c, upstreamtesting.AsIndex(builder), nil)
	if err != nil {
		t.Fatal(err)
	}
	return training, cluster
}

func gantryScheme(t *testing.T) *apiruntime.Scheme {
	t.Helper()
	scheme := apiruntime.NewScheme()
	for _, add := range []func(*apiruntime.Scheme) error{clientgoscheme.AddToScheme, gantry.AddToScheme, jobsetv1alpha2.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return scheme
}

// TestDeprecatedRuntimeWarningMatchesTrainer: the warnings Gantry's
// TrainJob webhook returns for a job are those of Trainer v2.3.0's own
// ValidateObjects (which its TrainJob webhook returns, on create and on
// update) for every value of trainer.kubeflow.org/support on a
// ClusterTrainingRuntime and on a TrainingRuntime.
func TestDeprecatedRuntimeWarningMatchesTrainer(t *testing.T) {
	ctx := context.Background()
	spec := trainertesting.MakeRuntimeSpec().Torch(nil).ReplicatedJob(trainertesting.TrainerJob("torch:runtime")).Obj()
	warned := 0
	for _, kind := range []string{gantry.ClusterTrainingRuntimeKind, gantry.TrainingRuntimeKind} {
		for _, support := range []string{"", "deprecated", "deprecated-extra", "supported"} {
			t.Run(kind+"/"+support, func(t *testing.T) {
				var rt client.Object
				var upRT client.Object
				if kind == gantry.ClusterTrainingRuntimeKind {
					rt = trainertesting.MakeClusterTrainingRuntime("old-torch").Spec(spec).Obj()
					upRT = &upstream.ClusterTrainingRuntime{}
				} else {
					rt = trainertesting.MakeTrainingRuntime("old-torch", "ns").Spec(spec).Obj()
					upRT = &upstream.TrainingRuntime{}
				}
				if support != "" {
					rt.SetLabels(map[string]string{"trainer.kubeflow.org/support": support})
				}
				asTrainer(t, rt, upRT)
				job := trainertesting.MakeTrainJob("tj", "ns").RuntimeRef(kind, "old-torch").Obj()
				upJob := &upstream.TrainJob{}
				asTrainer(t, job, upJob)
				updated := job.DeepCopy()
				updated.Labels = map[string]string{"team": "a"}
				upUpdated := &upstream.TrainJob{}
				asTrainer(t, updated, upUpdated)

				training, cluster := upstreamRuntimes(t, upRT)
				r := cluster
				if kind == gantry.TrainingRuntimeKind {
					r = training
				}
				wantCreate, errs := r.ValidateObjects(ctx, nil, upJob)
				if len(errs) > 0 {
					t.Fatalf("Trainer refuses the job: %v", errs.ToAggregate())
				}
				wantUpdate, errs := r.ValidateObjects(ctx, upJob, upUpdated)
				if len(errs) > 0 {
					t.Fatalf("Trainer refuses the update: %v", errs.ToAggregate())
				}
				if len(wantCreate) > 0 {
					warned++
				}

				c := fake.NewClientBuilder().WithScheme(gantryScheme(t)).WithObjects(rt).Build()
				grt, err := gantryruntime.New(gantryruntime.Options{Existing: c})
				if err != nil {
					t.Fatal(err)
				}
				v := &webhook.TrainJobValidator{Runtime: grt, Reader: c}
				gotCreate, err := v.ValidateCreate(ctx, job)
				if err != nil {
					t.Fatalf("Gantry refuses the job: %v", err)
				}
				gotUpdate, err := v.ValidateUpdate(ctx, job, updated)
				if err != nil {
					t.Fatalf("Gantry refuses the update: %v", err)
				}
				for _, c := range []struct {
					op        string
					got, want admission.Warnings
				}{{"create", gotCreate, wantCreate}, {"update", gotUpdate, wantUpdate}} {
					if !slices.Equal(c.got, c.want) {
						t.Errorf("%s: Gantry warns %q, Trainer %q", c.op, c.got, c.want)
					}
				}
			})
		}
	}
	if warned != 1 {
		t.Errorf("Trainer warned for %d of the cases, want 1 (the deprecated ClusterTrainingRuntime)", warned)
	}
}

// TestTrainerBuildsFromGantrysSnapshotConfigMap: the ConfigMap in which
// Gantry keeps the snapshot of a runtime too big for the JobSet's
// annotations is one Trainer v2.3.0 reads as its own: after a switch back
// to Trainer, its ClusterTrainingRuntime.NewObjects builds the job from
// that snapshot, not from the runtime as it is now.
func TestTrainerBuildsFromGantrysSnapshotConfigMap(t *testing.T) {
	ctx := context.Background()
	line := "print('a line of an inline training script')\n"
	script := strings.Repeat(line, (300<<10)/len(line))
	runtimeSpec := func(image string) *gantry.TrainingRuntimeSpec {
		node := trainertesting.MakeContainer(gantry.TrainerNodeName, image).Command("python", "-c", script).Obj()
		return trainertesting.MakeRuntimeSpec().Torch(nil).
			ReplicatedJob(trainertesting.ReplicatedJob(gantry.TrainerNodeName, gantry.AncestorTrainer, node)).Obj()
	}
	live := &upstream.ClusterTrainingRuntime{}
	asTrainer(t, trainertesting.MakeClusterTrainingRuntime("big").Spec(runtimeSpec("torch:live")).Obj(), live)
	job := trainertesting.MakeTrainJob("tj", "ns").RuntimeRef(gantry.ClusterTrainingRuntimeKind, "big").Obj()
	job.UID = types.UID("tj-uid")
	upJob := &upstream.TrainJob{}
	asTrainer(t, job, upJob)
	snapshot, err := trainjob.SnapshotConfigMap(job, runtimeSpec("torch:snapshot"))
	if err != nil {
		t.Fatal(err)
	}
	if size := len(snapshot.Data[trainjob.TrainerSnapshotKey]); size < 256<<10 {
		t.Fatalf("the snapshot is %d bytes, want one past what annotations may hold", size)
	}

	for _, tc := range []struct {
		name      string
		objs      []client.Object
		wantImage string
	}{
		{name: "Gantry's snapshot", objs: []client.Object{live, snapshot}, wantImage: "torch:snapshot"},
		{name: "no snapshot (the control)", objs: []client.Object{live}, wantImage: "torch:live"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, cluster := upstreamRuntimes(t, tc.objs...)
			objs, err := cluster.NewObjects(ctx, upJob.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			var images []string
			for _, o := range objs {
				m, err := toMap(o)
				if err != nil {
					t.Fatal(err)
				}
				if m["kind"] != "JobSet" {
					continue
				}
				js := &jobsetv1alpha2.JobSet{}
				asTrainer(t, m, js)
				for _, rj := range js.Spec.ReplicatedJobs {
					for _, c := range rj.Template.Spec.Template.Spec.Containers {
						if c.Name == gantry.TrainerNodeName {
							images = append(images, c.Image)
						}
					}
				}
			}
			if !slices.Equal(images, []string{tc.wantImage}) {
				t.Errorf("Trainer builds the trainer with %q, want %q", images, tc.wantImage)
			}
		})
	}
}
