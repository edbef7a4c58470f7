#!/usr/bin/env bash
# A real node beside kwok's simulated ones: containerd + runc (Debian's
# packages), a kubelet and kube-proxy built from k8s.io/kubernetes at the
# pinned version, the bridge/host-local/portmap CNI plugins and CoreDNS built
# from their Go modules (test/tools/realnode). Pods on it run in real
# containers from images imported from bin/images (hack/test-images.sh); no
# registry is ever asked.
#
#   hack/realnode.sh net      create the node's network namespace and link;
#                             prints the kwokctl configuration the control
#                             plane needs (run before `kwokctl create cluster`)
#   hack/realnode.sh up       start the node (needs the control plane)
#   hack/realnode.sh down     stop everything it started and undo every change
#   hack/realnode.sh check    exit 0 if it can start now, else print why
#   hack/realnode.sh machine  exit 0 if this machine can run it once its tools
#                             and images are built, else print why
#   hack/realnode.sh host-ip  print the host's end of the node's link, the one
#                             address on this machine that pods may reach
#
# Everything lives in one network namespace, gantry-<id>, that only this run
# uses (<id> comes from the run directory, so two checkouts side by side
# differ): containerd, kubelet, kube-proxy, CoreDNS and every pod's sandbox
# link. A veth pair joins it to this machine:
#
#   host  172.29.<n>.1  (kube-apiserver's advertise address)
#   node  172.29.<n>.2  (the node's InternalIP, the kubelet's 10250)
#   pods  172.30.<n>.0/24 on the bridge cni0 inside the namespace; CoreDNS on
#         172.30.<n>.1:53 is the pods' nameserver
#
# The namespace has no default route, and its FORWARD chain drops whatever a
# pod sends anywhere but the bridge and the host's end of the link, so no
# packet from a pod leaves this machine. iptables, ip_forward and
# bridge-nf-call-iptables change only inside the namespace.
#
# The node is named real-0, labelled gantry.dev/real-node=true and tainted
# gantry.dev/real-node=true:NoSchedule: only pods that ask land on it.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
BIN=${BIN:-$root/bin}
STATE=${GANTRY_RUN_DIR:-$root/.run}
RN=$STATE/realnode
NODE=real-0
IMAGES=${GANTRY_TEST_IMAGES:-$BIN/images}
log() { echo "realnode: $*" >&2; }
die() { log "$*"; exit 1; }

mkdir -p "$RN"
RN=$(cd "$RN" && pwd -P)
# The id: the first 8 hex digits of the run directory's path, so a second
# checkout gets another namespace, link, cgroup and address range.
id=$(printf '%s' "$RN" | sha256sum | cut -c1-8)
NS=gantry-$id
VETH_HOST=gh$id # 10 characters; interface names are at most 15
VETH_NODE=gn$id
CGROOT=/gantry-$id

# machine_why_not prints why this machine cannot run the node, or nothing.
machine_why_not() {
  [ "$(id -u)" = 0 ] || { echo "the real node needs root (network namespace, cgroups, mounts)"; return; }
  local m
  for m in containerd runc ctr ip iptables nsenter openssl debootstrap; do
    command -v "$m" >/dev/null 2>&1 || { echo "$m is not installed (apt-get install containerd runc iproute2 iptables util-linux openssl debootstrap)"; return; }
  done
  [ -d /sys/fs/cgroup/memory ] || [ -f /sys/fs/cgroup/cgroup.controllers ] || { echo "no cgroup filesystem at /sys/fs/cgroup"; return; }
  [ -d /proc/sys/net/bridge ] || modprobe br_netfilter 2>/dev/null || true
  [ -d /proc/sys/net/bridge ] || { echo "the kernel has no br_netfilter (kube-proxy's Services need bridged traffic to pass iptables)"; return; }
}

