package trainjob

import (
	"testing"

	"k8s.io/utils/ptr"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
)

// TestResolveRunPolicy: a value the TrainJob sets wins, zero included; a
// value it leaves unset comes from the runtime's runPolicy; with neither,
// nothing applies.
func TestResolveRunPolicy(t *testing.T) {
	runtimeWith := func(deadline *int64, ttl *int32) *trainer.TrainingRuntimeSpec {
		return &trainer.TrainingRuntimeSpec{RunPolicy: &trainer.RunPolicy{ActiveDeadlineSeconds: deadline, TTLSecondsAfterFinished: ttl}}
	}
	cases := []struct {
		name        string
		jobDeadline *int64
		jobTTL      *int32
		runtime     *trainer.TrainingRuntimeSpec
		want        runPolicy
	}{
		{name: "neither sets anything", runtime: &trainer.TrainingRuntimeSpec{}, want: runPolicy{}},
		{name: "no runtime at hand", want: runPolicy{}},
		{name: "runtime without a runPolicy", jobTTL: ptr.To[int32](5), runtime: &trainer.TrainingRuntimeSpec{},
			want: runPolicy{ttlSecondsAfterFinished: ptr.To[int32](5)}},
		{name: "the runtime's defaults", runtime: runtimeWith(ptr.To[int64](600), ptr.To[int32](3600)),
			want: runPolicy{activeDeadlineSeconds: ptr.To[int64](600), ttlSecondsAfterFinished: ptr.To[int32](3600),
				deadlineFromRuntime: true, ttlFromRuntime: true}},
		{name: "the job overrides both", jobDeadline: ptr.To[int64](60), jobTTL: ptr.To[int32](30),
			runtime: runtimeWith(ptr.To[int64](600), ptr.To[int32](3600)),
			want:    runPolicy{activeDeadlineSeconds: ptr.To[int64](60), ttlSecondsAfterFinished: ptr.To[int32](30)}},
		{name: "a TTL of zero on the job is a value, not unset", jobTTL: ptr.To[int32](0),
			runtime: runtimeWith(nil, ptr.To[int32](3600)),
			want:    runPolicy{ttlSecondsAfterFinished: ptr.To[int32](0)}},
		{name: "one from each", jobDeadline: ptr.To[int64](60), runtime: runtimeWith(ptr.To[int64](600), ptr.To[int32](3600)),
			want: runPolicy{activeDeadlineSeconds: ptr.To[int64](60), ttlSecondsAfterFinished: ptr.To[int32](3600), ttlFromRuntime: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tj := &trainer.TrainJob{Spec: trainer.TrainJobSpec{ActiveDeadlineSeconds: tc.jobDeadline, TTLSecondsAfterFinished: tc.jobTTL}}
			got := resolveRunPolicy(tj, tc.runtime)
			if !equalRunPolicy(got, tc.want) {
				t.Errorf("resolveRunPolicy() = %s, want %s", got, tc.want)
			}
		})
	}
}

func equalRunPolicy(a, b runPolicy) bool {
	return ptr.Equal(a.activeDeadlineSeconds, b.activeDeadlineSeconds) && ptr.Equal(a.ttlSecondsAfterFinished, b.ttlSecondsAfterFinished) &&
		a.deadlineFromRuntime == b.deadlineFromRuntime && a.ttlFromRuntime == b.ttlFromRuntime
}
