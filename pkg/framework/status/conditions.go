package status

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SetCondition is meta.SetStatusCondition with the reconcile's clock: a
// transition whose condition carries no timestamp is stamped with now
// rather than wall time, so status calculation stays a pure function of
// its inputs and tests can pin the clock.
func SetCondition(conds *[]metav1.Condition, c metav1.Condition, now metav1.Time) {
	if c.LastTransitionTime.IsZero() {
		c.LastTransitionTime = now
	}
	meta.SetStatusCondition(conds, c)
}
