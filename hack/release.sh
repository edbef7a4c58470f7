#!/usr/bin/env bash
# Cuts a Gantry release from one version (`make release`; docs/versioning.md).
# The chart, the image and the manager binary all carry VERSION, or nothing
# is released:
#
#   1. VERSION, charts/gantry/Chart.yaml's version and appVersion are one
#      semantic version (SemVer 2.0.0), and CHANGELOG.md has "## [VERSION]";
#   2. `make manager` builds bin/manager stamped with VERSION, and the
#      binary's pkg/version.Version is read back;
#   3. `make image` builds the image tarball(s); the tag, the OCI annotations,
#      the version label and the /manager inside are read back;
#   4. `helm package` writes bin/release/gantry-VERSION.tgz, the file
#      `helm push ... oci://REGISTRY` takes; its version, appVersion and
#      default image are read back;
#   5. bin/release/ gets the image tarball(s) and the image's manager
#      binaries beside the chart, and SHA256SUMS for all of them.
#
# Nothing is pushed: the commands that would publish are printed.
#
#   VERSION=0.1.0 hack/release.sh
#
# `make release` passes VERSION (default: Chart.yaml's appVersion), IMAGE,
# IMAGE_PLATFORMS, HELM, GO and MAKE.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=${VERSION:-}
GO=${GO:-go}
MAKE=${MAKE:-make}
HELM=${HELM:-bin/helm}
IMAGE=${IMAGE:-ghcr.io/gantry-dev/gantry:$VERSION}
IMAGE_PLATFORMS=${IMAGE_PLATFORMS:-linux/amd64}
CHART_DIR=charts/gantry
CHART_YAML=$CHART_DIR/Chart.yaml
OUT=bin/release

fail() { echo "release: FAILED: $*" >&2; exit 1; }
step() { echo "== release $VERSION: $*"; }
warn() { echo "release: warning: $*" >&2; }
if command -v sha256sum >/dev/null 2>&1; then sha256() { sha256sum "$@"; }; else sha256() { shasum -a 256 "$@"; }; fi

# SemVer 2.0.0's own regular expression (semver.org), in POSIX ERE.
num='(0|[1-9][0-9]*)'
ident='(0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)'
semver="^$num\\.$num\\.$num(-$ident(\\.$ident)*)?(\\+[0-9a-zA-Z-]+(\\.[0-9a-zA-Z-]+)*)?\$"

# chart_field KEY: the top-level KEY of Chart.yaml, unquoted (the
# dependencies' indented "version:" lines are not top-level).
chart_field() {
  awk -v k="$1" 'index($0, k ":") == 1 { v = substr($0, length(k) + 2); gsub(/^[ \t]+|[ \t]+$|["'\'']/, "", v); print v; exit }' "$CHART_YAML"
}

# ---------------------------------------------------------------------------
step "checking that the chart, CHANGELOG.md and VERSION name one version"
[ -n "$VERSION" ] || fail "VERSION is empty (make release sets it from $CHART_YAML's appVersion)"
chart_version=$(chart_field version)
app_version=$(chart_field appVersion)
problems=()
[[ $VERSION =~ $semver ]] || problems+=("VERSION '$VERSION' is not a semantic version (SemVer 2.0.0: MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD], no leading 'v')")
case $VERSION in *+*) problems+=("VERSION '$VERSION' has build metadata ('+'), which no image tag may hold");; esac
[ "$chart_version" = "$VERSION" ] || problems+=("$CHART_YAML has version: '$chart_version', not '$VERSION'")
[ "$app_version" = "$VERSION" ] || problems+=("$CHART_YAML has appVersion: '$app_version', not '$VERSION'")
case $IMAGE in
  *:"$VERSION") ;;
  *) problems+=("IMAGE '$IMAGE' is not tagged ':$VERSION'");;
esac
changelog_line=$(awk -v h="## [$VERSION]" 'index($0, h) == 1 { print; exit }' CHANGELOG.md 2>/dev/null || true)
[ -n "$changelog_line" ] || problems+=("CHANGELOG.md has no '## [$VERSION]' section (move the [Unreleased] entries under '## [$VERSION] - YYYY-MM-DD')")
if [ ${#problems[@]} -gt 0 ]; then
  echo "release: FAILED: release $VERSION does not name one version:" >&2
  for p in "${problems[@]}"; do echo "  - $p" >&2; done
  echo "release: the chart's version, its appVersion, the image tag and the binary are one version (docs/versioning.md)." >&2
  echo "release: to release $VERSION, set version and appVersion in $CHART_YAML and add its CHANGELOG.md section; to release the chart's, run 'make release' without VERSION." >&2
  exit 1
fi
[[ $changelog_line =~ ^"## ["[^]]*"] - "[0-9]{4}-[0-9]{2}-[0-9]{2}$ ]] ||
  warn "CHANGELOG.md's heading '$changelog_line' has no ' - YYYY-MM-DD' release date"
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain 2>/dev/null)" ]; then
  warn "the work tree has uncommitted changes: these artifacts are not exactly commit $commit"
  dirty=" (work tree dirty)"
