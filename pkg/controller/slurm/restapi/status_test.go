package restapi

import (
	"errors"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gantry-dev/gantry/pkg/framework/refresolver"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

func TestReadyCondition(t *testing.T) {
	ra := slinkytesting.MakeRestApi("r", "ns", "slurm").Obj()
	ra.Generation = 2
	deploy := func(gen, observed int64, available, updated int32) *appsv1.Deployment {
		d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)}}
		d.Generation = gen
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: observed, AvailableReplicas: available, UpdatedReplicas: updated}
		return d
	}
	noController := fmt.Errorf("step Controller: %w", &refresolver.NotFoundError{Kind: "Controller", Namespace: "ns", Name: "slurm"})
	noKey := fmt.Errorf("step Deployment: %w", &refresolver.NotFoundError{Kind: "Secret", Namespace: "ns", Name: "keys"})
	tests := []struct {
		name       string
		d          *appsv1.Deployment
		err        error
		wantStatus metav1.ConditionStatus
		wantReason string
	}{
		{"available", deploy(1, 1, 2, 2), nil, metav1.ConditionTrue, ReasonDeploymentAvailable},
		{"one replica short", deploy(1, 1, 1, 2), nil, metav1.ConditionFalse, ReasonDeploymentUnavailable},
		{"rollout not observed", deploy(2, 1, 2, 2), nil, metav1.ConditionFalse, ReasonDeploymentUnavailable},
		{"no Deployment yet", nil, nil, metav1.ConditionFalse, ReasonDeploymentUnavailable},
		{"missing controller", nil, errors.Join(noController), metav1.ConditionFalse, ReasonControllerNotFound},
		{"missing key", deploy(1, 1, 2, 2), errors.Join(noKey), metav1.ConditionFalse, ReasonReferenceNotFound},
		{"other failure", deploy(1, 1, 2, 2), errors.New("boom"), metav1.ConditionFalse, ReasonSyncFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := readyCondition(ra, tc.d, tc.err)
			if got.Status != tc.wantStatus || got.Reason != tc.wantReason || got.ObservedGeneration != 2 || got.Message == "" {
				t.Errorf("got %+v, want %s/%s", got, tc.wantStatus, tc.wantReason)
			}
		})
	}
}
