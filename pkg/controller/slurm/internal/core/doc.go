// Package core is the skeleton the Slurm reconcilers share: how they read
// and write, record events, register and reconcile. Each kind (Accounting,
// Controller, LoginSet, RestApi, Token) supplies only its steps and its
// status; NodeSet, whose reconcile is its own, shares the reading, writing
// and events.
//
// A kind runs on the framework's reconcile skeleton (Skeleton over its
// Kind): get the object → scope → steps → status write (and the event of a
// Ready transition) → Events.Flush → Result.
package core