else
  dirty=
fi
echo "version $VERSION: Chart.yaml version and appVersion, image $IMAGE, CHANGELOG.md '$changelog_line'"

# hack/releasecheck reads Go binaries and image tarballs (standard library
# only), built once into a temporary directory.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$GO" build -o "$tmp/releasecheck" ./hack/releasecheck ||
  fail "could not build the release checker (hack/releasecheck)"
check() { "$tmp/releasecheck" "$@"; }
# how_read HOW: how the checker found a binary's version.
how_read() {
  case $1 in
    exact) echo "read from its symbol table";;
    *) echo "stripped: found as a Go string in its data";;
  esac
}

# ---------------------------------------------------------------------------
step "building bin/manager (make manager VERSION=$VERSION)"
"$MAKE" --no-print-directory manager VERSION="$VERSION" || fail "make manager failed (above)"
read -r how got < <(check version bin/manager "$VERSION") || fail "cannot read the version bin/manager was stamped with"
[ "$got" = "$VERSION" ] ||
  fail "bin/manager reports version '$got', not '$VERSION' (make manager's -X github.com/gantry-dev/gantry/pkg/version.Version)"
echo "bin/manager: pkg/version.Version = $got ($(how_read "$how"); the manager logs it at start: 'starting manager' version=$got)"

# ---------------------------------------------------------------------------
step "building the image (make image VERSION=$VERSION IMAGE=$IMAGE IMAGE_PLATFORMS=$IMAGE_PLATFORMS)"
"$MAKE" --no-print-directory image VERSION="$VERSION" IMAGE="$IMAGE" IMAGE_PLATFORMS="$IMAGE_PLATFORMS" | tee "$tmp/image.out" ||
  fail "make image failed (above)"
