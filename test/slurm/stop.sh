#!/usr/bin/env bash
# Stops what test/slurm/start.sh started and unmounts the chroot's /proc, so
# the next start (or `rm -rf test/slurm/.root`) works. The chroot itself is
# kept for reuse. Safe to run when nothing is running.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
base="${GANTRY_SLURM_DIR:-$here/.root}"
root="$base/rootfs"
run="$base/run"

[ -d "$root" ] || exit 0
[ "$(id -u)" = 0 ] || { echo "stop.sh: needs root" >&2; exit 1; }

if [ "${1:-}" != --locked ]; then
	exec 9>"$base/.lock"
	flock 9
fi

# pids_in_root lists processes whose root directory is the chroot: exactly
# the daemons started there (and any scontrol a test left hanging), never
# anything else on the machine.
pids_in_root() {
	local real p
	real="$(readlink -f "$root")"
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/root" 2>/dev/null)" = "$real" ] && echo "${p#/proc/}"
	done
	return 0
}

# Pid files are not trusted: a pid from an earlier boot may now be someone
# else's process. Only processes rooted in the chroot are signalled.
pids="$(pids_in_root)"
for p in $pids; do kill -TERM "$p" 2>/dev/null || true; done
alive=""
for _ in $(seq 1 50); do
	alive=""
	for p in $pids; do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done
	[ -z "$alive" ] && break
	sleep 0.1
done
for p in $alive; do kill -KILL "$p" 2>/dev/null || true; done
rm -f "$run/slurmrestd.pid" "$run/env"

if mountpoint -q "$root/proc"; then
	umount "$root/proc" 2>/dev/null || umount -l "$root/proc"
fi
