// Package slowstart runs many similar API calls (pod creates, annotation
// patches, cordons) in exponentially growing parallel batches.
//
// Contract: SlowStartBatch calls fn for indices 0..count-1 in batches of
// initialBatchSize, then twice the previous batch size (the last batch holds
// whatever remains). The calls of one batch run concurrently. After a batch in
// which any call failed no further batch is started, so a systematic failure
// (quota exceeded, webhook down) costs a handful of requests instead of count.
package slowstart
