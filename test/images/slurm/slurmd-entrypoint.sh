#!/usr/bin/env bash
# Entrypoint of gantry.local/slurmd (hack/test-images.sh), which stands in for
# Slinky's slurmd image: it starts slurmd with the options in SLURMD_OPTIONS
# followed by the container's arguments, read as shell words (quotes group:
# Gantry passes --conf 'Features=... ...' as one quoted word), and sizes the
# node to the pod as Slinky's image does:
#
#   POD_CPUS      the pod's CPU limit; the host's cores beyond it become
#                 CoreSpecCount (cores slurmd leaves to others)
#   POD_MEMORY    the pod's memory limit in MiB; the host's memory beyond it
#                 becomes MemSpecLimit
#   POD_TOPOLOGY  the node's topology, passed on as Topology=
#
# Each is added to slurmd's --conf value (or a --conf of its own when there
# is none); 0 or empty adds nothing.
#
# Unlike Slinky's image there is no sshd, sssd or supervisord: tini is the
# init (it reaps the slurmstepd processes slurmd leaves to it and passes
# signals on) and slurmd runs in the foreground (-D), in which mode
# `scontrol reconfigure` re-executes it in the same process.
set -euo pipefail

SLURMD_OPTIONS="${SLURMD_OPTIONS:-} $*"
POD_CPUS="${POD_CPUS:-0}"
POD_MEMORY="${POD_MEMORY:-0}"
POD_TOPOLOGY="${POD_TOPOLOGY:-}"

# hardware NAME prints the number slurmd -C reports for NAME (Boards,
# SocketsPerBoard, CoresPerSocket, ThreadsPerCore, RealMemory).
hardware_line=""
hardware() {
	[ -n "$hardware_line" ] || hardware_line="$(slurmd -C 2>/dev/null | head -n 1)"
	local v
	v="$(grep -o "\b$1=[0-9]*" <<<"$hardware_line" | cut -d= -f2)"
	echo "${v:-0}"
}

# core_spec_count: the host's cores less those the pod may use.
core_spec_count() {
	local cores threads
	cores=$(($(hardware Boards) * $(hardware SocketsPerBoard) * $(hardware CoresPerSocket)))
	threads="$(hardware ThreadsPerCore)"
	((threads > 0)) || threads=1
	echo $((cores - POD_CPUS / threads))
}

# mem_spec_limit: the host's memory (MiB) less the pod's.
mem_spec_limit() {
	echo $(($(hardware RealMemory) - POD_MEMORY))
}

options=()
eval "options=(${SLURMD_OPTIONS})"

# add_conf ITEM adds ITEM to the value of slurmd's --conf (--conf VALUE or
# --conf=VALUE), or adds --conf ITEM when there is none.
add_conf() {
	local i
	for i in "${!options[@]}"; do
		case "${options[$i]}" in
		--conf=*)
			options[i]="${options[$i]} $1"
			return
			;;
		--conf)
			if ((i + 1 < ${#options[@]})); then
				options[i + 1]="${options[$((i + 1))]} $1"
				return
			fi
			;;
		esac
	done
	options+=(--conf "$1")
}

if ((POD_CPUS > 0)); then
	n="$(core_spec_count)"
	if ((n > 0)); then add_conf "CoreSpecCount=$n"; fi
fi
if ((POD_MEMORY > 0)); then
	n="$(mem_spec_limit)"
	if ((n > 0)); then add_conf "MemSpecLimit=$n"; fi
fi
if [ -n "$POD_TOPOLOGY" ]; then
	add_conf "Topology=$POD_TOPOLOGY"
fi

if [ -e /etc/ssh/sshd_config ]; then
	echo "slurmd-entrypoint: /etc/ssh/sshd_config is mounted, but this image has no sshd: ssh to the node is not served" >&2
fi

mkdir -p /run/slurm /var/spool/slurmd

set -x
exec tini -g -- slurmd -D "${options[@]}"
