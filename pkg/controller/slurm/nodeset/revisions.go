package nodeset

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	"github.com/gantry-dev/gantry/pkg/framework/builder"
)

// maxCollisionRetries bounds the name-collision loop; each collision bumps
// status.collisionCount, so a persistent clash cannot spin forever.
const maxCollisionRetries = 5

// revisionData is what a revision records: the fields that shape a pod, as
// a strategic merge patch that would restore them (the format Kubernetes'
// StatefulSet history uses, so `kubectl rollout history`-style tooling can
// read it). Fields outside the pod template that change the pods are added
// by hand: extraConf and the containers become slurmd flags and
// containers, ordinalPadding renames the pods.
//
// spec.ssh shapes the pods only when enabled (see sshRevisionEntry):
// with ssh disabled it contributes the fixed entry it always did, so that
// the revisions of NodeSets without ssh keep their hashes and their pods
// are not replaced on upgrade, nor when an unused spec.ssh is edited.
func revisionData(n *slinkyv1beta1.NodeSet, ssh SshHashes) ([]byte, error) {
	sshEntry, err := sshRevisionEntry(n, ssh)
	if err != nil {
		return nil, err
	}
	spec := map[string]any{
		"template":       withReplace(n.Spec.Template),
		"ordinalPadding": n.Spec.OrdinalPadding,
		"ssh":            sshEntry,
	}
	if n.Spec.OversubscribeNode {
		// It drops the one-pod-per-node rule from the pods, so turning it
		// on or off replaces them; unset it adds nothing, so the hashes of
		// NodeSets made before the field existed do not change.
		spec["oversubscribeNode"] = true
	}
	for key, v := range map[string]any{"slurmd": n.Spec.Slurmd, "logfile": n.Spec.LogFile} {
		raw, err := toMap(v)
		if err != nil {
			return nil, err
		}
		if len(raw) > 0 {
			raw["$patch"] = "replace"
			spec[key] = raw
		}
	}
	if n.Spec.ExtraConf != "" {
		spec["extraConf"] = n.Spec.ExtraConf
	}
	return json.Marshal(map[string]any{"spec": spec})
}

// legacySshRevisionEntry is what an unset spec.ssh contributed to the
// revision data before ssh was supported; a disabled spec.ssh still does.
func legacySshRevisionEntry() map[string]any {
	return map[string]any{"$patch": "replace", "enabled": false, "sssdConfRef": map[string]any{"key": ""}}
}

func withReplace(v any) map[string]any {
	m, err := toMap(v)
	if err != nil || m == nil {
		m = map[string]any{}
	}
	m["$patch"] = "replace"
	return m
}

