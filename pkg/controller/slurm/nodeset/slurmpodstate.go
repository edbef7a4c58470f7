package nodeset

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/slurm"
)

// +kubebuilder:rbac:groups="",resources=pods/status,verbs=get;update;patch

// PodConditionPrefix starts the type of every pod condition that mirrors a
// state of the pod's Slurm node (Slinky's names: SlurmNodeStateIdle,
// SlurmNodeStateDrain, ...).
const PodConditionPrefix = "SlurmNodeState"

// slurmStateConditions maps Slurm node states to pod condition types: the
// base states in the order Slinky checks them (a node shows the first that
// applies), then the flags, each shown when set.
var (
	slurmBaseStates = []slurm.NodeState{
		slurm.NodeStateAllocated, slurm.NodeStateDown, slurm.NodeStateError, slurm.NodeStateFuture,
		slurm.NodeStateIdle, slurm.NodeStateMixed, slurm.NodeStateUnknown,
	}
	slurmFlagStates = []slurm.NodeState{
		slurm.NodeStateCompleting, slurm.NodeStateDrain, slurm.NodeStateFail, slurm.NodeStateInvalid,
		slurm.NodeStateInvalidReg, slurm.NodeStateMaintenance, slurm.NodeStateNotResponding, slurm.NodeStateUndrain,
	}
)

// conditionType is "SlurmNodeState" + the state in Slinky's spelling
// (IDLE -> Idle, NOT_RESPONDING -> NotResponding, INVALID_REG -> InvalidReg).
func conditionType(s slurm.NodeState) corev1.PodConditionType {
	var b strings.Builder
	b.WriteString(PodConditionPrefix)
	for _, word := range strings.Split(strings.ToLower(string(s)), "_") {
		if word == "" {
			continue
		}
		b.WriteString(strings.ToUpper(word[:1]) + word[1:])
	}
	return corev1.PodConditionType(b.String())
}

// slurmPodConditions are the conditions that show the node's states; the
// node's reason is their message.
func slurmPodConditions(n slurm.Node) []corev1.PodCondition {
	var out []corev1.PodCondition
	add := func(s slurm.NodeState) {
		out = append(out, corev1.PodCondition{Type: conditionType(s), Status: corev1.ConditionTrue, Message: n.Reason})
	}
	if i := slices.IndexFunc(slurmBaseStates, n.HasState); i >= 0 {
		add(slurmBaseStates[i])
	}
	for _, s := range slurmFlagStates {
		if n.HasState(s) {
			add(s)
		}
	}
	return out
}

// withSlurmConditions returns the pod's conditions with the Slurm ones
// replaced by want; a condition that keeps its status and message keeps its
// transition time. changed is false when nothing differs.
func withSlurmConditions(have []corev1.PodCondition, want []corev1.PodCondition, now metav1.Time) (out []corev1.PodCondition, changed bool) {
	for _, c := range have {
		if !strings.HasPrefix(string(c.Type), PodConditionPrefix) {
			out = append(out, c)
		}
	}
	for _, w := range want {
		i := slices.IndexFunc(have, func(c corev1.PodCondition) bool { return c.Type == w.Type })
		if i >= 0 && have[i].Status == w.Status && have[i].Message == w.Message {
			out = append(out, have[i])
			continue
		}
		w.LastTransitionTime = now
		if i >= 0 && have[i].Status == w.Status {
			w.LastTransitionTime = have[i].LastTransitionTime
		}
		out = append(out, w)
		changed = true
	}
	// Any Slurm condition no longer wanted went away.
	slurmHave := slices.DeleteFunc(slices.Clone(have), func(c corev1.PodCondition) bool {
		return !strings.HasPrefix(string(c.Type), PodConditionPrefix)
	})
	return out, changed || len(slurmHave) != len(want)
}

// podInfo is what Slinky writes into a Slurm node's comment, so that
// `scontrol show node` names the pod behind the node.
type podInfo struct {
	Namespace   string `json:"namespace"`
	PodName     string `json:"podName"`
	Node        string `json:"node"`
	NodeSetName string `json:"nodeSetName,omitempty"`
	NodeSetUID  string `json:"nodeSetUID,omitempty"`
}

