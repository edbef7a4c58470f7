# shellcheck shell=bash
# Shared by the scripts that run a third-party controller (JobSet, Kueue)
# on this machine beside a local control plane, its admission webhooks
# called by the API server at https://localhost:<port>: module lookup,
# the webhook certificates, CRD readiness and the controller process.
#
# The sourcing script sets, before calling these:
#   NAME        the component's name in messages and in the CA's subject
#   BIN         tool binaries (kubectl)
#   STATE       its state directory (certs, pid, log)
#   CERTS       its certificate directory
#   CONTROLLER  the controller binary
#   KUBECONFIG  (for kubectl)

log() { echo "$NAME-local: $*"; }
die() { echo "$NAME-local: $*" >&2; exit 1; }
kubectl() { "$BIN/kubectl" --kubeconfig "$KUBECONFIG" "$@"; }

# module_dir MODULE [GOMOD_DIR] is the directory of MODULE at the version
# the go.mod in GOMOD_DIR (default: the repository root) requires.
module_dir() {
  local mod=$1 from=${2:-$root} dir
  dir=$(cd "$from" && go list -m -f '{{.Dir}}' "$mod")
  if [ -z "$dir" ]; then
    (cd "$from" && go mod download "$mod")
    dir=$(cd "$from" && go list -m -f '{{.Dir}}' "$mod")
  fi
  [ -d "$dir/config" ] || die "cannot find the $mod module (go list -m from $from)"
  echo "$dir"
}

# check_binary MODULE WANT fails unless $CONTROLLER was built from MODULE
# at version WANT, so the controller always matches the manifests applied.
check_binary() {
  [ -x "$CONTROLLER" ] || die "$CONTROLLER is missing; build it with: make $CONTROLLER"
  local have
  have=$(go version -m "$CONTROLLER" | awk -v m="$1" '$1 == "mod" && $2 == m {print $3}')
  [ "$have" = "$2" ] ||
    die "$CONTROLLER is $1 ${have:-unknown}, the pinned version is $2; rm it and run: make $CONTROLLER"
}

# certs_valid: CA and serving certificate present, valid for at least one
# more day, the serving certificate signed by the CA, for localhost and
# 127.0.0.1, and matching its key.
certs_valid() {
  local f
  for f in ca.crt ca.key tls.crt tls.key; do [ -s "$CERTS/$f" ] || return 1; done
  openssl x509 -checkend 86400 -noout -in "$CERTS/ca.crt" >/dev/null 2>&1 || return 1
  openssl x509 -checkend 86400 -noout -in "$CERTS/tls.crt" >/dev/null 2>&1 || return 1
  openssl verify -CAfile "$CERTS/ca.crt" "$CERTS/tls.crt" >/dev/null 2>&1 || return 1
  local text
  text=$(openssl x509 -noout -text -in "$CERTS/tls.crt" 2>/dev/null) || return 1
  grep -q 'DNS:localhost' <<<"$text" && grep -q 'IP Address:127.0.0.1' <<<"$text" || return 1
  [ "$(openssl x509 -noout -pubkey -in "$CERTS/tls.crt")" = "$(openssl pkey -pubout -in "$CERTS/tls.key" 2>/dev/null)" ]
}

# ensure_certs keeps the certificates in $CERTS if still valid, else makes a
# self-signed CA and a serving certificate for DNS localhost and IP 127.0.0.1
# (tls.crt/tls.key, the names controller-runtime's webhook server reads).
ensure_certs() {
  if certs_valid; then
    log "reusing the webhook certificates in $CERTS"
    return 0
  fi
  rm -rf "$CERTS"
  mkdir -p "$CERTS"
  (
    umask 077
    cd "$CERTS"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 365 \
      -subj "/CN=gantry $NAME-local CA" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -keyout tls.key -out tls.csr -subj "/CN=localhost" 2>/dev/null
    printf '%s\n' "subjectAltName=DNS:localhost,IP:127.0.0.1" "basicConstraints=critical,CA:FALSE" \
      "keyUsage=critical,digitalSignature,keyEncipherment" "extendedKeyUsage=serverAuth" >tls.ext
    openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -set_serial "0x$(openssl rand -hex 16)" \
      -days 365 -extfile tls.ext -out tls.crt 2>/dev/null
    rm -f tls.csr tls.ext
  )
  certs_valid || die "generating the webhook certificates in $CERTS failed"
  log "generated a CA and a serving certificate for localhost in $CERTS"
}

