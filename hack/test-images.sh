#!/usr/bin/env bash
# Builds the container images that tests on a real kubelet + containerd use,
# as docker-archive tarballs (the `docker save` format) in bin/images/,
# without Docker and without a registry:
#
#   pause.tar     gantry.local/pause:3.10   the pod sandbox: test/images/pause at /pause
#   testbase.tar  gantry.local/testbase:1   Debian bookworm (debootstrap minbase) with
#                                           python3 (also as `python`, as in Ray's
#                                           images: KubeRay's submitter calls it),
#                                           python3-torch, numpy, Open MPI with mpi4py,
#                                           sshd set up like the MPI operator's images
#                                           (user mpiuser 1000, port 2222,
#                                           /home/mpiuser/.sshd_config), the MPI pi
#                                           example /home/mpiuser/pi.py and the Ray
#                                           stand-in /usr/local/bin/ray
#
# Load one into containerd with: ctr -n k8s.io images import bin/images/pause.tar
#
# Usage: hack/test-images.sh [pause|testbase|slurm]...     (default: all three)
#
# Each tarball is rebuilt only when it is missing or its inputs changed:
# NAME.tar.stamp next to it holds the hash of its inputs (the built binaries,
# the testimage tool, the Debian root's stamp, the image settings,
# SOURCE_DATE_EPOCH). The same inputs give the same image digest.
#
# testbase needs root (debootstrap, chroot) and Debian's mirror
# (GANTRY_DEBIAN_MIRROR, default http://deb.debian.org/debian). Its root is
# built once into bin/images/testbase.rootfs (from testbase.rootfs.partial,
# renamed at the end, so an interrupted build is never reused) and rebuilt
# only when its package list or recipe changes (testbase.rootfs.stamp).
# Delete bin/images/testbase.rootfs* to force a fresh root.
# GANTRY_TEST_IMAGES_DIR puts everything somewhere else than bin/images.
#
# slurm.tar holds the Slurm images, which stand in for Slinky's (slurmctld,
# slurmd, slurmrestd, slurmdbd, sackd/login), tagged
# gantry.local/<daemon>:<Slurm series>-debian-sid, e.g.
# gantry.local/slurmd:26.05-debian-sid. All five share one layer: Debian's
# Slurm from the root test/slurm/start.sh builds for the real-Slurm tests
# (${GANTRY_SLURM_DIR:-test/slurm/.root}/rootfs), copied without the tests'
# leftovers into bin/images/slurm.rootfs, with sackd and tini added,
# MariaDB's server and client removed and the slurm user moved to Slinky's
# 401:401 (slurm.rootfs.stamp; rebuilt when the source root's packages or
# the recipe change). The entrypoints are test/images/slurm/*-entrypoint.sh.
# A second slurmd tag, <series>-debian-sid-r2 (env GANTRY_IMAGE_REVISION=2),
# is the new image of the e2e tier's rolling update. Where the root is
# missing, slurm builds it first (test/slurm/start.sh --root-only); it needs
# root, and Debian's mirror the first time (the root, sackd, tini).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
OUT=${GANTRY_TEST_IMAGES_DIR:-$root/bin/images}
BUILD=$OUT/.build
mirror=${GANTRY_DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=bookworm
testbase_packages=(bash wget procps iproute2 python3 python-is-python3 python3-torch python3-numpy openmpi-bin python3-mpi4py openssh-server openssh-client netbase)

log() { echo "test-images: $*" >&2; }
die() {
	log "ERROR: $*"
	exit 1
}
hash_stdin() { sha256sum | cut -d' ' -f1; }
hash_file() { sha256sum "$1" | cut -d' ' -f1; }

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(pause testbase)
for t in "${targets[@]}"; do
	case $t in
	pause | testbase) ;;
	slurm) ;;
	*) die "unknown image $t (want pause, testbase or slurm)" ;;
	esac
