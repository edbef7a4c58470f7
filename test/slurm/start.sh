#!/usr/bin/env bash
# Starts a real Slurm (slurmctld + slurmrestd, Debian's packages) in a chroot
# for the pkg/slurm tests, and prints the environment they need:
#
#   GANTRY_SLURM_URL       slurmrestd's base URL
#   GANTRY_SLURM_JWT_KEY   path of the HS256 key slurmctld verifies tokens with
#   GANTRY_SLURM_USER      the Slurm user tokens must name (SlurmUser: an admin)
#   GANTRY_SLURM_ROOT      the chroot, for `chroot $GANTRY_SLURM_ROOT scontrol ...`
#   GANTRY_SLURM_NO_ACCOUNTING  set only when the chroot lacks slurmdbd or
#                          MariaDB and they could not be installed: why (the
#                          accounting test skips with it; the others run)
#
# Idempotent: the chroot is built once (debootstrap, ~30 s) and reused; daemons
# left by an earlier run are stopped first and slurmctld starts from empty
# state, so every run sees the same cluster. Run test/slurm/stop.sh to stop it.
#
# Exit status 3 means "cannot run here" (not root, debootstrap unavailable or
# unable to reach the mirror); the reason is the last line on stderr.
#
# With --root-only it only builds the chroot (and says so), starting nothing.
#
# SLURMRESTD_ADDR is the address slurmrestd listens on (default 127.0.0.1),
# e.g. the real node's host address when the manager runs in a pod there.
#
# Tunables: GANTRY_SLURM_DIR (state dir, default test/slurm/.root),
# SLURMCTLD_PORT / SLURMRESTD_PORT (default: free ports),
# GANTRY_DEBIAN_MIRROR (default http://deb.debian.org/debian).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
base="${GANTRY_SLURM_DIR:-$here/.root}"
root="$base/rootfs"
run="$base/run"
mirror="${GANTRY_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
rest_user=slurmrest
slurm_user=slurm

skip() {
	echo "SKIP: $*" >&2
	exit 3
}
log() { echo "start.sh: $*" >&2; }

[ "$(id -u)" = 0 ] || skip "real Slurm needs root (debootstrap, chroot, mount)"
mkdir -p "$base" "$run"

# One start/stop at a time: two test binaries sharing the root would kill
# each other's daemons.
exec 9>"$base/.lock"
flock 9

bootstrap() {
	if ! command -v debootstrap >/dev/null; then
		log "installing debootstrap"
		if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap; } >"$base/apt.log" 2>&1; then
			skip "cannot install debootstrap (see $base/apt.log)"
		fi
	fi
	# Debian's current testing has no debootstrap script on older hosts; sid
	# carries the same Slurm and always has one.
	local tmp="$base/rootfs.partial"
	rm -rf "$tmp"
	log "debootstrap sid into $root (first run only)"
	if ! debootstrap --variant=minbase \
		--include=slurmctld,slurmd,slurmrestd,slurm-client,slurm-wlm-jwt-plugin,slurmdbd,mariadb-server \
		sid "$tmp" "$mirror" >"$base/debootstrap.log" 2>&1; then
		# A failed debootstrap may leave its own mounts behind.
		for m in proc sys dev/pts dev; do umount -l "$tmp/$m" 2>/dev/null || true; done
		rm -rf "$tmp"
		skip "debootstrap failed (no network to $mirror?): $(tail -n 1 "$base/debootstrap.log")"
	fi
	# Renaming last means an interrupted bootstrap is never mistaken for a root.
	mv "$tmp" "$root"
}

[ -x "$root/usr/sbin/slurmrestd" ] || bootstrap

# add_accounting installs slurmdbd and MariaDB into a root bootstrapped
# before they were part of it. Failing that (no mirror) is not fatal: only
# the accounting test needs them, and it skips with the reason.
no_accounting=""
add_accounting() {
	log "installing slurmdbd and mariadb-server into $root"
	cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
	mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
	# No service may start inside the chroot while packages are installed.
	printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
	chmod 0755 "$root/usr/sbin/policy-rc.d"
	if ! { chroot "$root" apt-get -o Acquire::Check-Valid-Until=false update -qq &&
		DEBIAN_FRONTEND=noninteractive chroot "$root" apt-get install -y -qq --no-install-recommends slurmdbd mariadb-server; } \
		>"$base/apt-accounting.log" 2>&1 9>&-; then
		no_accounting="cannot install slurmdbd and mariadb-server into $root: $(tail -n 1 "$base/apt-accounting.log")"
		log "$no_accounting"
	fi
	rm -f "$root/usr/sbin/policy-rc.d"
}
if [ ! -x "$root/usr/sbin/slurmdbd" ] || [ ! -x "$root/usr/sbin/mariadbd" ]; then
	add_accounting
fi

# --root-only: build the chroot (hack/test-images.sh makes the Slurm images
# from it) and start nothing.
if [ "${1:-}" = --root-only ]; then
	log "the Slurm root is ready: $root"
	exit 0
fi

"$here/stop.sh" --locked

