// Package accounting reconciles Slinky Accountings: the slurmdbd
// StatefulSet, its Service and the Secret holding the generated
// slurmdbd.conf, for the Controllers whose accountingRef names them.
package accounting
