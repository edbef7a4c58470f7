package slowstart

import (
	"errors"
	"fmt"
	"sync"
)

// SlowStartBatch calls fn once per index in 0..count-1 and returns how many
// calls succeeded together with the errors of the failed calls (joined with
// errors.Join, in index order). fn must be safe for concurrent use. A
// non-positive initialBatchSize is treated as 1; count <= 0 calls nothing.
func SlowStartBatch(count, initialBatchSize int, fn func(index int) error) (successes int, err error) {
	if initialBatchSize < 1 {
		initialBatchSize = 1
	}
	next := 0
	for batchSize := min(initialBatchSize, count); batchSize > 0; batchSize = min(2*batchSize, count-next) {
		errs := runBatch(next, batchSize, fn)
		var failed []error
		for _, e := range errs {
			if e != nil {
				failed = append(failed, e)
			}
		}
		successes += batchSize - len(failed)
		if len(failed) > 0 {
			return successes, errors.Join(failed...)
		}
		next += batchSize
	}
	return successes, nil
}

// runBatch calls fn for first..first+size-1 concurrently and returns each
// call's error at its offset in the batch.
func runBatch(first, size int, fn func(index int) error) []error {
	errs := make([]error, size)
	var wg sync.WaitGroup
	for offset := range size {
		wg.Go(func() {
			errs[offset] = callRecovering(first+offset, fn)
		})
	}
	wg.Wait()
	return errs
}

// callRecovering turns a panic in fn into an error: controller-runtime only
// recovers panics on the reconcile goroutine, so a panic here would otherwise
// take the whole manager (and every other workload) down.
func callRecovering(index int, fn func(index int) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("index %d panicked: %v", index, r)
		}
	}()
	return fn(index)
}