# why_not prints why the node cannot start now (the machine, or a missing
# tool or image), or nothing.
why_not() {
  local m reason
  reason=$(machine_why_not)
  [ -z "$reason" ] || { echo "$reason"; return; }
  for m in kubelet kube-proxy coredns cni/bridge cni/host-local cni/loopback cni/portmap; do
    [ -x "$BIN/$m" ] || { echo "$BIN/$m is missing (make realnode-tools)"; return; }
  done
  [ -f "$IMAGES/pause.tar" ] || { echo "$IMAGES/pause.tar is missing (make test-images)"; return; }
}

# subnet picks <n> once per run directory: from the id, moving on while
# another run holds 172.29.<n>.0/24.
subnet() {
  if [ -f "$RN/subnet" ]; then cat "$RN/subnet"; return; fi
  local n=$(( 0x${id:0:4} % 200 + 20 )) i
  for i in $(seq 0 200); do
    if ! ip -4 route show | grep -q "^172\.29\.$n\.0/24\|^172\.30\.$n\.0/24"; then
      echo "$n" >"$RN/subnet"; echo "$n"; return
    fi
    n=$(( (n - 20 + 1) % 200 + 20 ))
  done
  die "no free 172.29.x.0/24 on this machine"
}

innode() { nsenter --net=/run/netns/"$NS" -- "$@"; }

net_up() {
  load_net
  if ! ip netns list | grep -qw "$NS"; then
    ip netns add "$NS"
    ip link add "$VETH_HOST" type veth peer name "$VETH_NODE"
    ip link set "$VETH_NODE" netns "$NS"
    ip addr add "$HOST_IP/24" dev "$VETH_HOST"
    ip link set "$VETH_HOST" up
    # Only the pod range goes to the node; nothing else of this machine's
    # routing changes.
    ip route add "$POD_NET.0/24" via "$NODE_IP" dev "$VETH_HOST"
    innode ip link set lo up
    innode ip addr add "$NODE_IP/24" dev "$VETH_NODE"
    innode ip link set "$VETH_NODE" up
    # The bridge exists before the first pod so that CoreDNS can listen on
    # its address; the CNI bridge plugin takes it over as it is.
    innode ip link add cni0 type bridge
    innode ip addr add "$POD_NET.1/24" dev cni0
    innode ip link set cni0 up
    innode sysctl -qw net.ipv4.ip_forward=1
    innode sysctl -qw net.bridge.bridge-nf-call-iptables=1 2>/dev/null || log "bridge-nf-call-iptables is not per network namespace here"
    # Pods reach each other, this node, and the host's end of the link (the
    # API server); every other packet from a pod is dropped.
    innode iptables -N GANTRY-EGRESS
    innode iptables -A GANTRY-EGRESS -o cni0 -j RETURN
    innode iptables -A GANTRY-EGRESS -d "$HOST_IP/32" -j RETURN
    innode iptables -A GANTRY-EGRESS -j DROP
    innode iptables -I FORWARD 1 -i cni0 -j GANTRY-EGRESS
    log "network namespace $NS: host $HOST_IP, node $NODE_IP, pods $POD_NET.0/24"
  fi
}

load_net() {
  local n; n=$(subnet)
  HOST_IP=172.29.$n.1 NODE_IP=172.29.$n.2 POD_NET=172.30.$n
}

# kwokctl_config prints the KwokctlConfiguration that makes the control plane
# fit for a real node: the API server advertises (and its certificate names)
# the host's end of the link and the kubernetes Service's ClusterIP, calls
# kubelets with the admin certificate, and kwok manages only its own nodes.
kwokctl_config() {
  local pki=$1
  cat <<EOF
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokctlConfiguration
options:
  kubeApiserverCertSANs: ["$HOST_IP", "10.0.0.1"]
componentsPatches:
- name: kube-apiserver
  extraArgs:
  - {key: advertise-address, value: "$HOST_IP"}
  - {key: kubelet-client-certificate, value: "$pki/admin.crt"}
  - {key: kubelet-client-key, value: "$pki/admin.key"}
  - {key: kubelet-preferred-address-types, value: "InternalIP"}
  # Webhooks behind a Service are called at their pods' addresses (routed
  # to the node), never at a ClusterIP, which this machine does not route.
  - {key: enable-aggregator-routing, value: "true"}
- name: kwok-controller
  extraArgs:
  - {key: manage-all-nodes, value: "false", override: true}
  - {key: manage-nodes-with-annotation-selector, value: "kwok.x-k8s.io/node=fake"}
EOF
}

