package slurmctld

import (
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/framework/refresolver"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

func TestReadyCondition(t *testing.T) {
	c := slinkytesting.MakeController("slurm", "ns").Keys("k").Obj()
	c.Generation = 3
	sts := func(gen, observed int64, ready, updated int32) *appsv1.StatefulSet {
		s := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1)}}
		s.Generation = gen
		s.Status = appsv1.StatefulSetStatus{ObservedGeneration: observed, ReadyReplicas: ready, UpdatedReplicas: updated}
		return s
	}
	missing := &refresolver.NotFoundError{Kind: "Secret", Namespace: "ns", Name: "k", Key: "slurm.key"}
	tests := []struct {
		name       string
		c          *slinkyv1beta1.Controller
		sts        *appsv1.StatefulSet
		err        error
		wantStatus metav1.ConditionStatus
		wantReason string
	}{
		{"ready", c, sts(2, 2, 1, 1), nil, metav1.ConditionTrue, ReasonStatefulSetReady},
		{"pod not ready", c, sts(2, 2, 0, 1), nil, metav1.ConditionFalse, ReasonStatefulSetNotReady},
		{"ready pod of an old revision", c, sts(2, 2, 1, 0), nil, metav1.ConditionFalse, ReasonStatefulSetNotReady},
		{"new spec not yet observed", c, sts(3, 2, 1, 1), nil, metav1.ConditionFalse, ReasonStatefulSetNotReady},
		{"no StatefulSet yet", c, nil, nil, metav1.ConditionFalse, ReasonStatefulSetNotReady},
		{"missing key wins over a ready StatefulSet", c, sts(2, 2, 1, 1), errors.Join(missing), metav1.ConditionFalse, ReasonReferenceNotFound},
		{"other sync failure", c, sts(2, 2, 1, 1), errors.New("boom"), metav1.ConditionFalse, ReasonSyncFailed},
		{"external", slinkytesting.MakeController("slurm", "ns").External("h", 6817).Obj(), nil, nil, metav1.ConditionTrue, ReasonExternal},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := readyCondition(tc.c, tc.sts, tc.err)
			if got.Type != ConditionReady || got.Status != tc.wantStatus || got.Reason != tc.wantReason || got.ObservedGeneration != tc.c.Generation {
				t.Errorf("got %+v, want status %s reason %s", got, tc.wantStatus, tc.wantReason)
			}
			if got.Message == "" {
				t.Error("a condition without a message tells the user nothing")
			}
		})
	}
}