// syncDeadlines sets each pod's pod-deadline annotation to the latest end
// of the jobs running on its Slurm node, and removes it when none runs.
func (r *Reconciler) syncDeadlines(ctx context.Context, s *scope) error {
	if !s.slurm.reachable() {
		return nil
	}
	return forEachWorker(s.workers.live(), func(w *worker) error {
		want := ""
		if d := s.slurm.deadline(w.slurmNode); !d.IsZero() {
			want = d.UTC().Format(time.RFC3339)
		}
		return r.patchPod(ctx, w.pod, func(p *corev1.Pod) { setAnnotation(p, slinkyv1beta1.AnnotationPodDeadline, want) })
	})
}

// syncProtection labels pods whose Slurm node a job holds (running or
// suspended), or may hold where Slurm cannot show it (a Ready pod whose
// node it does not list), which puts them under the worker
// PodDisruptionBudget. With Slurm unreachable the labels
// stay as they are: dropping protection because nothing is known would
// expose running jobs to evictions.
func (r *Reconciler) syncProtection(ctx context.Context, s *scope) error {
	n := s.Object
	if s.slurm.configured() && !s.slurm.reachable() {
		return nil
	}
	enabled := n.Spec.WorkloadDisruptionProtectionEnabled()
	return forEachWorker(s.workers.live(), func(w *worker) error {
		protect := enabled && s.slurm.protects(w)
		return r.patchPod(ctx, w.pod, func(p *corev1.Pod) {
			if protect {
				p.Labels[slinkyv1beta1.LabelNodeSetPodProtect] = "true"
			} else {
				delete(p.Labels, slinkyv1beta1.LabelNodeSetPodProtect)
			}
		})
	})
}

// syncSlurmPodState mirrors each pod's Slurm node into the pod (SlurmNodeState*
// conditions, as Slinky sets them, readable in `kubectl describe pod`) and
// the pod into its Slurm node (the comment names the pod, its Kubernetes
// node and NodeSet). Nothing is written for what is already so.
func (r *Reconciler) syncSlurmPodState(ctx context.Context, s *scope) error {
	n := s.Object
	if !s.slurm.reachable() {
		return nil
	}
	now := metav1.NewTime(r.clock.Now())
	return forEachWorker(s.workers.live(), func(w *worker) error {
		pod := w.pod
		node, ok := s.slurm.node(w.slurmNode)
		var want []corev1.PodCondition
		if ok {
			want = slurmPodConditions(node)
		}
		if conds, changed := withSlurmConditions(pod.Status.Conditions, want, now); changed {
			next := pod.DeepCopy()
			next.Status.Conditions = conds
			// A strategic merge patch touches the conditions by type, so the
			// kubelet's own (Ready, ...) are never overwritten from a stale
			// cached copy, as a JSON merge patch of the whole list would.
			if err := r.Client.Status().Patch(ctx, next, client.StrategicMergeFrom(pod)); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("setting the Slurm conditions of Pod %s: %w", pod.Name, err)
			}
		}
		if !ok || pod.Spec.NodeName == "" {
			return nil
		}
		info, err := json.Marshal(podInfo{Namespace: pod.Namespace, PodName: pod.Name, Node: pod.Spec.NodeName,
			NodeSetName: n.Name, NodeSetUID: string(n.UID)})
		if err != nil {
			return err
		}
		return s.slurm.setComment(ctx, w.slurmNode, string(info))
	})
}

// setComment sets the comment of the Slurm node name unless it has it.
func (v *slurmView) setComment(ctx context.Context, name, comment string) error {
	n, ok := v.node(name)
	if !ok || n.Comment == comment {
		return nil
	}
	if err := v.client.UpdateNode(ctx, name, slurm.CommentUpdate(comment)); err != nil {
		if slurm.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("setting the comment of Slurm node %s: %w", name, err)
	}
	n.Comment = comment
	v.setNode(n)
	return nil
}