done
slurm_src=${GANTRY_SLURM_DIR:-$root/test/slurm/.root}/rootfs
[ $# -gt 0 ] || targets+=(slurm)

mkdir -p "$OUT" "$BUILD"
# One build at a time: two would race on the stamps and the Debian root.
exec 9>"$OUT/.lock"
flock 9
# Layer tars and half-written tarballs of a build that was killed.
rm -rf "$OUT"/.testimage-* "$OUT"/.*.tar.[0-9]*

# Static, reproducible Go builds: -trimpath and -buildvcs=false keep paths and
# the commit out of the binary, so its hash changes only with its code.
gobuild() { # out pkg
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -buildvcs=false -ldflags=-s -o "$1" "$2"
}
log "building hack/testimage"
gobuild "$BUILD/testimage" ./hack/testimage || die "building ./hack/testimage failed"
tool_hash=$(hash_file "$BUILD/testimage")

# The stamp TAR.stamp: line 1 the inputs' hash, line 2 the tool's
# "digest: ... file: ..." line.
summary=()
# up_to_date TAR INPUTS-HASH: the tarball exists and was built from these
# inputs.
up_to_date() {
	[ -f "$1" ] && [ -f "$1.stamp" ] && [ "$(head -n 1 "$1.stamp")" = "$2" ] || return 1
	summary+=("up to date: $(sed -n 2p "$1.stamp")")
}

# pack TAR INPUTS-HASH ARGS...: runs the tool and writes the stamp.
pack() {
	local tar=$1 inputs=$2 out
	shift 2
	rm -f "$tar.stamp"
	out=$("$BUILD/testimage" --output "$tar" "$@") || die "testimage for $tar failed"
	echo "$out"
	out=$(grep '^digest: ' <<<"$out")
	summary+=("built: $out")
	printf '%s\n%s\n' "$inputs" "$out" >"$tar.stamp"
}

build_pause() {
	local tar=$OUT/pause.tar
	gobuild "$BUILD/pause" ./test/images/pause || die "building ./test/images/pause failed"
	local args=(--tag gantry.local/pause:3.10
		--file "$BUILD/pause=/pause:0755" --entrypoint '["/pause"]' --user 65535)
	local inputs
	inputs=$(printf '%s\n' "pause v1" "$tool_hash" "$(hash_file "$BUILD/pause")" \
		"SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-}" "${args[@]}" | hash_stdin)
	if up_to_date "$tar" "$inputs"; then
		log "pause.tar is up to date"
		return
	fi
	log "building pause.tar"
	pack "$tar" "$inputs" "${args[@]}"
}

# unmount_under DIR: unmounts everything mounted at or below DIR, deepest
# first (debootstrap mounts proc, sys and maybe dev/pts in its target and a
# failed run can leave them behind).
unmount_under() {
	local dir m
	dir=$(realpath -m "$1")
	awk -v d="$dir" '$2 == d || index($2, d "/") == 1 {print $2}' /proc/mounts | sort -r |
		while read -r m; do
			umount "$m" 2>/dev/null || umount -l "$m" || log "could not unmount $m"
		done
}

# remove_tree DIR: unmounts what is mounted below DIR, then deletes it; it
# never deletes through a mount (a bind-mounted /dev would take the host's
# device nodes with it).
remove_tree() {
	local dir
	dir=$(realpath -m "$1")
	unmount_under "$dir"
	if awk -v d="$dir" '$2 == d || index($2, d "/") == 1 {found=1} END {exit !found}' /proc/mounts; then
		die "$dir still has mounts below it; not deleting it"
	fi
	rm -rf "$dir"
}

# setup_mpiuser ROOT prepares ROOT the way the MPI operator's base image
# (kubeflow/mpi-operator build/base) is prepared, which is what Trainer's MPI
# runtimes expect of an image: a user mpiuser (uid 1000, the runtimes'
# runAsUser) whose home holds the sshd config the node pods start sshd with
# (`sshd -De -f /home/mpiuser/.sshd_config`, non-root, the job's key as host
# key, port 2222); ssh and sshd on port 2222; no host-key prompts and no
# known_hosts writes, since .ssh is a read-only Secret volume; StrictModes off,
# since the Secret's files are root's.
setup_mpiuser() {
	local r=$1
	chroot "$r" useradd --uid 1000 --user-group --create-home --home-dir /home/mpiuser --shell /bin/bash mpiuser ||
		die "useradd mpiuser in $r failed"
	sed -i -e 's/^[# ]*\(StrictHostKeyChecking\) .*/    \1 no/' -e 's/^[# ]*\(Port\) .*/    \1 2222/' "$r/etc/ssh/ssh_config"
	echo "    UserKnownHostsFile /dev/null" >>"$r/etc/ssh/ssh_config"
	sed -i -e 's/^#\(StrictModes\) .*/\1 no/' -e 's/^#\(Port\) .*/\1 2222/' "$r/etc/ssh/sshd_config"
	grep -q '^ *StrictHostKeyChecking no' "$r/etc/ssh/ssh_config" && grep -q '^ *Port 2222' "$r/etc/ssh/ssh_config" &&
		grep -q '^StrictModes no' "$r/etc/ssh/sshd_config" && grep -q '^Port 2222' "$r/etc/ssh/sshd_config" ||
		die "could not set up ssh_config and sshd_config in $r"
	printf '%s\n' "PidFile /home/mpiuser/sshd.pid" "HostKey /home/mpiuser/.ssh/id_rsa" "StrictModes no" "Port 2222" \
		>"$r/home/mpiuser/.sshd_config"
	chroot "$r" chown mpiuser:mpiuser /home/mpiuser/.sshd_config
	# sshd's privilege separation directory (sshd as root needs it).
	install -d -m 0755 "$r/run/sshd"
	# Host keys generated by the package's install would be the same in
	# every container; the MPI pods use the job's key instead.
	rm -f "$r"/etc/ssh/ssh_host_*
}

# build_rootfs makes bin/images/testbase.rootfs unless it exists with this
# recipe's stamp.
build_rootfs() {
	local rootfs=$OUT/testbase.rootfs
	local partial=$rootfs.partial
	local recipe
	recipe=$(printf '%s\n' "testbase rootfs v1" "$suite" "minbase" "${testbase_packages[@]}" "$(declare -f setup_mpiuser)" | hash_stdin)
	if [ -d "$rootfs" ] && [ -f "$rootfs.stamp" ] && [ "$(head -n 1 "$rootfs.stamp")" = "recipe=$recipe" ]; then
		log "reusing $rootfs ($(sed -n 2p "$rootfs.stamp"))"
		return
	fi
	command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap)"
	remove_tree "$partial"
	remove_tree "$rootfs"
	rm -f "$rootfs.stamp" "$partial.stamp"
	trap 'unmount_under "'"$partial"'"' EXIT

	local include log_file=$OUT/testbase.debootstrap.log start=$SECONDS
	include=$(
		IFS=,
		echo "${testbase_packages[*]}"
	)
	log "debootstrap --variant=minbase $suite from $mirror (a few minutes; log: $log_file)"
	if ! debootstrap --variant=minbase --include="$include" "$suite" "$partial" "$mirror" >"$log_file" 2>&1; then
		unmount_under "$partial"
		tail -n 20 "$log_file" >&2
		[ -f "$partial/debootstrap/debootstrap.log" ] && tail -n 20 "$partial/debootstrap/debootstrap.log" >&2
		die "debootstrap of $suite from $mirror failed (log above, full log in $log_file); the partial root $partial is left for inspection and is never reused"
	fi
	unmount_under "$partial"
	log "debootstrap took $((SECONDS - start))s"

	setup_mpiuser "$partial"
	# The host's name and resolver do not belong in the image; the runtime
	# provides both.
	echo localhost >"$partial/etc/hostname"
	: >"$partial/etc/resolv.conf"

	printf 'recipe=%s\nbuilt=%s\n' "$recipe" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$partial.stamp"
	# Renaming last means an interrupted build is never mistaken for a root.
	mv "$partial" "$rootfs"
	mv "$partial.stamp" "$rootfs.stamp"
	trap - EXIT
	log "built $rootfs ($(du -sh "$rootfs" | cut -f1))"
}

