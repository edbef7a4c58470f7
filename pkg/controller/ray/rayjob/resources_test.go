package rayjob

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	rayv1 "github.com/gantry-dev/gantry/api/ray/v1"
)

// A SidecarMode RayJob whose cluster has two head Pods (one being
// replaced) waits, as KubeRay's does, instead of reading the submitter
// container of either: the old one's would fail the RayJob.
func TestSidecarWithTwoHeadsWaits(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cluster := &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
	head := func(name string, exit int32) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{
				rayv1.RayClusterLabelKey: "c", rayv1.RayNodeTypeLabelKey: string(rayv1.HeadNode),
			}},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
				Name: rayv1.SubmitterContainerName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit}},
			}}},
		}
	}
	for _, tt := range []struct {
		name    string
		pods    []client.Object
		wantErr bool
		failed  bool
	}{
		{name: "one head, submitter killed", pods: []client.Object{head("old", 143)}, failed: true},
		{name: "old and new head", pods: []client.Object{head("old", 143), head("new", 0)}, wantErr: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &Reconciler{client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(tt.pods...).Build()}
			s := &scope{}
			s.Object = &rayv1.RayJob{Spec: rayv1.RayJobSpec{SubmissionMode: rayv1.SidecarMode}}
			failed, _, err := r.checkSidecar(context.Background(), s, cluster)
			if (err != nil) != tt.wantErr || failed != tt.failed {
				t.Errorf("checkSidecar: failed %v, error %v; want failed %v, an error %v", failed, err, tt.failed, tt.wantErr)
			}
		})
	}
}
