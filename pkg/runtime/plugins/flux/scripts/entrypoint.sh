#!/bin/bash
# Gantry's Flux entrypoint: the command of the trainer's node container.
# Every pod starts a Flux broker from the installation the flux-installer
# init container left in /mnt/flux; together they form the job's Flux
# instance. The lead broker (pod 0) runs the TrainJob's command with
# `flux run` and exits with its status; the others serve until it is done.
#
#   entrypoint.sh COMMAND_LINE [ARG...]
#
# COMMAND_LINE is the TrainJob's command and args as one shell-quoted line;
# ARGs (the runtime's args) follow it. No command (an empty line and no
# ARG) starts an instance that waits for users (`flux proxy`).
set -uo pipefail

#@gantry-settings@

flux_root=/mnt/flux
view=$flux_root/view
config_root=$flux_root/config
cfg=$config_root/etc/flux/config
system=$config_root/etc/flux/system

# Split the command line back into its words, the quoted ones intact.
if [ "$#" -gt 0 ]; then
  line=$1
  shift
  if ! eval "set -- $line \"\$@\""; then
    echo "Cannot read the command line: $line" >&2
    exit 2
  fi
fi

# write_file PATH: stdin to PATH, replacing it in one step.
write_file() {
  cat > "$1.tmp" && mv -f "$1.tmp" "$1"
}

# Flux comes after the image's own software in PATH.
export PATH=$PATH:$view/bin

# The view links into /opt/software (the spack-install volume).
if ! cp -Rf "$flux_root/software/." /opt/software/; then
  echo "Cannot copy the Flux software to /opt/software" >&2
  exit 1
fi

# Flux's Python is the view's.
python_root=
for d in "$view"/lib/python3*; do
  if [ -d "$d" ]; then
    python_root=$d
    break
  fi
done
if [ -n "$python_root" ]; then
  python=$view/bin/$(basename "$python_root")
  echo "Flux's Python: $python ($python_root)"
  if [ -f "$python" ]; then
    rm -f "$view/bin/python3" "$view/bin/python"
    ln -sfn "$python" "$view/lib/python" || true
    ln -sfn "$python" "$view/lib/python3" || true
  fi
  export PYTHONPATH=${PYTHONPATH:-}:$python_root/site-packages
fi
export FLUX_RC_EXTRA=$view/etc/flux/rc1.d

# Helpers for users of the instance: `. /mnt/flux/flux-view.sh` for the
# environment, then `flux proxy $fluxsocket`.
write_file "$flux_root/load-fluxion.sh" <<'EOF'
flux module remove sched-simple
flux module load sched-fluxion-resource
flux module load sched-fluxion-qmanager
EOF
{
  echo '#!/bin/bash'
  printf 'export PATH=%q\n' "$PATH"
  printf 'export PYTHONPATH=%q\n' "${PYTHONPATH:-}"
  printf 'export LD_LIBRARY_PATH=%q\n' "${LD_LIBRARY_PATH:-}:$view/lib"
  printf 'export fluxsocket=%q\n' "local://$config_root/run/flux/local"
} | write_file "$flux_root/flux-view.sh"

# The instance's CURVE certificate, readable by this user only.
curve=$config_root/etc/curve/curve.cert
mkdir -p "${curve%/*}"
rm -f "$curve"
if ! { cp /curve/curve.cert "$curve" && chmod 0400 "$curve"; }; then
  echo "Cannot install the CURVE certificate" >&2
  exit 1
fi

# This node's resources, for every host of the instance.
hosts=$(cat "$system/hostlist")
if ! flux R encode --hosts="$hosts" "${resources[@]}" | write_file "$system/R"; then
  echo "flux R encode failed" >&2
  exit 1
fi

export STATE_DIR=$config_root/var/lib/flux
export FLUX_OUTPUT_DIR=/tmp/fluxout
mkdir -p "$STATE_DIR" "$FLUX_OUTPUT_DIR" "$system/cron.d"
broker_options=(
  "-Scron.directory=$system/cron.d"
  -Stbon.fanout=256
  "-Srundir=$config_root/run/flux"
  "-Sstatedir=$STATE_DIR"
  "-Slocal-uri=local://$config_root/run/flux/local"
  -Slog-stderr-level=0
  -Slog-stderr-mode=local
)

host=$(cat /proc/sys/kernel/hostname 2>/dev/null || hostname)
if [ "$host" = "$lead_host" ]; then
  if [ "$#" -eq 0 ]; then
    echo "No command: starting the lead broker for interactive use"
    flux broker --config-path "$cfg" "${broker_options[@]}"
    status=$?
  else
    echo "Running: flux run ${run_flags[*]} $(printf '%q ' "$@")"
    flux start -o --config "$cfg" "${broker_options[@]}" flux run "${run_flags[@]}" "$@"
    status=$?
  fi
else
  # A follower retries until the lead broker has taken it in and the
  # instance ends.
  while true; do
    flux start -o --config "$cfg" "${broker_options[@]}"
    status=$?
    if [ "$status" -eq 0 ]; then
      echo "The follower broker exited cleanly."
      break
    fi
    echo "The follower broker exited with ${status}; retrying in 15s"
    sleep 15
  done
fi

# Marker of completion (Trainer's name for it); the status is the job's.
touch "$flux_root/flux-operator-complete.txt"
exit "$status"