build_testbase() {
	local tar=$OUT/testbase.tar
	[ "$(id -u)" = 0 ] || die "testbase needs root (debootstrap, chroot, and reading all of the root's files); run as root"
	build_rootfs
	local args=(--tag gantry.local/testbase:1 --dir "$OUT/testbase.rootfs" --cmd '["/bin/bash"]')
	gobuild "$BUILD/ray" ./test/images/raystandin || die "building ./test/images/raystandin failed"
	local ray_hash
	ray_hash=$(hash_file "$BUILD/ray")
	args+=(--file "$BUILD/ray=/usr/local/bin/ray:0755" --file "$root/test/images/mpi/pi.py=/home/mpiuser/pi.py:0644")
	local inputs
	inputs=$(printf '%s\n' "testbase v1" "$tool_hash" "$(cat "$OUT/testbase.rootfs.stamp")" "ray=$ray_hash" "pi=$(hash_file test/images/mpi/pi.py)" \
		"SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-}" "${args[@]}" | hash_stdin)
	if up_to_date "$tar" "$inputs"; then
		log "testbase.tar is up to date"
		return
	fi
	log "building testbase.tar"
	local start=$SECONDS
	pack "$tar" "$inputs" "${args[@]}"
	log "testbase image build took $((SECONDS - start))s"
}

