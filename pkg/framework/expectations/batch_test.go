package expectations

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

var errQuota = errors.New("exceeded quota")

func TestCreateBatchGivesBackWhatWasNotCreated(t *testing.T) {
	e := New()
	// Batches of 1, 2, 4: the third create fails, so the batch of 2 ends it
	// and 4 of the 7 are never tried.
	created, err := e.CreateBatch(owner, cpu, 7, func(i int) error {
		if i == 2 {
			return errQuota
		}
		return nil
	})
	if created != 2 || !errors.Is(err, errQuota) {
		t.Fatalf("created %d, %v; want 2 and the quota error", created, err)
	}
	if c, _ := e.Pending(owner, cpu); c != 2 {
		t.Fatalf("pending creations %d, want the 2 created", c)
	}
	e.CreationObserved(owner, cpu, "a")
	e.CreationObserved(owner, cpu, "b")
	if !e.Satisfied(owner, cpu) {
		t.Fatal("not satisfied after both creations were seen")
	}
}

func TestCreateBatchOfCountsObjectsOfPartItems(t *testing.T) {
	e := New()
	// Three replicas of 4 hosts in batches of 1 and 2; the second replica
	// fails after 1 pod, the third runs in the same batch.
	created, err := e.CreateBatchOf(owner, cpu, 3, 4, func(i int) (int, error) {
		if i == 1 {
			return 1, errQuota
		}
		return 4, nil
	})
	if created != 9 || !errors.Is(err, errQuota) {
		t.Fatalf("created %d, %v; want 9 and the quota error", created, err)
	}
	if c, _ := e.Pending(owner, cpu); c != 9 {
		t.Fatalf("pending creations %d, want 9", c)
	}
}

func TestDeleteExpecting(t *testing.T) {
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "p")
	cases := []struct {
		name        string
		err         error
		wantErr     error
		wantPending int
	}{
		{"deleted: pending until seen", nil, nil, 1},
		{"already gone: observed", notFound, nil, 0},
		{"refused: given back", errQuota, errQuota, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := New()
			err := e.DeleteExpecting(owner, cpu, func() error { return tc.err }, types.UID("p"))
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if _, d := e.Pending(owner, cpu); d != tc.wantPending {
				t.Fatalf("pending deletions %d, want %d", d, tc.wantPending)
			}
		})
	}
}