func toMap(v any) (map[string]any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// RevisionHash is the revision's hash label and name suffix: FNV-32 over
// the data and, after a name collision, the collision count, encoded so it
// contains no vowels (no accidental words) — Kubernetes' scheme.
func RevisionHash(data []byte, collisionCount *int32) string {
	h := fnv.New32()
	_, _ = h.Write(data)
	if collisionCount != nil {
		_, _ = h.Write([]byte(strconv.FormatInt(int64(*collisionCount), 10)))
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// revisions are the NodeSet's ControllerRevisions, sorted by Revision.
type revisions []*appsv1.ControllerRevision

func revisionLabels(n *slinkyv1beta1.NodeSet, hash string) map[string]string {
	l := slinky.NodeSetSelectorLabels(n)
	l[builder.LabelManagedBy] = builder.ManagedByGantry
	l[slinkyv1beta1.LabelNodeSetRevisionHash] = hash
	return l
}

// listRevisions returns the revisions selected by the NodeSet's selector
// that it controls or that nobody controls (candidates for adoption).
func (r *Reconciler) listRevisions(ctx context.Context, n *slinkyv1beta1.NodeSet) (revisions, error) {
	list := &appsv1.ControllerRevisionList{}
	if err := r.Client.List(ctx, list, client.InNamespace(n.Namespace), client.MatchingLabels(slinky.NodeSetSelectorLabels(n))); err != nil {
		return nil, err
	}
	out := make(revisions, 0, len(list.Items))
	for i := range list.Items {
		ref := metav1.GetControllerOf(&list.Items[i])
		if ref == nil || ref.UID == n.UID {
			out = append(out, &list.Items[i])
		}
	}
	slices.SortStableFunc(out, func(a, b *appsv1.ControllerRevision) int {
		if a.Revision != b.Revision {
			return int(a.Revision - b.Revision)
		}
		return compareStrings(a.Name, b.Name)
	})
	return out, nil
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// adoptOrphanRevisions makes the NodeSet the controller of matching
// revisions nobody controls, e.g. after the NodeSet was deleted with
// --cascade=orphan and recreated.
func (r *Reconciler) adoptOrphanRevisions(ctx context.Context, n *slinkyv1beta1.NodeSet, revs revisions) error {
	if n.DeletionTimestamp != nil {
		return nil
	}
	for _, rev := range revs {
		if metav1.GetControllerOf(rev) != nil {
			continue
		}
		patch := client.MergeFromWithOptions(rev.DeepCopy(), client.MergeFromWithOptimisticLock{})
		rev.OwnerReferences = append(rev.OwnerReferences, *metav1.NewControllerRef(n, slinkyv1beta1.NodeSetGVK))
		if rev.Labels[slinkyv1beta1.LabelNodeSetRevisionHash] == "" {
			// An orphan from elsewhere may lack the hash label; its name is
			// unique, which is all the label needs to be.
			rev.Labels[slinkyv1beta1.LabelNodeSetRevisionHash] = rev.Name
		}
		if err := r.Client.Patch(ctx, rev, patch); err != nil {
			return fmt.Errorf("adopting ControllerRevision %s: %w", rev.Name, err)
		}
	}
	return nil
}

// revisionState is the outcome of syncing the revision history.
type revisionState struct {
	current, update *appsv1.ControllerRevision
	collisionCount  int32
}

// hash is the revision hash new pods are labelled with.
func (s revisionState) hash() string {
	return s.update.Labels[slinkyv1beta1.LabelNodeSetRevisionHash]
}

// syncRevisions finds or creates the update revision (the NodeSet as it is
// now) and finds the current one (what status.nodeSetHash last recorded).
// Rolling back to an old template reuses its revision with a new number.
func (r *Reconciler) syncRevisions(ctx context.Context, n *slinkyv1beta1.NodeSet, revs revisions, ssh SshHashes) (revisionState, error) {
	var st revisionState
	if n.Status.CollisionCount != nil {
		st.collisionCount = *n.Status.CollisionCount
	}
	data, err := revisionData(n, ssh)
	if err != nil {
		return st, err
	}
	next := int64(1)
	if len(revs) > 0 {
		next = revs[len(revs)-1].Revision + 1
	}
	var equal *appsv1.ControllerRevision
	for _, rev := range revs {
		if bytes.Equal(rev.Data.Raw, data) {
			equal = rev
		}
	}
	switch {
	case equal != nil && equal == revs[len(revs)-1]:
		st.update = equal
	case equal != nil:
		patch := client.MergeFrom(equal.DeepCopy())
		equal.Revision = next
		if err := r.Client.Patch(ctx, equal, patch); err != nil {
			return st, fmt.Errorf("renumbering ControllerRevision %s: %w", equal.Name, err)
		}
		st.update = equal
	default:
		if st.update, err = r.createRevision(ctx, n, data, next, &st.collisionCount); err != nil {
			return st, err
		}
	}
	for _, rev := range revs {
		if rev.Labels[slinkyv1beta1.LabelNodeSetRevisionHash] == n.Status.NodeSetHash {
			st.current = rev
			break
		}
	}
	if st.current == nil {
		st.current = st.update
	}
	return st, nil
}

// createRevision creates a revision, bumping collisionCount when another
// revision with different data already has the name.
func (r *Reconciler) createRevision(ctx context.Context, n *slinkyv1beta1.NodeSet, data []byte, number int64, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	for range maxCollisionRetries {
		hash := RevisionHash(data, collisionCount)
		rev := &appsv1.ControllerRevision{
			ObjectMeta: metav1.ObjectMeta{
				Name:            n.Name + "-" + hash,
				Namespace:       n.Namespace,
				Labels:          revisionLabels(n, hash),
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(n, slinkyv1beta1.NodeSetGVK)},
			},
			Data:     runtime.RawExtension{Raw: data},
			Revision: number,
		}
		err := r.Client.Create(ctx, rev)
		if err == nil {
			return rev, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating ControllerRevision %s: %w", rev.Name, err)
		}
		existing := &appsv1.ControllerRevision{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(rev), existing); err != nil {
			return nil, err
		}
		if bytes.Equal(existing.Data.Raw, data) && metav1.IsControlledBy(existing, n) {
			return existing, nil
		}
		*collisionCount++
	}
	return nil, fmt.Errorf("ControllerRevision names for NodeSet %s keep colliding (collisionCount %d)", n.Name, *collisionCount)
}

// truncateHistory deletes the oldest revisions that neither the current
// nor the update revision nor any pod uses, keeping revisionHistoryLimit.
func (r *Reconciler) truncateHistory(ctx context.Context, n *slinkyv1beta1.NodeSet, revs revisions, st revisionState, pods []*corev1.Pod) error {
	live := map[string]bool{st.current.Name: true, st.update.Name: true}
	liveHashes := map[string]bool{}
	for _, p := range pods {
		liveHashes[p.Labels[slinkyv1beta1.LabelNodeSetRevisionHash]] = true
	}
	var history revisions
	for _, rev := range revs {
		if !live[rev.Name] && !liveHashes[rev.Labels[slinkyv1beta1.LabelNodeSetRevisionHash]] {
			history = append(history, rev)
		}
	}
	excess := len(history) - int(n.Spec.RevisionHistoryLimit)
	for i := 0; i < excess; i++ {
		if err := r.Client.Delete(ctx, history[i]); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting ControllerRevision %s: %w", history[i].Name, err)
		}
	}
	return nil
}
