#!/usr/bin/env bash
# Gantry's reconfigure sidecar (Controller spec.inplaceReconfigure): keeps
# slurmctld running when its configuration changes. The kubelet updates the
# projected config volume in place; once the files' contents change, this
# asks slurmctld to read them again (scontrol reconfigure), retrying until
# it is accepted.
#
# SLURM_CONF_DIR (default /etc/slurm) and POLL_SECONDS (default 5) are
# tunables for tests.
set -uo pipefail

dir="${SLURM_CONF_DIR:-/etc/slurm}"
every="${POLL_SECONDS:-5}"

# digest of every file's contents, by path. The kubelet's own entries in a
# projected volume (..data and the ..<timestamp> directories) are skipped:
# their names change on every update even when no content does.
digest() {
	find "$dir" -name '..*' -prune -o \( -type f -o -type l \) -print0 |
		sort -z | xargs -0 -r sha256sum | sha256sum
}

seen="$(digest)"
echo "reconfigure: watching $dir every ${every}s"
while sleep "$every"; do
	now="$(digest)"
	[ "$now" = "$seen" ] && continue
	echo "reconfigure: $dir changed, asking slurmctld to reconfigure"
	until out="$(scontrol reconfigure 2>&1)"; do
		echo "reconfigure: scontrol reconfigure failed (${out}); retrying in 2s"
		sleep 2
	done
	echo "reconfigure: done"
	seen="$now"
done
