// Package extraconf merges the option lists the operator sets in
// slurm.conf or slurmdbd.conf with those the user's extraConf sets for the
// same keys.
package extraconf