IFS=, read -r -a platforms <<<"$IMAGE_PLATFORMS"
# img KEY: KEY's value in what the checker read from the current tarball ($info).
img() { awk -v k="$1" 'index($0, k "=") == 1 { print substr($0, length(k) + 2); exit }' "$info"; }
images=() binaries=() digests=() suffixes=()
for plat in "${platforms[@]}"; do
  IFS=/ read -r os arch variant <<<"$plat"
  suffix=$os-$arch${variant:+-$variant}
  if [ ${#platforms[@]} -gt 1 ]; then tarball=bin/image/gantry-$VERSION-$suffix.tar; else tarball=bin/image/gantry-$VERSION.tar; fi
  built=bin/image/manager-$suffix
  [ -f "$tarball" ] || fail "make image wrote no $tarball"
  digest=$(awk -v f="$tarball" '$1 == "digest:" && $NF ~ ("/" f "$") { print $2 }' "$tmp/image.out")
  [ -n "$digest" ] || fail "make image printed no digest for $tarball"
  check image "$tarball" "$tmp/manager-$suffix" >"$tmp/image-$suffix.txt" || fail "cannot read $tarball"
  info=$tmp/image-$suffix.txt
  [[ " $(img repotags) " == *" $IMAGE "* ]] || fail "$tarball is tagged '$(img repotags)' (manifest.json RepoTags), not $IMAGE"
  [ "$(img ref_name)" = "$VERSION" ] || fail "$tarball's index.json says org.opencontainers.image.ref.name '$(img ref_name)', not '$VERSION'"
  [[ $(img containerd_name) == *:"$VERSION" ]] || fail "$tarball's index.json says io.containerd.image.name '$(img containerd_name)', not ...:$VERSION"
  [ "$(img label_version)" = "$VERSION" ] || fail "$tarball's config has the label org.opencontainers.image.version '$(img label_version)', not '$VERSION'"
  [ "$(img platform)" = "$plat" ] || fail "$tarball is for platform '$(img platform)', not $plat"
  entrypoint=$(img entrypoint)
  in_image=$(sha256 "$tmp/manager-$suffix" | awk '{print $1}')
  [ "$in_image" = "$(sha256 "$built" | awk '{print $1}')" ] || fail "$tarball's $entrypoint is not $built"
  read -r how got < <(check version "$tmp/manager-$suffix" "$VERSION") ||
    fail "$tarball's $entrypoint is not stamped with version $VERSION"
  [ "$got" = "$VERSION" ] || fail "$tarball's $entrypoint reports version '$got', not '$VERSION'"
  echo "$tarball: tag $IMAGE, ref.name $(img ref_name), label version $(img label_version), $entrypoint = $built, version $got ($(how_read "$how")), digest $digest"
  hack/check-image.sh "$tarball" "$IMAGE" "$digest"
  images+=("$tarball") binaries+=("$built:gantry-manager-$VERSION-$suffix") digests+=("$digest") suffixes+=("$suffix")
done

# ---------------------------------------------------------------------------
step "packaging the chart into $OUT/"
rm -rf "$OUT"
mkdir -p "$OUT"
"$HELM" package "$CHART_DIR" --destination "$OUT"
chart_tgz=$OUT/gantry-$VERSION.tgz
[ -f "$chart_tgz" ] || fail "helm package wrote no $chart_tgz: $(ls "$OUT")"
meta=$("$HELM" show chart "$chart_tgz")
pkg_version=$(awk '/^version:/ {gsub(/"/, "", $2); print $2}' <<<"$meta")
pkg_app=$(awk '/^appVersion:/ {gsub(/"/, "", $2); print $2}' <<<"$meta")
if [ "$pkg_version" != "$VERSION" ] || [ "$pkg_app" != "$VERSION" ]; then
  fail "$chart_tgz says version '$pkg_version', appVersion '$pkg_app', not '$VERSION'"
fi
# The packaged chart rendered at its defaults must run this image. Rendered
# for the Kubernetes version the tests run (the Makefile's kube-apiserver).
kube=$(sed -n 's/.*gitVersion=v\([0-9][0-9.]*\).*/\1/p' Makefile | head -n 1)
lint=$("$HELM" lint --quiet "$chart_tgz" ${kube:+--kube-version "$kube"} 2>&1) || fail "helm lint $chart_tgz failed: $lint"
deployed=$("$HELM" template gantry "$chart_tgz" --namespace gantry-system ${kube:+--kube-version "$kube"} \
  --show-only templates/deployment.yaml | awk '$1 == "image:" {gsub(/"/, "", $2); print $2; exit}')
[ "${deployed##*:}" = "$VERSION" ] || fail "$chart_tgz deploys the image '$deployed' by default, not tag $VERSION"
[ "$deployed" = "$IMAGE" ] || warn "$chart_tgz deploys '$deployed' by default; this release built '$IMAGE' (same tag, another repository)"
echo "$chart_tgz: version $pkg_version, appVersion $pkg_app, deploys $deployed by default"

# ---------------------------------------------------------------------------
step "collecting the artifacts and SHA256SUMS in $OUT/"
artifacts=("${chart_tgz##*/}")
for t in "${images[@]}"; do cp "$t" "$OUT/"; artifacts+=("${t##*/}"); done
for b in "${binaries[@]}"; do cp "${b%%:*}" "$OUT/${b#*:}"; artifacts+=("${b#*:}"); done
(cd "$OUT" && sha256 "${artifacts[@]}" >SHA256SUMS.tmp && mv SHA256SUMS.tmp SHA256SUMS && sha256 -c SHA256SUMS >/dev/null) ||
  fail "could not write $OUT/SHA256SUMS"

echo
echo "release $VERSION: OK, from commit $commit$dirty"
echo "  chart   $chart_tgz (version $VERSION, appVersion $VERSION)"
for i in "${!images[@]}"; do
  echo "  image   $OUT/${images[$i]##*/} ($IMAGE, ${digests[$i]})"
done
for b in "${binaries[@]}"; do echo "  binary  $OUT/${b#*:} (pkg/version.Version $VERSION)"; done
echo "  sums    $OUT/SHA256SUMS"
sed 's/^/            /' "$OUT/SHA256SUMS"
echo "Nothing was pushed. To publish (docs/versioning.md, 'Cutting a release'):"
echo "  git tag -a v$VERSION -m 'Gantry $VERSION' && git push origin v$VERSION"
if [ ${#images[@]} -gt 1 ]; then
  for i in "${!images[@]}"; do
    echo "  skopeo copy --preserve-digests oci-archive:$OUT/${images[$i]##*/} docker://$IMAGE-${suffixes[$i]}"
  done
  echo "  then one image index $IMAGE over those ${#images[@]} manifests (e.g. crane index append, docker buildx imagetools create)"
else
  echo "  skopeo copy --preserve-digests oci-archive:$OUT/${images[0]##*/} docker://$IMAGE"
fi
echo "  helm push $chart_tgz oci://<registry>/<charts-path>"
