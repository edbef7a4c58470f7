#!/bin/bash
# Gantry's Flux installer: the script of the flux-installer init container,
# which runs the Flux view image (FLUX_VIEW_IMAGE) in every pod of the
# trainer step. It copies Flux out of the view into the shared volume at
# /mnt/flux, where the trainer's entrypoint finds it, and writes the
# broker's configuration there. Every file is written whole, so a restarted
# init container leaves the same files behind.
set -euo pipefail

#@gantry-settings@

flux_root=/mnt/flux
config_root=$flux_root/config
config_src=/etc/flux-config

# write_file PATH: stdin to PATH, replacing it in one step.
write_file() {
  cat > "$1.tmp"
  mv -f "$1.tmp" "$1"
}

host=$(cat /proc/sys/kernel/hostname 2>/dev/null || hostname)
echo "Installing Flux on ${host}"

mkdir -p "$config_root/etc/flux/system/cron.d" \
  "$config_root/etc/flux/config" \
  "$config_root/etc/curve" \
  "$config_root/var/lib/flux" \
  "$config_root/run/flux" \
  "$flux_root/view" \
  "$flux_root/software"

# The brokers of the instance; each node's entrypoint encodes its
# resources for these hosts.
printf '%s\n' "$hostlist" | write_file "$config_root/etc/flux/system/hostlist"

write_file "$config_root/etc/flux/config/broker.toml" < "$config_src/broker.toml"
echo "Broker configuration:"
cat "$config_root/etc/flux/config/broker.toml"

# The view is one directory of links into /opt/software (spack's install
# tree): copy both. The trainer's entrypoint puts the software back at
# /opt/software, where the links point.
shopt -s nullglob
views=(/opt/views/._view/*)
shopt -u nullglob
if [ "${#views[@]}" -ne 1 ]; then
  echo "Expected one Flux view in /opt/views/._view, found ${#views[@]}: is FLUX_VIEW_IMAGE a Flux view image?" >&2
  exit 1
fi
echo "Copying the Flux view ${views[0]} and /opt/software to $flux_root"
cp -Rf "${views[0]}/." "$flux_root/view/"
cp -Rf /opt/software/. "$flux_root/software/"

# Marker of a finished installation (Trainer's name for it).
touch "$flux_root/flux-operator-done.txt"
echo "Flux is installed."
