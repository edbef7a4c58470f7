package status

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Reported remembers, per object and condition type, the condition an event
// was last recorded for. A reconcile decides that a condition changed by
// comparing it with the status it read, and that status comes from the
// cache: a second reconcile that runs before the cache has the first one's
// status write would see the old condition and record the same event
// again. Reported lets it see that the event was already recorded. Safe
// for concurrent use; after a restart an event may be recorded once more.
type Reported struct {
	last sync.Map // reportedKey -> reportedCondition
}

type reportedKey struct {
	uid      types.UID
	condType string
}

type reportedCondition struct {
	status          metav1.ConditionStatus
	reason, message string
}

// Changed reports whether cond differs (in status, reason or message) from
// the last condition of its type recorded for the object with uid, and
// records cond as the last one.
func (r *Reported) Changed(uid types.UID, cond metav1.Condition) bool {
	next := reportedCondition{status: cond.Status, reason: cond.Reason, message: cond.Message}
	prev, loaded := r.last.Swap(reportedKey{uid: uid, condType: cond.Type}, next)
	return !loaded || prev.(reportedCondition) != next
}

// Forget drops what was recorded for the object with uid, once it is gone.
func (r *Reported) Forget(uid types.UID) {
	r.last.Range(func(k, _ any) bool {
		if k.(reportedKey).uid == uid {
			r.last.Delete(k)
		}
		return true
	})
}
