package syncobject

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gantry-dev/gantry/pkg/framework/builder"
)

// TestAdoptFrom: a Service the upstream operator made (no managed-by label,
// so the manager's cache cannot see it) is taken over when it is controlled
// by the same owner, and left alone otherwise.
func TestAdoptFrom(t *testing.T) {
	owner := func(uid types.UID) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "slinky.slurm.net/v1beta1", Kind: "Controller", Name: "slurm", UID: uid, Controller: ptr.To(true)}}
	}
	upstream := func(refs []metav1.OwnerReference) *corev1.Service {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "slurm-controller", Namespace: ns, OwnerReferences: refs,
				Labels: map[string]string{"app.kubernetes.io/name": "slurmctld", "app.kubernetes.io/instance": "slurm"}},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "slurmctld", Port: 6817}}},
		}
	}
	desired := upstream(owner("uid-1"))
	desired.Labels = map[string]string{"app.kubernetes.io/name": "slurmctld", "app.kubernetes.io/instance": "slurm", builder.LabelManagedBy: builder.ManagedByGantry}
	desired.Spec.Selector = map[string]string{"app.kubernetes.io/name": "slurmctld", "app.kubernetes.io/instance": "slurm"}

	shared := desired.DeepCopy()
	shared.OwnerReferences[0].Controller = nil
	tests := []struct {
		name      string
		live      *corev1.Service
		desired   *corev1.Service
		adopt     bool
		want      Result
		wantAdopt bool
	}{
		{name: "same controller: adopted", live: upstream(owner("uid-1")), adopt: true, want: Adopted, wantAdopt: true},
		{name: "another controller: left alone", live: upstream(owner("uid-2")), adopt: true, want: Skipped},
		{name: "no controller: left alone", live: upstream(nil), adopt: true, want: Skipped},
		{name: "without AdoptFrom: skipped as a lost race", live: upstream(owner("uid-1")), want: Skipped},
		{name: "a shared object no one controls: adopted", live: upstream(nil), desired: shared, adopt: true, want: Adopted, wantAdopt: true},
		{name: "a shared object someone controls: left alone", live: upstream(owner("uid-1")), desired: shared, adopt: true, want: Skipped},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(tt.live).Build()
			// The cached client sees only objects labelled managed-by=gantry.
			cached := interceptor.NewClient(raw.(client.WithWatch), interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if err := c.Get(ctx, key, obj, opts...); err != nil {
						return err
					}
					if obj.GetLabels()[builder.LabelManagedBy] != builder.ManagedByGantry {
						return apierrors.NewNotFound(corev1.Resource("services"), key.Name)
					}
					return nil
				},
			})
			var opts []Option
			if tt.adopt {
				opts = append(opts, AdoptFrom(raw))
			}
			want := desired
			if tt.desired != nil {
				want = tt.desired
			}
			res, err := SyncObject(context.Background(), cached, want, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if res != tt.want {
				t.Fatalf("result = %s, want %s", res, tt.want)
			}
			got := &corev1.Service{}
			if err := raw.Get(context.Background(), client.ObjectKeyFromObject(desired), got); err != nil {
				t.Fatal(err)
			}
			adopted := got.Labels[builder.LabelManagedBy] == builder.ManagedByGantry && len(got.Spec.Selector) == 2
			if adopted != tt.wantAdopt {
				t.Errorf("live labels %v selector %v; adopted = %v, want %v", got.Labels, got.Spec.Selector, adopted, tt.wantAdopt)
			}
			if !tt.wantAdopt && len(got.Labels) != 2 {
				t.Errorf("an object not ours was changed: %v", got.Labels)
			}
		})
	}
}
