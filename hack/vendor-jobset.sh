#!/usr/bin/env bash
# Vendors JobSet's own Helm chart (charts/jobset of sigs.k8s.io/jobset, at the
# version go.mod pins) into charts/gantry/charts/jobset, where the Gantry
# chart uses it as a subchart (Chart.yaml dependency, condition
# jobset.install). The files are copied unchanged; the image is pinned by the
# parent's values (jobset.image). Run after bumping sigs.k8s.io/jobset, then
# update the dependency version in charts/gantry/Chart.yaml if the script
# says so.
set -euo pipefail
cd "$(dirname "$0")/.."

go=${GO:-go}
dir=$("$go" list -m -f '{{.Dir}}' sigs.k8s.io/jobset)
version=$("$go" list -m -f '{{.Version}}' sigs.k8s.io/jobset)
src=$dir/charts/jobset
dst=charts/gantry/charts/jobset
[ -f "$src/Chart.yaml" ] || { echo "vendor-jobset: no Helm chart in $src" >&2; exit 1; }

rm -rf "$dst"
mkdir -p "$dst"
# Everything the chart renders or documents; its unit tests and doc
# generator input stay upstream.
(cd "$src" && find . -type f ! -path './tests/*' ! -name README.md.gotmpl -print) | while read -r f; do
  mkdir -p "$dst/$(dirname "$f")"
  cp "$src/$f" "$dst/$f"
done
cp "$dir/LICENSE" "$dst/LICENSE"
chmod -R u+w,go-w "$dst"
cat > "$dst/VENDOR" <<MSG
Vendored by hack/vendor-jobset.sh from the Go module sigs.k8s.io/jobset
$version (charts/jobset). Do not edit; re-run the script instead.
MSG

chart_version=$(awk '/^version:/ { print $2 }' "$dst/Chart.yaml")
if ! grep -q "version: $chart_version\$" charts/gantry/Chart.yaml; then
  echo "vendor-jobset: set the jobset dependency version in charts/gantry/Chart.yaml to $chart_version" >&2
  exit 1
fi
echo "vendor-jobset: charts/gantry/charts/jobset is JobSet's chart $chart_version from sigs.k8s.io/jobset $version"