# client_cert signs a client certificate for CN/O with the cluster's CA and
# writes a kubeconfig for it.
client_kubeconfig() {
  local name=$1 cn=$2 org=$3 pki=$4 server=$5 dir=$RN/pki
  mkdir -p "$dir"
  openssl req -new -newkey rsa:2048 -nodes -keyout "$dir/$name.key" -subj "/O=$org/CN=$cn" -out "$dir/$name.csr" 2>/dev/null
  openssl x509 -req -in "$dir/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 30 -out "$dir/$name.crt" 2>/dev/null
  cat >"$RN/$name.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "$server", certificate-authority: "$pki/ca.crt"}
users:
- name: $name
  user: {client-certificate: "$dir/$name.crt", client-key: "$dir/$name.key"}
contexts:
- name: $name
  context: {cluster: local, user: $name}
current-context: $name
EOF
}

# start_daemon runs a command inside the node's namespace in the background,
# in its own session, and records its pid.
start_daemon() {
  local name=$1; shift
  nohup nsenter --net=/run/netns/"$NS" -- setsid "$@" >>"$RN/$name.log" 2>&1 </dev/null &
  echo $! >"$RN/$name.pid"
}

wait_for() {
  local what=$1 tries=$2; shift 2
  for _ in $(seq 1 "$tries"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.5; done
  die "$what did not come up; see $RN/*.log"
}

containerd_config() {
  mkdir -p "$RN/containerd/certs.d/_default" "$RN/cni/net.d" "$RN/cni/ipam"
  # Every registry host resolves to a closed port on the node's loopback:
  # an image that was not imported fails at once and says so, and nothing
  # is ever asked of a registry.
  cat >"$RN/containerd/certs.d/_default/hosts.toml" <<'EOF'
server = "http://127.0.0.1:9"
[host."http://127.0.0.1:9"]
  capabilities = ["pull", "resolve"]
EOF
  cat >"$RN/containerd/config.toml" <<EOF
version = 2
root = "$RN/containerd/root"
state = "$RN/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "$RN/containerd/containerd.sock"
[ttrpc]
  address = "$RN/containerd/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$RN/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "gantry.local/pause:3.10"
  # The sandbox has no CAP_SYS_RESOURCE: without this every pod sandbox
  # fails ("can't get final child's PID from pipe").
  restrict_oom_score_adj = true
  disable_apparmor = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "$(command -v runc)"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$BIN/cni"
    conf_dir = "$RN/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$RN/containerd/certs.d"
EOF
  cat >"$RN/cni/net.d/10-gantry.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "gantry",
  "plugins": [
    {
      "type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
      "ipam": {"type": "host-local", "dataDir": "$RN/cni/ipam",
               "ranges": [[{"subnet": "$POD_NET.0/24", "gateway": "$POD_NET.1"}]],
               "routes": [{"dst": "0.0.0.0/0"}]}
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
}

kubelet_config() {
  local pki=$1
  : >"$RN/resolv.conf"
  cat >"$RN/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# This machine has cgroup v1, which kubelet 1.36 refuses unless told.
failCgroupV1: false
cgroupDriver: cgroupfs
# Pods' cgroups go under a root of this run's own, not the machine's kubepods.
cgroupRoot: $CGROOT
containerRuntimeEndpoint: unix://$RN/containerd/containerd.sock
address: $NODE_IP
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "$pki/ca.crt"}
authorization: {mode: Webhook}
clusterDomain: cluster.local
clusterDNS: ["$POD_NET.1"]
resolvConf: "$RN/resolv.conf"
podLogsDir: $RN/pod-logs
failSwapOn: false
# Imported images are never collected: nothing could pull them back. Image
# GC runs at 100% disk use only, and disk-pressure eviction (which collects
# unused images first, whatever the GC thresholds) only with less than
# 256Mi free: on a shared build machine a few percent of the disk can go
# to a build for a minute, and an eviction then took every image not in
# use (seen: pause, testbase and Gantry's), failing every later pod.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {"memory.available": "200Mi", "nodefs.available": "256Mi", "imagefs.available": "256Mi", "nodefs.inodesFree": "1%", "imagefs.inodesFree": "1%"}
registerWithTaints:
- {key: gantry.dev/real-node, value: "true", effect: NoSchedule}
serializeImagePulls: false
maxPods: 60
EOF
}

# import_images imports every tarball in $IMAGES, and Gantry's own image
# from `make image` (bin/image), into containerd's k8s.io namespace (the
# CRI's), so pods find them without a pull.
import_images() {
  local f
  for f in "$IMAGES"/*.tar "$BIN"/image/gantry-*.tar; do
    [ -f "$f" ] || continue
    innode ctr --address "$RN/containerd/containerd.sock" -n k8s.io images import --no-unpack=false "$f" >>"$RN/import.log" 2>&1 \
      || die "importing $f failed; see $RN/import.log"
    log "imported $(basename "$f")"
  done
}

up() {
  local reason; reason=$(why_not)
  [ -z "$reason" ] || die "cannot start the real node: $reason"
  net_up
  : "${KUBECONFIG:?hack/realnode.sh up needs the admin KUBECONFIG}"
  local pki=${GANTRY_KWOK_PKI:?} server
  server=https://$HOST_IP:$("$BIN/kubectl" --kubeconfig "$KUBECONFIG" config view --minify -o jsonpath='{.clusters[0].cluster.server}' | sed 's/.*://')
  if [ -f "$RN/kubelet.pid" ] && kill -0 "$(cat "$RN/kubelet.pid")" 2>/dev/null; then
    log "already running"; return 0
  fi
  snapshot_sysctls

  # Identities: the kubelet as system:node:real-0 (Node authorizer), kube-proxy
  # as system:kube-proxy (the default system:node-proxier binding), CoreDNS
  # with a read-only role of its own.
  client_kubeconfig kubelet "system:node:$NODE" system:nodes "$pki" "$server"
  client_kubeconfig kube-proxy system:kube-proxy system:node-proxier "$pki" "$server"
  client_kubeconfig coredns gantry:realnode:coredns gantry:realnode "$pki" "$server"
  "$BIN/kubectl" --kubeconfig "$KUBECONFIG" apply -f - >/dev/null <<'EOF'
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "gantry:realnode:coredns"}
rules:
- apiGroups: [""]
  resources: [endpoints, services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "gantry:realnode:coredns"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "gantry:realnode:coredns"}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "gantry:realnode:coredns"}
EOF

  # cgroup v1: the kubelet wants its cgroup root in every hierarchy.
  local c
  for c in /sys/fs/cgroup/*/; do
    case $c in */unified/) continue ;; esac
    mkdir -p "$c${CGROOT#/}"
  done

  containerd_config
  start_daemon containerd containerd --config "$RN/containerd/config.toml"
  wait_for containerd 60 innode ctr --address "$RN/containerd/containerd.sock" version
  import_images

  cat >"$RN/Corefile" <<EOF
.:53 {
  bind $POD_NET.1
  ready 127.0.0.1:8181
  health 127.0.0.1:8091
  errors
  cache 30
  kubernetes cluster.local in-addr.arpa ip6.arpa {
    kubeconfig $RN/coredns.kubeconfig coredns
    pods insecure
    fallthrough in-addr.arpa ip6.arpa
  }
}
EOF
  start_daemon coredns "$BIN/coredns" -conf "$RN/Corefile"

  cat >"$RN/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: "$RN/kube-proxy.kubeconfig"}
mode: iptables
clusterCIDR: $POD_NET.0/24
hostnameOverride: $NODE
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
nodePortAddresses: ["$NODE_IP/32"]
# Leave the machine's conntrack limits alone.
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOF
  start_daemon kube-proxy "$BIN/kube-proxy" --config "$RN/kube-proxy.yaml"

  kubelet_config "$pki"
  start_daemon kubelet "$BIN/kubelet" --config "$RN/kubelet.yaml" --kubeconfig "$RN/kubelet.kubeconfig" \
    --root-dir "$RN/kubelet" --cert-dir "$RN/kubelet/pki" --hostname-override "$NODE" --node-ip "$NODE_IP" \
    --node-labels gantry.dev/real-node=true
  for _ in $(seq 1 240); do
    if [ "$("$BIN/kubectl" --kubeconfig "$KUBECONFIG" get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]; then
      log "node $NODE is Ready (logs: $RN/{containerd,kubelet,kube-proxy,coredns}.log)"
      return 0
    fi
    kill -0 "$(cat "$RN/kubelet.pid")" 2>/dev/null || { tail -n 30 "$RN/kubelet.log" >&2; die "the kubelet exited"; }
    sleep 0.5
  done
  tail -n 30 "$RN/kubelet.log" >&2
  die "node $NODE did not become Ready within 2 minutes"
}

# The kubelet sets a few kernel tunables for the whole machine
# (vm.overcommit_memory, kernel.panic, ...); down puts back what was there.
SYSCTLS="vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes"
snapshot_sysctls() {
  [ -f "$RN/sysctls" ] && return 0
  local k
  for k in $SYSCTLS; do echo "$k=$(sysctl -n "$k" 2>/dev/null)"; done >"$RN/sysctls"
}

kill_pidfile() {
  local f=$1 pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$f"
}

# cgroup_pids lists every process in the run's cgroup tree (pods'
# containers and sandboxes).
cgroup_pids() {
  local c
  for c in /sys/fs/cgroup/*/"${CGROOT#/}"; do
    [ -d "$c" ] && find "$c" -name cgroup.procs -exec cat {} + 2>/dev/null
  done | sort -u
}

down() {
  kill_pidfile "$RN/kubelet.pid"
  kill_pidfile "$RN/kube-proxy.pid"
  kill_pidfile "$RN/coredns.pid"
  # Containers and their shims: everything in the run's cgroups and in its
  # network namespace (containerd, shims), killed until none are left.
  local pids i
  for i in $(seq 1 20); do
    pids=$( { cgroup_pids; ip netns pids "$NS" 2>/dev/null || true; } | sort -u)
    [ -n "$pids" ] || break
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    sleep 0.25
  done
  rm -f "$RN/containerd.pid"
  # Mounts under the run directory (overlay rootfs, pod volumes, sandbox
  # network namespaces), deepest first.
  awk -v d="$RN/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r | while read -r m; do
    umount -l "$m" 2>/dev/null || true
  done
  local c
  for c in /sys/fs/cgroup/*/"${CGROOT#/}"; do
    [ -d "$c" ] && find "$c" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
  if ip netns list 2>/dev/null | grep -qw "$NS"; then
    ip netns del "$NS"
    log "network namespace $NS removed"
  fi
  ip link del "$VETH_HOST" 2>/dev/null || true
  if [ -f "$RN/sysctls" ]; then
    local kv
    while IFS= read -r kv; do
      [ -n "${kv#*=}" ] && sysctl -qw "$kv" 2>/dev/null || true
    done <"$RN/sysctls"
  fi
  rm -rf "$RN"
}

case "${1:-}" in
  net) reason=$(why_not); [ -z "$reason" ] || die "cannot start the real node: $reason"
       net_up; kwokctl_config "${2:?net needs the kwok pki directory}" ;;
  up) load_net; up ;;
  down) down ;;
  check) reason=$(why_not); [ -z "$reason" ] || { echo "$reason"; exit 1; } ;;
  machine) reason=$(machine_why_not); [ -z "$reason" ] || { echo "$reason"; exit 1; } ;;
  host-ip) load_net; echo "$HOST_IP" ;;
  *) echo "usage: $0 net PKI_DIR | up | down | check | machine | host-ip" >&2; exit 2 ;;
esac