# wait_established waits until the CRDs in $1 (a file or directory) are
# Established (kubectl wait exits at once while a CRD has no conditions
# yet, hence the loop).
wait_established() {
  for _ in $(seq 1 60); do
    kubectl wait --for=condition=Established --timeout=30s -f "$1" >/dev/null 2>&1 && return 0
    sleep 1
  done
  die "the CRDs in $1 did not become Established"
}

controller_pid() {
  local pid
  [ -f "$STATE/controller.pid" ] || return 1
  pid=$(cat "$STATE/controller.pid")
  # Only a live process that is still our binary (pids get reused).
  kill -0 "$pid" 2>/dev/null || return 1
  ps -p "$pid" -o args= 2>/dev/null | grep -q "$(basename "$CONTROLLER")" || return 1
  echo "$pid"
}

stop_controller() {
  local pid
  if pid=$(controller_pid); then
    kill -TERM "$pid"
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
    log "controller (pid $pid) stopped"
  fi
  rm -f "$STATE/controller.pid"
}

# started_alive: the controller start_controller just started is still
# running. From the fork on it is this shell's child, but until the forked
# shell has exec'd nohup and the controller its arguments are this script's,
# so controller_pid's check of the arguments would call a process that a
# busy machine has not yet scheduled "exited" (as CI once saw, with an empty
# log). Being this shell's child, and not a zombie, is proof enough.
started_alive() {
  local pid ppid stat
  pid=$(cat "$STATE/controller.pid" 2>/dev/null) || return 1
  read -r ppid stat < <(ps -o ppid=,stat= -p "$pid" 2>/dev/null) || return 1
  [ "$ppid" = "$$" ] && [ "${stat#Z}" = "$stat" ]
}

# wait_ready PROBE_ADDR CHECK waits up to 2 minutes until the controller's
# readyz answers and then CHECK (a function proving its webhooks are
# called) succeeds.
wait_ready() {
  local probe=$1 check=$2 readyz=false
  : >"$STATE/dry-run.log"
  for _ in $(seq 1 240); do
    started_alive ||
      die "the $NAME controller exited; last log lines:$(printf '\n'; tail -n 30 "$STATE/controller.log")"
    if [ $readyz = false ] && curl -fsS "http://$probe/readyz" >/dev/null 2>&1; then readyz=true; fi
    if [ $readyz = true ] && "$check"; then return 0; fi
    sleep 0.5
  done
  curl -sS "http://$probe/readyz?verbose" >&2 || true
  tail -n 5 "$STATE/dry-run.log" >&2
  die "the $NAME controller was not ready within 2 minutes (readyz: $readyz); see $STATE/controller.log"
}

# component_up MODULE VERSION CHECK: the start sequence. The sourcing script
# defines install_manifests, write_config and start_controller; CHECK is
# the wait_ready check; PROBE_ADDR is the controller's readyz address.
component_up() {
  check_binary "$1" "$2"
  mkdir -p "$STATE"
  stop_controller
  ensure_certs
  install_manifests
  write_config
  start_controller
  wait_ready "$PROBE_ADDR" "$3"
}

# component_down stops the controller and deletes $WEBHOOK_CONFIGS: their
# failurePolicy is Fail, so left behind they would reject every request they
# match. CRDs are kept.
component_down() {
  stop_controller
  if [ -n "${KUBECONFIG:-}" ] && [ -x "$BIN/kubectl" ]; then
    if kubectl delete --ignore-not-found --request-timeout=10s "${WEBHOOK_CONFIGS[@]}" >/dev/null 2>&1; then
      log "deleted the webhook configurations"
    else
      log "could not delete the webhook configurations (cluster unreachable?)"
    fi
  fi
}

# config_out_of_cluster prints the part of a kubebuilder-style
# Configuration file (JobSet's, Kueue's) that runs the controller on this
# machine: no leader election, no internal cert management (the
# certificates are the ones ensure_certs made), the webhook server on
# 127.0.0.1:$WEBHOOK_PORT.
config_out_of_cluster() {
  cat <<CONFIG
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
webhook:
  host: 127.0.0.1
  port: $WEBHOOK_PORT
  certDir: $CERTS
CONFIG
}
