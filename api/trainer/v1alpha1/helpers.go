package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IsFinished reports whether a TrainJob with these conditions has ended:
// Complete or Failed is true.
func IsFinished(conds []metav1.Condition) bool {
	return meta.IsStatusConditionTrue(conds, TrainJobComplete) || meta.IsStatusConditionTrue(conds, TrainJobFailed)
}
