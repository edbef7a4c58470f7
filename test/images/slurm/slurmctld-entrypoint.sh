#!/usr/bin/env bash
# Entrypoint of gantry.local/slurmctld (hack/test-images.sh), which stands in
# for Slinky's slurmctld image: it starts slurmctld with the options in
# SLURMCTLD_OPTIONS followed by the container's arguments, read as shell
# words (quotes group), as Slinky's image reads them.
#
# Slinky's image runs `slurmctld --systemd` under supervisord, whose
# fakesystemd follows the process that `scontrol reconfigure` forks. Here
# tini is the init (it reaps orphans and passes signals on) and slurmctld
# runs in the foreground (-D), the mode in which a reconfigure re-executes
# slurmctld in the same process, so the container outlives it.
#
# Gantry's pods run it as the slurm user (401), with /run, /run/slurmctld,
# /var/log/slurm and the state directory mounted.
set -euo pipefail

SLURMCTLD_OPTIONS="${SLURMCTLD_OPTIONS:-} $*"

mkdir -p /run/slurmctld

options=()
eval "options=(${SLURMCTLD_OPTIONS})"
set -x
exec tini -g -- slurmctld -D "${options[@]}"