# The Slurm images' root: what of the Slurm root is left out of the copy
# (what test/slurm/start.sh and the tests write into it, and what the image
# build drops anyway), the packages added, dropped and kept.
slurm_copy_excludes=(./proc/* ./sys/* ./dev/* ./run/* ./tmp/* ./etc/slurm/* ./var/spool/slurmctld ./var/spool/slurmd
	./var/log/slurm/* ./var/lib/slurm/*/* ./var/lib/mariadb ./var/lib/mysql ./slurm-*.out ./var/cache/apt/archives/*.deb)
slurm_add_packages=(sackd tini)
slurm_drop_packages=(mariadb-server mariadb-server-core mariadb-client mariadb-client-core galera-4)
# Kept with their dependencies (and Debian's required packages); everything
# else the dropped packages pulled in goes.
slurm_keep_packages=(apt slurmctld slurmd slurmrestd slurm-client slurm-wlm-jwt-plugin slurmdbd sackd tini procps)
# Slinky's slurm user and group (pkg/controller/slurm/slinky: SlurmUserUID).
slurm_uid=401

# prepare_slurm_root ROOT turns a copy of the Slurm root into the images'.
prepare_slurm_root() {
	local r=$1
	local in_root=(env DEBIAN_FRONTEND=noninteractive chroot "$r")
	install -d -m 0755 "$r/proc" "$r/sys" "$r/dev" "$r/run" "$r/etc/slurm"
	install -d -m 1777 "$r/tmp"
	# The tests' REST user (start.sh) is not Slurm's.
	if "${in_root[@]}" getent passwd slurmrest >/dev/null; then
		"${in_root[@]}" userdel slurmrest || die "userdel slurmrest in $r failed"
	fi

	# sackd (the login nodes' daemon) must be the same build as the rest of
	# Slurm; tini is the images' init. No daemon may start while packages
	# are installed or removed.
	local version log_file=$OUT/slurm.apt.log
	# shellcheck disable=SC2016 # dpkg-query's format, not the shell's
	version=$("${in_root[@]}" dpkg-query -W -f='${Version}' slurmctld) || die "no slurmctld package in $r"
	cp -L /etc/resolv.conf "$r/etc/resolv.conf"
	echo "deb $mirror sid main" >"$r/etc/apt/sources.list"
	printf '#!/bin/sh\nexit 101\n' >"$r/usr/sbin/policy-rc.d"
	chmod 0755 "$r/usr/sbin/policy-rc.d"
	mount -t proc proc "$r/proc"
	local install=(apt-get install -y -q --no-install-recommends "sackd=$version" tini)
	if ! "${in_root[@]}" "${install[@]}" >"$log_file" 2>&1 9>&-; then
		log "installing ${slurm_add_packages[*]} from the Slurm root's package lists failed; updating them from $mirror"
		# A mirror snapshot's Release files may have expired (start.sh
		# does the same).
		"${in_root[@]}" apt-get -o Acquire::Check-Valid-Until=false update -q >>"$log_file" 2>&1 9>&- && "${in_root[@]}" "${install[@]}" >>"$log_file" 2>&1 9>&- ||
			die "cannot install sackd $version and tini from $mirror into $r (log: $log_file); Debian may have moved on from Slurm $version: rebuild the Slurm root (rm -rf ${slurm_src%/rootfs}; test/slurm/start.sh)"
	fi
	# Everything not kept is marked as pulled in, so that removing MariaDB
	# removes what only it needed.
	local drop=() p
	for p in "${slurm_drop_packages[@]}"; do
		"${in_root[@]}" dpkg-query -W "$p" >/dev/null 2>&1 && drop+=("$p")
	done
	{
		"${in_root[@]}" sh -c "dpkg-query -W -f='\${Package}\n' | xargs apt-mark auto" &&
			"${in_root[@]}" sh -c "dpkg-query -W -f='\${Package} \${Priority} \${Essential}\n' | awk '\$2 == \"required\" || \$3 == \"yes\" {print \$1}' | xargs apt-mark manual" &&
			"${in_root[@]}" apt-mark manual "${slurm_keep_packages[@]}" &&
			"${in_root[@]}" apt-get purge -y -q --autoremove -o APT::AutoRemove::RecommendsImportant=false \
				-o APT::AutoRemove::SuggestsImportant=false "${drop[@]}"
	} >>"$log_file" 2>&1 9>&- || die "removing ${drop[*]} from $r failed (log: $log_file)"
	"${in_root[@]}" apt-get clean >>"$log_file" 2>&1
	unmount_under "$r/proc"
	rm -f "$r/usr/sbin/policy-rc.d"
	# Caches and logs; ldconfig's aux-cache holds inode numbers and times,
	# which would make every prepared root differ.
	rm -rf "$r"/var/lib/apt/lists/* "$r"/var/cache/apt/*.bin "$r"/var/cache/ldconfig/aux-cache "$r"/var/log/apt/* "$r"/var/log/*.log
	# Documentation, manuals and translations: no daemon reads them.
	rm -rf "$r"/usr/share/man/* "$r"/usr/share/info/*
	find "$r/usr/share/locale" -mindepth 1 -maxdepth 1 -type d -exec rm -rf {} +
	find "$r/usr/share/doc" -type f ! -name copyright -delete
	find "$r/usr/share/doc" -depth -mindepth 1 -type d -empty -delete

	# Debian's slurm user becomes Slinky's (401:401), which Gantry's pods
	# run as, and so do its files.
	local old_uid old_gid
	old_uid=$("${in_root[@]}" id -u slurm) && old_gid=$("${in_root[@]}" id -g slurm) || die "no slurm user in $r"
	if awk -F: -v id="$slurm_uid" '$3 == id && $1 != "slurm" {found=1} END {exit !found}' "$r/etc/passwd" "$r/etc/group"; then
		die "uid or gid $slurm_uid is taken in $r"
	fi
	sed -i "s/^slurm:x:$old_uid:$old_gid:/slurm:x:$slurm_uid:$slurm_uid:/" "$r/etc/passwd"
	sed -i "s/^slurm:x:$old_gid:/slurm:x:$slurm_uid:/" "$r/etc/group"
	find "$r" -xdev -uid "$old_uid" -exec chown -h "$slurm_uid" {} +
	find "$r" -xdev -gid "$old_gid" -exec chgrp -h "$slurm_uid" {} +
	[ "$("${in_root[@]}" id slurm)" = "uid=$slurm_uid(slurm) gid=$slurm_uid(slurm) groups=$slurm_uid(slurm)" ] ||
		die "moving the slurm user to $slurm_uid in $r failed: $("${in_root[@]}" id slurm)"

	# The directories the daemons use, as Slinky's images have them;
	# Gantry's pods mount volumes over most.
	install -d -m 0755 -o "$slurm_uid" -g "$slurm_uid" "$r/var/spool/slurmctld" "$r/var/log/slurm"
	install -d -m 0755 "$r/var/spool/slurmd"
	# The host's name and resolver do not belong in the image; the runtime
	# provides both.
	echo localhost >"$r/etc/hostname"
	printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$r/etc/hosts"
	: >"$r/etc/resolv.conf"
}

# build_slurm_rootfs makes bin/images/slurm.rootfs from the Slurm root
# unless it exists with this recipe's stamp. The stamp's lines: the recipe,
# the Slurm version, when it was built.
build_slurm_rootfs() {
	local rootfs=$OUT/slurm.rootfs
	local partial=$rootfs.partial
	local recipe
	recipe=$(printf '%s\n' "slurm rootfs v1" "source=$(hash_file "$slurm_src/var/lib/dpkg/status")" "$mirror" \
		"${slurm_copy_excludes[@]}" "${slurm_add_packages[@]}" "${slurm_drop_packages[@]}" "${slurm_keep_packages[@]}" \
		"$slurm_uid" "$(declare -f prepare_slurm_root)" | hash_stdin)
	if [ -d "$rootfs" ] && [ -f "$rootfs.stamp" ] && [ "$(head -n 1 "$rootfs.stamp")" = "recipe=$recipe" ]; then
		log "reusing $rootfs ($(sed -n 3p "$rootfs.stamp"))"
		return
	fi
	remove_tree "$partial"
	remove_tree "$rootfs"
	rm -f "$rootfs.stamp" "$partial.stamp"
	trap 'unmount_under "'"$partial"'"' EXIT

	local start=$SECONDS excludes=() e
	for e in "${slurm_copy_excludes[@]}"; do
		excludes+=("--exclude=$e")
	done
	log "copying the Slurm root $slurm_src into $partial"
	mkdir -p "$partial"
	# Under start.sh's lock, so that it does not change the root meanwhile.
	# Numeric owners: the host's user names are not the root's.
	(
		exec 8>"${slurm_src%/rootfs}/.lock"
		flock -w 600 8 || exit 1
		tar -C "$slurm_src" --numeric-owner --xattrs --xattrs-include=security.capability --one-file-system \
			"${excludes[@]}" -cf - . | tar -C "$partial" --numeric-owner --xattrs --xattrs-include=security.capability -xpf -
	) || die "copying $slurm_src into $partial failed"
	log "preparing $partial (packages: log in $OUT/slurm.apt.log)"
	prepare_slurm_root "$partial"
	local version
	version=$(chroot "$partial" slurmctld -V) || die "slurmctld -V in $partial failed"
	printf 'recipe=%s\nslurm=%s\nbuilt=%s\n' "$recipe" "${version##* }" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$partial.stamp"
	# Renaming last means an interrupted build is never mistaken for a root.
	mv "$partial" "$rootfs"
	mv "$partial.stamp" "$rootfs.stamp"
	trap - EXIT
	log "built $rootfs in $((SECONDS - start))s ($(du -sh "$rootfs" | cut -f1), Slurm ${version##* })"
}

build_slurm() {
	local tar=$OUT/slurm.tar
	[ "$(id -u)" = 0 ] || die "slurm needs root (chroot, and reading and owning all of the root's files); run as root"
	if [ ! -x "$slurm_src/usr/sbin/slurmrestd" ]; then
		# The root the real-Slurm tests use; built once (debootstrap).
		log "building the Slurm root $slurm_src (test/slurm/start.sh --root-only; first run only, a few minutes)"
		test/slurm/start.sh --root-only 9>&- || die "test/slurm/start.sh --root-only could not build the Slurm root (its reason is above)"
	fi
	build_slurm_rootfs
	# Tagged by the Slurm series, as Slinky tags its images (25.11-ubuntu24.04).
	local version series
	version=$(sed -n 's/^slurm=//p' "$OUT/slurm.rootfs.stamp")
	series=${version%.*}
	[[ $series =~ ^[0-9]+\.[0-9]+$ ]] || die "cannot tell the Slurm series from version '$version' ($OUT/slurm.rootfs.stamp)"
	local suffix=$series-debian-sid files=test/images/slurm entrypoint='["entrypoint.sh"]'
	# The root is common; each image adds its entrypoint and config.
	local args=(--dir "$OUT/slurm.rootfs" --workdir /tmp --env "SLURM_VERSION=$version"
		--tag "gantry.local/slurmctld:$suffix" --file "$files/slurmctld-entrypoint.sh=/usr/local/bin/entrypoint.sh:0755" --entrypoint "$entrypoint"
		--tag "gantry.local/slurmd:$suffix" --file "$files/slurmd-entrypoint.sh=/usr/local/bin/entrypoint.sh:0755" --entrypoint "$entrypoint"
		# A second slurmd, a new revision of the first, for the rolling
		# update of the slurmd image the e2e tier makes.
		--tag "gantry.local/slurmd:$suffix-r2" --file "$files/slurmd-entrypoint.sh=/usr/local/bin/entrypoint.sh:0755" --entrypoint "$entrypoint"
		--env GANTRY_IMAGE_REVISION=2
		--tag "gantry.local/slurmrestd:$suffix" --entrypoint '["tini","-g","--","slurmrestd"]' --cmd '["0.0.0.0:6820"]'
		--tag "gantry.local/slurmdbd:$suffix" --entrypoint '["tini","-g","--","slurmdbd","-D"]'
		--tag "gantry.local/sackd:$suffix" --file "$files/sackd-entrypoint.sh=/usr/local/bin/entrypoint.sh:0755" --entrypoint "$entrypoint")
	local inputs f
	inputs=$(
		printf '%s\n' "slurm v1" "$tool_hash" "$(cat "$OUT/slurm.rootfs.stamp")" "SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-}" "${args[@]}"
		for f in "$files"/*-entrypoint.sh; do echo "$f=$(hash_file "$f")"; done
	)
	inputs=$(hash_stdin <<<"$inputs")
	if up_to_date "$tar" "$inputs"; then
		log "slurm.tar is up to date (gantry.local/{slurmctld,slurmd,slurmrestd,slurmdbd,sackd}:$suffix, slurmd:$suffix-r2)"
		return
	fi
	log "building slurm.tar (gantry.local/{slurmctld,slurmd,slurmrestd,slurmdbd,sackd}:$suffix, slurmd:$suffix-r2)"
	local start=$SECONDS
	pack "$tar" "$inputs" "${args[@]}"
	log "slurm image build took $((SECONDS - start))s"
}

for t in "${targets[@]}"; do
	"build_$t"
done
log "done:"
for s in "${summary[@]}"; do
	sed 's/^/  /' <<<"$s"
done
