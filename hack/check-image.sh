#!/usr/bin/env bash
# Reads an image tarball from `make image` with skopeo, an OCI tool Gantry
# did not write, the way `docker load` and `kind load image-archive` read
# it: the docker-archive side (manifest.json, RepoTags) by tag, the OCI
# layout side (index.json) by digest, and every layer blob in full.
#
#   hack/check-image.sh TARBALL TAG DIGEST
set -euo pipefail
tar=$1 tag=$2 digest=$3
fail() { echo "check-image: $*" >&2; exit 1; }
if ! command -v skopeo >/dev/null 2>&1; then
  echo "check-image: SKIPPED, skopeo is not installed (apt-get install skopeo); CI installs it"
  exit 0
fi
got=$(skopeo inspect --format '{{.Digest}}' "oci-archive:$tar")
[ "$got" = "$digest" ] || fail "the OCI layout's manifest digest is $got, make image printed $digest"
cfg=$(skopeo inspect --config "docker-archive:$tar:$tag") || fail "docker-archive has no image tagged $tag"
grep -q '"User": "65532:65532"' <<<"$cfg" || fail "the image does not run as 65532:65532"
grep -q '"/manager"' <<<"$cfg" || fail "the image's entrypoint is not /manager"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
skopeo copy --quiet "docker-archive:$tar:$tag" "dir:$tmp/docker" || fail "reading the docker-archive layers failed"
skopeo copy --quiet "oci-archive:$tar" "dir:$tmp/oci" || fail "reading the OCI layout's layers failed"
echo "check-image: skopeo reads $tar as docker-archive ($tag) and OCI layout ($digest)"