# free_port finds a port nothing listens on: connecting is refused.
free_port() {
	local p
	for _ in $(seq 1 200); do
		p=$((20000 + RANDOM % 20000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	echo "start.sh: no free port" >&2
	exit 1
}
ctld_port="${SLURMCTLD_PORT:-$(free_port)}"
rest_port="${SLURMRESTD_PORT:-$(free_port)}"
rest_addr="${SLURMRESTD_ADDR:-127.0.0.1}"

mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"

# slurmctld insists that SlurmctldHost names this machine, and resolves it.
host="$(hostname -s)"
cat >"$root/etc/hosts" <<EOF
127.0.0.1 localhost $host $(hostname)
EOF

in_root() { chroot "$root" "$@"; }
in_root getent passwd "$rest_user" >/dev/null ||
	in_root useradd --system --no-create-home --shell /usr/sbin/nologin "$rest_user"
rest_uid="$(in_root id -u "$rest_user")"
rest_gid="$(in_root id -g "$rest_user")"

etc="$root/etc/slurm"
mkdir -p "$etc"
# Keys survive restarts so a tester's exported GANTRY_SLURM_JWT_KEY stays valid.
for key in slurm.key jwt.key; do
	if [ ! -s "$etc/$key" ]; then
		head -c 64 /dev/urandom >"$etc/$key"
	fi
	in_root chown "$slurm_user:$slurm_user" "/etc/slurm/$key"
	chmod 0600 "$etc/$key"
done

cat >"$etc/slurm.conf" <<EOF
ClusterName=gantry-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmUser=$slurm_user
AuthType=auth/slurm
CredType=cred/slurm
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key=/etc/slurm/jwt.key
StateSaveLocation=/var/spool/slurmctld
SlurmctldPidFile=/run/slurmctld.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmctldDebug=info
SelectType=select/cons_tres
# Memory is not a consumable resource here, as on many clusters: then Slurm
# frees all of a suspended job's resources and its node reads IDLE, the case
# in which only the job list shows that the node must not lose its pod.
SelectTypeParameters=CR_Core
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
ReturnToService=2
# Dynamic nodes (scontrol create, slurmd -Z) need room in the node table.
MaxNodeCount=64
# Tests may run several slurmd (one per dynamic node) on this one machine.
SlurmdSpoolDir=/var/spool/slurmd/%n
SlurmdPidFile=/run/slurmd-%n.pid
SlurmdLogFile=/var/log/slurm/slurmd-%n.log
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF

# A chroot has no cgroup hierarchy of its own; the test jobs need none.
echo "CgroupPlugin=disabled" >"$etc/cgroup.conf"

# Empty state on every start: tests create their own dynamic nodes.
rm -rf "$root/var/spool/slurmctld" "$root/var/spool/slurmd"
mkdir -p "$root/var/spool/slurmctld" "$root/var/spool/slurmd" "$root/var/log/slurm"
in_root chown "$slurm_user:$slurm_user" /var/spool/slurmctld /var/log/slurm
: >"$root/var/log/slurm/slurmctld.log"

log "starting slurmctld on port $ctld_port"
# 9>&-: a daemon inheriting the lock's descriptor would hold the lock until
# it dies, and stop.sh would wait for it forever.
in_root /usr/sbin/slurmctld 9>&-
for _ in $(seq 1 100); do
	in_root scontrol ping 2>/dev/null | grep -q UP && break
	sleep 0.2
done
if ! in_root scontrol ping 2>/dev/null | grep -q UP; then
	tail -n 20 "$root/var/log/slurm/slurmctld.log" >&2 || true
	echo "start.sh: slurmctld did not come up" >&2
	exit 1
fi

# start_slurmrestd starts slurmrestd on rest_port and waits until it
# listens; it fails when slurmrestd exits first (e.g. the port was taken
# between free_port and the bind).
start_slurmrestd() {
	log "starting slurmrestd on $rest_addr:$rest_port"
	# slurmrestd refuses to run as root or SlurmUser; rest_auth/jwt makes it
	# take the caller's token from the request headers. SLURM_JWT=daemon
	# stops it looking for a token of its own.
	SLURM_JWT=daemon setsid chroot "$root" /usr/sbin/slurmrestd \
		-u "$rest_uid" -g "$rest_gid" -a rest_auth/jwt "$rest_addr:$rest_port" \
		</dev/null >"$run/slurmrestd.log" 2>&1 9>&- &
	echo $! >"$run/slurmrestd.pid"
	for _ in $(seq 1 100); do
		(exec 3<>"/dev/tcp/$rest_addr/$rest_port") 2>/dev/null && return 0
		if ! kill -0 "$(cat "$run/slurmrestd.pid")" 2>/dev/null; then
			cat "$run/slurmrestd.log" >&2
			echo "start.sh: slurmrestd exited" >&2
			return 1
		fi
		sleep 0.1
	done
	echo "start.sh: slurmrestd does not listen on $rest_port" >&2
	return 1
}
# A port found free may be taken before slurmrestd binds it: try others,
# unless the caller fixed the port.
for attempt in 1 2 3; do
	start_slurmrestd && break
	if [ -n "${SLURMRESTD_PORT:-}" ] || [ "$attempt" = 3 ]; then
		exit 1
	fi
	rest_port="$(free_port)"
done

cat <<EOF | tee "$run/env"
GANTRY_SLURM_URL=http://$rest_addr:$rest_port
GANTRY_SLURM_JWT_KEY=$etc/jwt.key
GANTRY_SLURM_USER=$slurm_user
GANTRY_SLURM_ROOT=$root
EOF
if [ -n "$no_accounting" ]; then
	echo "GANTRY_SLURM_NO_ACCOUNTING=$no_accounting" | tee -a "$run/env"
fi
