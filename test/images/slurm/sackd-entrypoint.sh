#!/usr/bin/env bash
# Entrypoint of gantry.local/sackd (hack/test-images.sh), which stands in for
# Slinky's sackd and login images: it starts sackd, the login node's
# daemon (it fetches slurm.conf from slurmctld with --conf-server and serves
# the client commands' authentication on /run/slurm/sack.socket), with the
# options in SACKD_OPTIONS followed by the container's arguments, read as
# shell words.
#
# As in Slinky's images sackd runs as the slurm user (401) in /run/slurm;
# started as root, this entrypoint hands /run/slurm to slurm and drops to
# it. There is no sshd or sssd (Slinky's login image has them): a LoginSet
# pod on this image serves Slurm's client commands to `kubectl exec`, not
# ssh. tini is the init, and sackd runs in the foreground (-D), in which
# mode a reconfigure re-executes it in the same process.
set -euo pipefail

SACKD_OPTIONS="${SACKD_OPTIONS:-} $*"

options=()
eval "options=(${SACKD_OPTIONS})"

mkdir -p /run/slurm
run_as=()
if [ "$(id -u)" = 0 ]; then
	chown slurm:slurm /run/slurm
	run_as=(setpriv --reuid=slurm --regid=slurm --init-groups --)
fi
cd /run/slurm

set -x
exec tini -g -- "${run_as[@]}" sackd -D "${options[@]}"
