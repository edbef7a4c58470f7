#!/usr/bin/env bash
# Builds the container images that tests on a real kubelet + containerd use,
# as docker-archive tarballs (the `docker save` format) in bin/images/,
# without Docker and without a registry:
#
#   pause.tar     gantry.local/pause:3.10   the pod sandbox: test/images/pause at /pause
#   testbase.tar  gantry.local/testbase:1   Debian bookworm (debootstrap minbase) with
#                                           python3-torch, numpy, Open MPI, ssh, a user
#                                           ray (1000) and /usr/local/bin/ray
#
# Load one into containerd with: ctr -n k8s.io images import bin/images/pause.tar
#
# Usage: hack/test-images.sh [pause|testbase]...     (default: both)
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
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
OUT=${GANTRY_TEST_IMAGES_DIR:-$root/bin/images}
BUILD=$OUT/.build
mirror=${GANTRY_DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=bookworm
testbase_packages=(bash wget procps iproute2 python3 python3-torch python3-numpy openmpi-bin openssh-server openssh-client netbase)

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
	*) die "unknown image $t (want pause or testbase)" ;;
	esac
done

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

# build_rootfs makes bin/images/testbase.rootfs unless it exists with this
# recipe's stamp.
build_rootfs() {
	local rootfs=$OUT/testbase.rootfs
	local partial=$rootfs.partial
	local recipe
	recipe=$(printf '%s\n' "testbase rootfs v1" "$suite" "minbase" "${testbase_packages[@]}" "useradd ray 1000 /home/ray" | hash_stdin)
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

	chroot "$partial" useradd --uid 1000 --user-group --create-home --home-dir /home/ray --shell /bin/bash ray ||
		die "useradd ray in $partial failed"
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
	args+=(--file "$BUILD/ray=/usr/local/bin/ray:0755")
	local inputs
	inputs=$(printf '%s\n' "testbase v1" "$tool_hash" "$(cat "$OUT/testbase.rootfs.stamp")" "ray=$ray_hash" \
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

for t in "${targets[@]}"; do
	"build_$t"
done
log "done:"
for s in "${summary[@]}"; do
	echo "  $s"
done
