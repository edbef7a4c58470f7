package expectations

import (
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gantry-dev/gantry/pkg/framework/slowstart"
)

// CreateBatch creates n objects (pods) of the owner key in group, in
// slow-start batches (1, 2, 4, …; a batch with a failure ends it): it
// expects the n creations before the first Create, and gives back those
// that failed or never ran. create(i) makes the i-th object. It returns how
// many were created and the batch's error.
func (e *Expectations) CreateBatch(key, group string, n int, create func(i int) error) (int, error) {
	return e.CreateBatchOf(key, group, n, 1, func(i int) (int, error) {
		if err := create(i); err != nil {
			return 0, err
		}
		return 1, nil
	})
}

// CreateBatchOf is CreateBatch for items that are each perItem objects (a
// multi-host replica's pods): create(i) makes the i-th item's objects and
// returns how many it created, also when it fails part way. It returns the
// number of objects created.
func (e *Expectations) CreateBatchOf(key, group string, n, perItem int, create func(i int) (int, error)) (int, error) {
	want := n * perItem
	e.ExpectCreations(key, group, want)
	var created atomic.Int64
	_, err := slowstart.SlowStartBatch(n, 1, func(i int) error {
		c, err := create(i)
		created.Add(int64(c))
		return err
	})
	got := int(created.Load())
	if got < want {
		e.CancelCreations(key, group, want-got)
	}
	return got, err
}

// DeleteExpecting runs del, the delete of the objects with uids, with their
// deletions expected: when del fails they are given back, and a NotFound
// answer (already gone) counts as observed. It returns del's error, nil for
// NotFound.
func (e *Expectations) DeleteExpecting(key, group string, del func() error, uids ...types.UID) error {
	e.ExpectDeletions(key, group, uids...)
	err := del()
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err):
		for _, uid := range uids {
			e.DeletionObserved(key, group, uid)
		}
		return nil
	}
	e.CancelDeletions(key, group, uids...)
	return err
}
