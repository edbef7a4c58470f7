#!/usr/bin/env bash
# Renders the chart with default and non-default values (and lints it with
# the same values) and checks what a cluster admin relies on: CRDs and their
# keep policy, RBAC scoped as documented and free of wildcards, the webhooks
# of the enabled controllers only, both certificate modes, the manager's
# flags and hardened security context, and the values that must be refused.
# Usage: hack/check-chart.sh [path/to/helm]
set -euo pipefail
cd "$(dirname "$0")/.."
helm=${1:-helm}
chart=${CHART:-charts/gantry}
ns=gantry-system
kube=(--kube-version 1.36.3)
fail() { echo "chart check failed: [$case] $*" >&2; exit 1; }
case=setup
checks=0

# render NAME ARGS...: helm template (hooks included) into $out, and helm lint
# with the same values; either failing fails the check. ARGS after "--" go
# to helm template only (flags helm lint does not have).
render() {
  case=$1; shift
  local values=() extra=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do values+=("$1"); shift; done
  [ $# -gt 0 ] && shift && extra=("$@")
  out=$("$helm" template gantry "$chart" "${kube[@]}" --namespace "$ns" ${values[@]+"${values[@]}"} ${extra[@]+"${extra[@]}"} 2>&1) || fail "helm template failed: $out"
  # CRD schemas are most of the output and nothing here reads them: keep
  # each CRD's header (through metadata) only.
  out=$(awk '/^---/ { crd = body = 0 } /^kind: CustomResourceDefinition$/ { crd = 1 } crd && /^spec:/ { body = 1 } !body' <<<"$out")
  no_wildcards
  local lint
  lint=$("$helm" lint "$chart" "${kube[@]}" --namespace "$ns" --quiet ${values[@]+"${values[@]}"} 2>&1) || fail "helm lint failed: $lint"
}
# refuse NAME MESSAGE ARGS...: helm template must fail, saying MESSAGE.
refuse() {
  case=$1; local want=$2; shift 2
  local msg
  if msg=$("$helm" template gantry "$chart" "${kube[@]}" --namespace "$ns" "$@" 2>&1); then
    fail "rendered, but must fail with '$want'"
  fi
  grep -qF -- "$want" <<<"$msg" || fail "failed without '$want': $msg"
  checks=$((checks + 1))
}
has() { grep -qF -- "$1" <<<"${2-$out}" || fail "lacks '$1'"; checks=$((checks + 1)); }
lacks() { ! grep -qF -- "$1" <<<"${2-$out}" || fail "has '$1'"; checks=$((checks + 1)); }
# item WORD [TEXT]: TEXT has the YAML list item "- WORD" (a whole line).
item() { awk -v w="- $1" '{ l = $0; sub(/^ +/, "", l) } l == w { f = 1 } END { exit !f }' <<<"${2-$out}"; }
hasitem() { item "$@" || fail "lacks the list item '- $1'"; checks=$((checks + 1)); }
lacksitem() { ! item "$@" || fail "has the list item '- $1'"; checks=$((checks + 1)); }
eq() { [ "$1" = "$2" ] || fail "$3: got '$1', want '$2'"; checks=$((checks + 1)); }

# docs KIND [NAME [NAMESPACE]]: the rendered documents of that kind (and
# metadata.name / metadata.namespace), each ended by "---".
docs() {
  awk -v k="$1" -v n="${2:-}" -v ns="${3:-}" '
    function flush(   i) {
      if (nl && kok && (n == "" || nok) && (ns == "" || nsok)) { for (i = 1; i <= nl; i++) print line[i]; print "---" }
      nl = kok = nok = nsok = meta = 0
    }
    /^---/ { flush(); next }
    { line[++nl] = $0 }
    $0 == "kind: " k { kok = 1 }
    /^metadata:/ { meta = 1; next }
    /^[^ #]/ { meta = 0 }
    meta && $0 == "  name: " n { nok = 1 }
    meta && $0 == "  namespace: " ns { nsok = 1 }
    END { flush() }' <<<"$out"
}
count() { docs "$@" | grep -c '^---$' || true; }
# rules_of KIND NAME [NAMESPACE]: the "rules:" block of that rendered document.
rules_of() { docs "$@" | awk '/^---$/ { r = 0 } /^rules:/ { r = 1 } r'; }
# webhook NAME: the rendered webhook entry with that name, from either configuration.
webhook() {
  { docs ValidatingWebhookConfiguration; docs MutatingWebhookConfiguration; } | awk -v n="$1" '
    function flush() { if (buf != "" && hit) printf "%s", buf; buf = ""; hit = 0 }
    /^webhooks:/ { in_hooks = 1; next }
    /^---/ || /^[a-z]/ { flush(); in_hooks = 0; next }
    in_hooks && /^- / { flush() }
    in_hooks { buf = buf $0 "\n"; if ($0 == "  name: " n) hit = 1 }
    END { flush() }'
}
no_wildcards() {
  ! grep -nE "^ *- ['\"]?\*['\"]?$" <<<"$out" || fail "a rendered list holds a wildcard"
}

# The webhooks `make manifests` generated (config/webhook/manifests.yaml):
# name and the workload its API group belongs to.
manifests=config/webhook/manifests.yaml
hooks="" # lines of "<webhook name> <workload>"
if [ -f "$manifests" ]; then
  for name in $(awk '/^webhooks:/ { h = 1; next } /^[^ -]/ { h = 0 } h && /^  name: / { print $2 }' "$manifests"); do
    case "${name#*.}" in
      ray.io) hooks+="$name raycluster"$'\n' ;;
      trainer.kubeflow.org) hooks+="$name trainjob"$'\n' ;;
      slinky.slurm.net) hooks+="$name slurm"$'\n' ;;
      *) case=setup; fail "$manifests: webhook $name of no known workload" ;;
    esac
  done
  [ -n "$hooks" ] || { case=setup; fail "$manifests lists no webhooks"; }
else
  echo "chart check: $manifests not generated yet; per-webhook checks skipped" >&2
fi
hook_names() { awk '{ print $1 }' <<<"$hooks"; }
nhooks=$(hook_names | grep -c . || true)
# expect_webhooks WORKLOAD...: exactly the generated webhooks of these
# workloads are rendered.
expect_webhooks() {
  local name workload want w
  while read -r name workload; do
    [ -n "$name" ] || continue
    want=false
    for w in "$@"; do [ "$workload" = "$w" ] && want=true; done
    if $want; then has "  name: $name"; else lacks "  name: $name"; fi
  done <<<"$hooks"
}

# --- defaults: cluster-wide, all controllers, self-managed certificates -------
render default
# The release Secret Helm writes holds the chart and this manifest; past
# 1 MiB `helm install` fails (hack/chartsize). 960 KiB keeps 64 KiB for
# what the estimate leaves out (the user's values and the release's
# metadata, a few KiB in practice). Most of the size is the CRDs: the
# manifest holds them rendered in full, the chart each schema part they
# repeat once (templates/_crd_schemas.tpl, hack/crddesc -chart-json).
full=$(mktemp)
"$helm" template gantry "$chart" "${kube[@]}" --namespace "$ns" --set jobset.install=true >"$full" || fail "helm template failed"
sizeout=$(go run ./hack/chartsize -limit $((960 * 1024)) "$chart" "$full" 2>&1) || { rm -f "$full"; fail "$sizeout"; }
echo "$sizeout"
checks=$((checks + 1))
# Every CRD renders exactly as generated into config/crd/bases.
crdout=$(go run ./hack/crddesc -check-rendered "$full" config/crd/bases/*.yaml 2>&1) || { rm -f "$full"; fail "$crdout"; }
rm -f "$full"
checks=$((checks + 1))
ncrd=0
for f in config/crd/bases/*.yaml; do
  [ -e "$f" ] || continue
  ncrd=$((ncrd + 1))
  name=$(awk '/^metadata:/ { m = 1 } m && /^  name: / { print $2; exit }' "$f")
  eq "$(count CustomResourceDefinition "$name")" 1 "CRD $name rendered"
done
eq "$(count CustomResourceDefinition)" "$ncrd" "CRDs rendered (config/crd/bases has $ncrd; run make manifests)"
eq "$(docs CustomResourceDefinition | grep -c 'helm.sh/resource-policy: keep')" "$ncrd" "CRDs with the keep policy"
[ -z "$(ls "$chart"/crds 2>/dev/null)" ] || fail "charts/gantry/crds/ is not empty: CRDs belong in templates/crds (helm upgrade skips crds/)"
for kind in ServiceAccount Deployment Secret ValidatingWebhookConfiguration MutatingWebhookConfiguration; do
  eq "$(count "$kind")" 1 "number of ${kind}s"
done
# The manager's RBAC, plus (trainjob controller) the user roles and the
# public ConfigMap's Role: see "Kubeflow SDK" below.
eq "$(count ClusterRole)" 7 "number of ClusterRoles (manager, trainer-{view,edit,admin}, trainer-view-cluster-runtimes, metrics-{auth,reader})"
eq "$(count ClusterRoleBinding)" 3 "number of ClusterRoleBindings (manager, trainer-view-cluster-runtimes, metrics-auth)"
eq "$(count Role)" 2 "number of Roles (manager-release-namespace, kubeflow-trainer-public)"
eq "$(count RoleBinding)" 2 "number of RoleBindings (manager-release-namespace, kubeflow-trainer-public)"
eq "$(count Service)" 2 "Services (metrics, webhook)"
# Helm cannot create objects of a CRD it creates in the same step: the
# shipped runtimes go into a ConfigMap the manager applies, on the first
# install too, and never as objects of the release.
eq "$(count ClusterTrainingRuntime)" 0 "ClusterTrainingRuntimes as release objects"
nrt=$(find config/runtimes -name '*.yaml' ! -name kustomization.yaml | wc -l | tr -d ' ')
runtimes_cm() { docs ConfigMap gantry-training-runtimes "$ns"; }
runtime_keys() { runtimes_cm | grep -c '^  [a-z0-9_]*\.yaml: |$' || true; }
eq "$(runtime_keys)" "$nrt" "runtimes in the ConfigMap (config/runtimes has $nrt)"
hasitem "--trainjob-runtimes-configmap=$ns/gantry-training-runtimes" "$(docs Deployment)"
has 'gantry.dev/training-runtimes-checksum:' "$(docs Deployment)"
hasitem gantry-training-runtimes "$(rules_of Role gantry-manager-release-namespace "$ns")"
dep=$(docs Deployment gantry $ns)
for want in '--controllers=all' '--leader-elect=true' "--leader-election-namespace=$ns" \
  '--leader-elect-lease-duration=12s' '--leader-elect-renew-deadline=10s' '--leader-elect-retry-period=2s' \
  '--zap-log-level=info' '--zap-encoder=json' '--webhook-port=9443' '--cert-management=self' '--webhook-cert-write' \
  '--webhook-cert-dir=/tmp/k8s-webhook-server/serving-certs' '--webhook-secret-name=gantry-webhook-cert' \
  "--webhook-secret-namespace=$ns" '--webhook-service-name=gantry-webhook' \
  '--validating-webhook-configuration=gantry-validating-webhook-configuration' \
  '--mutating-webhook-configuration=gantry-mutating-webhook-configuration' \
  'name: webhook' 'containerPort: 9443' 'emptyDir:' 'mountPath: /tmp/k8s-webhook-server/serving-certs' \
  'readOnlyRootFilesystem: true' 'runAsNonRoot: true' 'runAsUser: 65532' 'allowPrivilegeEscalation: false' \
  'type: RuntimeDefault' 'path: /readyz' 'path: /healthz' 'name: GOMEMLIMIT' 'value: "483183820"'; do
  has "$want" "$dep"
done
lacks '--namespaces=' "$dep"
svc=$(docs Service gantry-webhook $ns)
has 'port: 443' "$svc"; has 'targetPort: webhook' "$svc"
eq "$(docs Secret gantry-webhook-cert $ns | grep -c '^data:')" 0 "data keys in the self-managed Secret (the manager fills it)"
cr=$(docs ClusterRole gantry-manager)
for want in nodes pods rayclusters clustertrainingruntimes validatingwebhookconfigurations \
  gantry-validating-webhook-configuration gantry-mutating-webhook-configuration; do
  hasitem "$want" "$cr"
done
own=$(docs Role gantry-manager-release-namespace $ns)
for want in leases events secrets gantry-webhook-cert; do hasitem "$want" "$own"; done
has "name: gantry-manager-release-namespace" "$(docs RoleBinding gantry-manager-release-namespace $ns)"
for kind in PodDisruptionBudget ServiceMonitor Issuer Certificate; do eq "$(count $kind)" 0 "number of ${kind}s"; done
lacks 'jobset-controller'
lacks 'namespaceSelector:'
expect_webhooks raycluster trainjob slurm
for name in $(hook_names); do
  hook=$(webhook "$name")
  has "name: gantry-webhook" "$hook"; has "namespace: $ns" "$hook"; has 'port: 443' "$hook"
  case $name in
    # Ray updates fail open (pkg/webhook/doc.go): webhook.updateFailurePolicy.
    *-update.ray.io) has 'failurePolicy: Ignore' "$hook"; has '- UPDATE' "$hook"; lacks '- CREATE' "$hook" ;;
    *) has 'failurePolicy: Fail' "$hook" ;;
  esac
  has 'timeoutSeconds: 10' "$hook"
done

served=(-- --api-versions trainer.kubeflow.org/v1alpha1/ClusterTrainingRuntime)
render crd-already-served "${served[@]}"
eq "$(count ClusterTrainingRuntime)" 0 "ClusterTrainingRuntimes as release objects once their CRD is served"
eq "$(runtime_keys)" "$nrt" "runtimes in the ConfigMap once their CRD is served"
rt=$(runtimes_cm | awk '/^  torch_distributed.yaml: [|]$/ { on = 1; next } /^  [^ ]/ { on = 0 } on')
has 'name: torch-distributed' "$rt"
has 'app.kubernetes.io/instance: gantry' "$rt"; has 'trainer.kubeflow.org/framework: torch' "$rt"
# The shipped runtimes opt out of the runtime webhooks with Trainer v2.3's
# label, trainer.kubeflow.org/webhook-validation: disabled (helm upgrade
# must not depend on the manager serving them). As in Trainer's chart, both
# runtime webhooks skip any runtime labelled so, and no other webhook has
# an objectSelector.
eq "$(runtimes_cm | grep -c 'trainer.kubeflow.org/webhook-validation: disabled')" "$nrt" "shipped runtimes with the webhook opt-out label"
lacks 'gantry.dev/shipped-runtime'
runtime_hooks=0
for name in $(hook_names); do
  hook=$(webhook "$name")
  if item clustertrainingruntimes "$hook" || item trainingruntimes "$hook"; then
    runtime_hooks=$((runtime_hooks + 1))
    has 'objectSelector:' "$hook"; has 'key: trainer.kubeflow.org/webhook-validation' "$hook"
    has 'operator: NotIn' "$hook"; hasitem disabled "$hook"
  else
    lacks 'objectSelector:' "$hook"
  fi
done
eq "$runtime_hooks" 2 "webhooks of TrainingRuntimes and ClusterTrainingRuntimes"
render trainer-crds-elsewhere --set crds.trainer=false
eq "$(runtime_keys)" "$nrt" "runtimes in the ConfigMap when the trainer CRDs come from elsewhere"

# --- namespaced mode ------------------------------------------------------------
render namespaced --set 'watchNamespaces={team-a,team-b}'
has '--namespaces=team-a,team-b' "$(docs Deployment)"
for team in team-a team-b; do
  role=$(docs Role gantry-manager $team)
  for want in pods secrets rayclusters trainjobs trainingruntimes nodesets events; do hasitem "$want" "$role"; done
  for unwanted in nodes clustertrainingruntimes validatingwebhookconfigurations; do lacksitem "$unwanted" "$role"; done
  binding=$(docs RoleBinding gantry-manager $team)
  has 'kind: Role' "$binding"; has 'name: gantry' "$binding"; has "namespace: $ns" "$binding"
done
eq "$(count Role)" 4 "Roles (two watched namespaces, the release namespace, kubeflow-trainer-public)"
cr=$(docs ClusterRole gantry-manager)
for want in nodes clustertrainingruntimes validatingwebhookconfigurations; do hasitem "$want" "$cr"; done
for unwanted in pods secrets rayclusters trainjobs trainingruntimes nodesets leases events; do lacksitem "$unwanted" "$cr"; done
own=$(docs Role gantry-manager-release-namespace $ns)
for want in leases gantry-webhook-cert; do hasitem "$want" "$own"; done
for name in $(hook_names); do
  hook=$(webhook "$name")
  if item clustertrainingruntimes "$hook"; then
    lacks 'namespaceSelector:' "$hook"
  else
    has 'namespaceSelector:' "$hook"; has 'matchExpressions:' "$hook"; has 'key: kubernetes.io/metadata.name' "$hook"
    has 'operator: In' "$hook"; hasitem team-a "$hook"; hasitem team-b "$hook"
  fi
done

# --- cert-manager ------------------------------------------------------------------
render cert-manager --set certManager.enabled=true
has 'selfSigned: {}' "$(docs Issuer gantry-selfsigned $ns)"
cert=$(docs Certificate gantry-webhook-cert $ns)
for want in 'secretName: gantry-webhook-cert' 'kind: Issuer' 'name: gantry-selfsigned'; do has "$want" "$cert"; done
hasitem "gantry-webhook.$ns.svc" "$cert"
eq "$(count Secret)" 0 "Secrets (cert-manager writes the Secret)"
for kind in ValidatingWebhookConfiguration MutatingWebhookConfiguration; do
  has "cert-manager.io/inject-ca-from: $ns/gantry-webhook-cert" "$(docs $kind)"
done
dep=$(docs Deployment)
for want in '--cert-management=external' 'secretName: gantry-webhook-cert' 'readOnly: true'; do has "$want" "$dep"; done
lacks 'emptyDir:' "$dep"
lacks '--webhook-cert-write' "$dep"
lacksitem gantry-validating-webhook-configuration "$(docs ClusterRole)"
lacksitem secrets "$(docs Role gantry-manager-release-namespace $ns)"
render cert-manager-issuer --set certManager.enabled=true --set certManager.issuerRef.kind=ClusterIssuer --set certManager.issuerRef.name=corp-ca
eq "$(count Issuer)" 0 "Issuers (an existing issuer is referenced)"
has 'kind: ClusterIssuer' "$(docs Certificate)"; has 'name: corp-ca' "$(docs Certificate)"

# --- webhook.url (manager outside the cluster) ----------------------------------
render webhook-url --set webhook.url=https://localhost:9443 --set 'webhook.extraDNSNames={localhost}'
eq "$(count Service gantry-webhook)" 0 "webhook Services"
lacks 'service:' "$(docs ValidatingWebhookConfiguration; docs MutatingWebhookConfiguration)"
has '--webhook-dns-names=localhost' "$(docs Deployment)"
for name in $(hook_names); do
  has 'url: "https://localhost:9443/' "$(webhook "$name")"
done

# --- webhooks off ---------------------------------------------------------------------
render webhook-off --set webhook.enabled=false
for kind in ValidatingWebhookConfiguration MutatingWebhookConfiguration Secret; do eq "$(count $kind)" 0 "number of ${kind}s"; done
has '--webhook-port=0' "$(docs Deployment)"
lacks 'name: webhook' "$(docs Deployment)"
lacks '--cert-management' "$(docs Deployment)"

# --- JobSet ----------------------------------------------------------------------------
render jobset --set jobset.install=true -- --include-crds
dep=$(docs Deployment jobset-controller $ns)
has 'image: "registry.k8s.io/jobset/jobset:v0.12.0"' "$dep"
eq "$(count CustomResourceDefinition jobsets.jobset.x-k8s.io)" 1 "JobSet CRD"
eq "$(count Deployment)" 2 "Deployments (Gantry, JobSet)"

# --- ServiceAccount ------------------------------------------------------------------
refuse serviceaccount-without-name 'serviceAccount.create=false needs serviceAccount.name' --set serviceAccount.create=false
render serviceaccount-existing --set serviceAccount.create=false --set serviceAccount.name=ops-sa
eq "$(count ServiceAccount)" 0 "ServiceAccounts"
has 'serviceAccountName: ops-sa' "$(docs Deployment)"
has 'name: ops-sa' "$(docs ClusterRoleBinding)"

# --- schema ---------------------------------------------------------------------------
refuse schema-type "values don't meet the specifications of the schema" --set-string replicas=two
refuse schema-controller "values don't meet the specifications of the schema" --set 'controllers={raycluster,rayjob}'
refuse schema-unknown-key "values don't meet the specifications of the schema" --set replica=2
refuse schema-log-format "values don't meet the specifications of the schema" --set logging.format=xml
refuse schema-crd-toggle "values don't meet the specifications of the schema" --set crds.ray=sometimes
refuse schema-failure-policy "values don't meet the specifications of the schema" --set webhook.failurePolicy=Retry
refuse schema-update-failure-policy "values don't meet the specifications of the schema" --set webhook.updateFailurePolicy=Retry

# --- webhook policies: each value sets its own webhooks only ----------------------
render update-fail-closed --set webhook.updateFailurePolicy=Fail --set webhook.failurePolicy=Ignore
for name in $(hook_names); do
  case $name in
    *-update.ray.io) has 'failurePolicy: Fail' "$(webhook "$name")" ;;
    *) has 'failurePolicy: Ignore' "$(webhook "$name")" ;;
  esac
done
refuse servicemonitor-without-service 'metrics.serviceMonitor.enabled=true needs metrics.service.enabled=true' \
  --set metrics.serviceMonitor.enabled=true --set metrics.service.enabled=false

# --- names ---------------------------------------------------------------------------
render name-override --set nameOverride=fleet
has 'app.kubernetes.io/name: fleet'
eq "$(count Deployment gantry-fleet)" 1 "Deployment gantry-fleet"
render fullname-override --set fullnameOverride=ops-gantry
eq "$(count Deployment ops-gantry)" 1 "Deployment ops-gantry"
eq "$(count ClusterRole ops-gantry-manager)" 1 "ClusterRole ops-gantry-manager"
eq "$(count ValidatingWebhookConfiguration ops-gantry-validating-webhook-configuration)" 1 "validating configuration"
eq "$(count MutatingWebhookConfiguration ops-gantry-mutating-webhook-configuration)" 1 "mutating configuration"
eq "$(count Service ops-gantry-webhook)" 1 "webhook Service"
for want in '--webhook-service-name=ops-gantry-webhook' '--webhook-secret-name=ops-gantry-webhook-cert' \
  '--validating-webhook-configuration=ops-gantry-validating-webhook-configuration'; do has "$want" "$(docs Deployment)"; done
lacks 'name: gantry-'

# --- CRD toggles and controller subsets --------------------------------------------
render crds-off --set crds.install=false
eq "$(count CustomResourceDefinition)" 0 "CRDs"
render crds-ray-off --set crds.ray=false
eq "$(count CustomResourceDefinition rayclusters.ray.io)" 0 "ray CRDs"
eq "$(count CustomResourceDefinition rayjobs.ray.io)" 0 "RayJob CRD"
eq "$(count CustomResourceDefinition trainjobs.trainer.kubeflow.org)" 1 "trainer CRDs"
render ray-only --set 'controllers={raycluster}'
has '--controllers=raycluster' "$(docs Deployment)"
eq "$(count CustomResourceDefinition rayclusters.ray.io)" 1 "ray CRD"
eq "$(count CustomResourceDefinition rayjobs.ray.io)" 1 "RayJob CRD"
eq "$(count CustomResourceDefinition)" 3 "CRDs (ray only: RayCluster, RayJob, RayService)"
eq "$(count ClusterTrainingRuntime)" 0 "ClusterTrainingRuntimes without trainjob"
render ray-only-served --set 'controllers={raycluster}' "${served[@]}"
eq "$(count ClusterTrainingRuntime)" 0 "ClusterTrainingRuntimes without trainjob (CRD served)"
expect_webhooks raycluster
render ray-only-trainer-crds --set 'controllers={raycluster}' --set crds.trainer=true
eq "$(count CustomResourceDefinition trainjobs.trainer.kubeflow.org)" 1 "trainer CRDs with crds.trainer=true"
eq "$(count CustomResourceDefinition controllers.slinky.slurm.net)" 0 "slinky CRDs"
render trainjob-slurm --set 'controllers={trainjob,slurm}'
eq "$(count CustomResourceDefinition rayclusters.ray.io)" 0 "ray CRD"
eq "$(count CustomResourceDefinition nodesets.slinky.slurm.net)" 1 "slinky CRD"
expect_webhooks trainjob slurm

# --- replicas, logging, env, security, runtimes, monitoring -----------------------
render replicas --set replicas=2
pdb=$(docs PodDisruptionBudget gantry $ns)
has 'minAvailable: 1' "$pdb"; has 'app.kubernetes.io/component: manager' "$pdb"
render logging --set logging.level=debug --set logging.format=console --set leaderElection.leaseDuration=60s
for want in '--zap-log-level=debug' '--zap-encoder=console' '--leader-elect-lease-duration=60s'; do has "$want" "$(docs Deployment)"; done
render logging-int --set logging.level=4
has '--zap-log-level=4' "$(docs Deployment)"
render env-openshift --set 'env[0].name=HTTPS_PROXY' --set 'env[0].value=http://proxy:3128' \
  --set securityContext.runAsUser=null --set resources.limits.memory=1Gi
dep=$(docs Deployment)
has 'name: HTTPS_PROXY' "$dep"; has 'value: http://proxy:3128' "$dep"; has 'value: "966367641"' "$dep"
lacks 'runAsUser:' "$dep"; has 'runAsNonRoot: true' "$dep"
render env-gomemlimit --set 'env[0].name=GOMEMLIMIT' --set 'env[0].value=100MiB'
eq "$(grep -c 'name: GOMEMLIMIT' <<<"$(docs Deployment)")" 1 "GOMEMLIMIT entries"
has 'value: 100MiB' "$(docs Deployment)"
render no-memory-limit --set resources.limits=null
lacks 'GOMEMLIMIT' "$(docs Deployment)"
# --- RayCluster: KubeRay's Configuration file (sidecars, default env vars) --------------
render default
eq "$(count ConfigMap gantry-raycluster-config $ns)" 0 "RayCluster config ConfigMaps without sidecars or env vars"
lacks 'GANTRY_RAYCLUSTER_CONFIG' "$(docs Deployment)"
render raycluster-config --set-json 'raycluster.workerSidecarContainers=[{"name":"fluentbit","image":"fluent/fluent-bit:3.2"}]' \
  --set-json 'raycluster.defaultContainerEnvs=[{"name":"RAY_LOG_TO_STDERR","value":"1"}]'
cm=$(docs ConfigMap gantry-raycluster-config $ns)
has 'apiVersion: config.ray.io/v1alpha1' "$cm"; has 'kind: Configuration' "$cm"; has 'workerSidecarContainers:' "$cm"
has 'name: RAY_LOG_TO_STDERR' "$cm"; lacks 'headSidecarContainers' "$cm"
dep=$(docs Deployment)
has 'name: GANTRY_RAYCLUSTER_CONFIG' "$dep"; has 'value: /etc/gantry/raycluster/config.yaml' "$dep"
has 'mountPath: /etc/gantry/raycluster' "$dep"; has 'name: gantry-raycluster-config' "$dep"
has 'gantry.dev/raycluster-config-checksum:' "$dep"; has 'name: webhook-cert' "$dep"
refuse raycluster-sidecar-without-image "image" --set-json 'raycluster.headSidecarContainers=[{"name":"x"}]'
# --- TrainJob progress endpoint (feature gate TrainJobStatus) ----------------------------
render default
lacks 'trainjob-status' "$(docs Service)"
render trainjob-status --set featureGates.TrainJobStatus=true
has 'name: trainjob-status' "$(docs Service)"; has 'port: 10443' "$(docs Service)"
has 'containerPort: 10443' "$(docs Deployment)"; hasitem --feature-gates=TrainJobStatus=true "$(docs Deployment)"
# --- RayCluster: the batch scheduler (KubeRay's --batch-scheduler) ---------------------
render default
lacks 'batch-scheduler' "$(docs Deployment)"
render batch-scheduler --set raycluster.batchScheduler=volcano
hasitem --batch-scheduler=volcano "$(docs Deployment)"
refuse batch-scheduler-unknown "batchScheduler" --set raycluster.batchScheduler=kueue
# --- RayCluster: dashboards through the API server (KubeRay's useKubernetesProxy) ----------
render default
lacks 'use-kubernetes-proxy' "$(docs Deployment)"
render kubernetes-proxy --set raycluster.useKubernetesProxy=true
hasitem --use-kubernetes-proxy "$(docs Deployment)"
refuse kubernetes-proxy-string "useKubernetesProxy" --set-string raycluster.useKubernetesProxy=yes
render runtimes-prefix --set trainingRuntimes.namePrefix=gantry-
has '      name: gantry-torch-distributed' "$(runtimes_cm)"
lacks '      name: torch-distributed' "$(runtimes_cm)"
render runtimes-off --set trainingRuntimes.install=false
eq "$(count ConfigMap gantry-training-runtimes "$ns")" 0 "the runtimes ConfigMap"
lacks 'trainjob-runtimes-configmap' "$(docs Deployment)"
lacks 'gantry-training-runtimes' "$(rules_of Role gantry-manager-release-namespace "$ns")"
# Runtimes turned off by name, images from a mirror, one image replaced.
render runtimes-tuned --set 'trainingRuntimes.disabled={mpi-distributed,jax-distributed}' \
  --set trainingRuntimes.imageRegistry=mirror.example:5000/ml \
  --set-json 'trainingRuntimes.imageOverrides={"ghcr.io/kubeflow/trainer/xgboost-runtime:v2.3.0":"reg.example/xgb:custom"}'
eq "$(runtime_keys)" "$((nrt - 2))" "runtimes in the ConfigMap with two disabled"
lacks 'mpi_distributed.yaml:' "$(runtimes_cm)"; lacks 'jax_distributed.yaml:' "$(runtimes_cm)"
has 'image: mirror.example:5000/ml/kubeflow/trainer/deepspeed-runtime:v2.3.0' "$(runtimes_cm)"
has 'image: mirror.example:5000/ml/pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime' "$(runtimes_cm)"
has 'image: reg.example/xgb:custom' "$(runtimes_cm)"
lacks 'ghcr.io' "$(runtimes_cm)"
refuse runtimes-disabled-unknown "values don't meet the specifications of the schema" --set 'trainingRuntimes.disabled={torch}'
render runtimes-without-trainjob --set 'controllers={raycluster}'
eq "$(count ConfigMap gantry-training-runtimes "$ns")" 0 "the runtimes ConfigMap without the trainjob controller"
render servicemonitor --set metrics.serviceMonitor.enabled=true --set metrics.serviceMonitor.labels.release=prom \
  --set metrics.serviceMonitor.interval=15s
sm=$(docs ServiceMonitor gantry $ns)
has 'release: prom' "$sm"; has 'interval: 15s' "$sm"; has 'port: metrics' "$sm"; has 'app.kubernetes.io/component: metrics' "$sm"
has 'app.kubernetes.io/component: metrics' "$(docs Service gantry-metrics $ns)"
# Secure metrics (the default): the flag, the scrape over HTTPS with
# Prometheus' token, the manager's review rights and the reader role.
has 'scheme: https' "$sm"; has 'bearerTokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token' "$sm"
has 'insecureSkipVerify: true' "$sm"; has 'honorLabels: true' "$sm"
has '- --metrics-secure' "$(docs Deployment gantry $ns)"
auth=$(docs ClusterRole gantry-metrics-auth)
has 'tokenreviews' "$auth"; has 'subjectaccessreviews' "$auth"
has 'name: gantry-metrics-auth' "$(docs ClusterRoleBinding gantry-metrics-auth)"
has 'nonResourceURLs: [/metrics]' "$(docs ClusterRole gantry-metrics-reader)"
render servicemonitor-plain --set metrics.serviceMonitor.enabled=true --set metrics.secure=false \
  --set metrics.serviceMonitor.namespace=monitoring --set metrics.serviceMonitor.honorLabels=false
sm=$(docs ServiceMonitor gantry monitoring)
lacks 'scheme: https' "$sm"; lacks 'bearerTokenFile' "$sm"; has 'honorLabels: false' "$sm"
lacks '--metrics-secure' "$(docs Deployment gantry $ns)"
eq "$(count ClusterRole gantry-metrics-auth)" 0 "ClusterRole gantry-metrics-auth with metrics.secure=false"
eq "$(count ClusterRole gantry-metrics-reader)" 0 "ClusterRole gantry-metrics-reader with metrics.secure=false"
refuse podmonitor-secure-without-token 'metrics.secure=true needs metrics.podMonitor.authorization' --set metrics.podMonitor.enabled=true
refuse podmonitor-and-servicemonitor 'metrics.podMonitor.enabled and metrics.serviceMonitor.enabled both scrape the manager' \
  --set metrics.podMonitor.enabled=true --set metrics.serviceMonitor.enabled=true --set metrics.secure=false
render podmonitor --set metrics.podMonitor.enabled=true \
  --set-json 'metrics.podMonitor.authorization={"type":"Bearer","credentials":{"name":"prom-token","key":"token"}}'
pm=$(docs PodMonitor gantry $ns)
has 'scheme: https' "$pm"; has 'name: prom-token' "$pm"; lacks 'bearerTokenFile' "$pm"; has 'app.kubernetes.io/component: manager' "$pm"
# --- Grafana dashboards and alerts -------------------------------------------------
eq "$(docs ConfigMap | grep -c '^  name: gantry-dashboard-')" 0 "dashboard ConfigMaps by default"
eq "$(count PrometheusRule)" 0 "PrometheusRules by default"
render dashboards --set grafana.dashboards.enabled=true --set-string grafana.dashboards.annotations.grafana_folder=Gantry \
  --set metrics.prometheusRule.enabled=true --set metrics.prometheusRule.labels.release=prom --set-string commonLabels.team=ml
eq "$(docs ConfigMap | grep -c '^    grafana_dashboard: "1"$')" 4 "ConfigMaps labelled grafana_dashboard: \"1\""
for f in "$chart"/dashboards/*.json; do
  d=$(basename "$f" .json)
  cm=$(docs ConfigMap "gantry-dashboard-$d" "$ns")
  has 'grafana_dashboard: "1"' "$cm"; has 'grafana_folder: Gantry' "$cm"; has 'team: ml' "$cm"
  # The data value (a block scalar) is the file, and JSON.
  awk -v k="  $d.json: |-" '$0 == k { d = 1; next } d && /^    / { sub(/^    /, ""); print; next } { d = 0 }' <<<"$cm" |
    python3 -c 'import json, sys; json.load(sys.stdin)' || fail "$d: the ConfigMap's $d.json is not JSON"
  checks=$((checks + 1))
done
eq "$(count PrometheusRule gantry "$ns")" 1 "PrometheusRules"
pr=$(docs PrometheusRule gantry "$ns")
has 'release: prom' "$pr"; has 'team: ml' "$pr"; has 'job=~"gantry-metrics|gantry-system/gantry"' "$pr"
render dashboards-namespace --set grafana.dashboards.enabled=true --set grafana.dashboards.namespace=monitoring
eq "$(docs ConfigMap "" monitoring | grep -c '^  name: gantry-dashboard-')" 4 "dashboard ConfigMaps in grafana.dashboards.namespace"
case=alerts
alerts=$(CHART="$chart" hack/check-alerts.sh "$helm" 2>&1) || fail "hack/check-alerts.sh: $alerts"
checks=$((checks + 1))
render custom --namespace ops --set trainingRuntimes.install=false \
  --set 'controllers={raycluster,slurm}' --set 'watchNamespaces={team-a,team-b}' \
  --set featureGates.RayClusterStatusConditions=false --set featureGates.RayMultiHostIndexing=true
for want in '--controllers=raycluster,slurm' '--namespaces=team-a,team-b' '--leader-election-namespace=ops' \
  '--feature-gates=RayClusterStatusConditions=false,RayMultiHostIndexing=true'; do
  has "$want" "$(docs Deployment)"
done

# --- RBAC per enabled controller ------------------------------------------------
# Each family's own resources (a rule list item) and what only the others
# use. The manager's own rules (leases, events, webhook configurations) are
# granted with every set.
own_raycluster='rayclusters rayjobs rayservices rayclusters/status pods/resize ingresses roles rolebindings'
own_trainjob='trainjobs clustertrainingruntimes trainingruntimes jobsets tokenreviews'
own_slurm='nodesets loginsets controllers restapis accountings nodes persistentvolumeclaims poddisruptionbudgets statefulsets'
common_rules='leases events mutatingwebhookconfigurations validatingwebhookconfigurations'
# expect_rbac RULES ENABLED...: RULES (a rendered rules block) grant the
# enabled families' resources and the manager's own, and none only another
# family uses.
expect_rbac() {
  local rules=$1 fam r; shift
  for r in $common_rules; do hasitem "$r" "$rules"; done
  for fam in raycluster trainjob slurm; do
    local own="own_$fam"
    if [[ " $* " == *" $fam "* ]]; then
      for r in ${!own}; do hasitem "$r" "$rules"; done
    else
      for r in ${!own}; do
        # Some resources are shared: only fail on one no enabled family uses.
        local used=0 other
        for other in "$@"; do local o="own_$other"; [[ " ${!o} " == *" $r "* ]] && used=1; done
        [ $used = 1 ] || lacksitem "$r" "$rules"
      done
    fi
  done
}
for set in raycluster trainjob slurm raycluster,slurm raycluster,trainjob,slurm; do
  render "rbac-$set" --set "controllers={$set}"
  expect_rbac "$(rules_of ClusterRole gantry-manager)" ${set//,/ }
  # Namespaced: the watched namespaces' Roles carry the namespaced rules,
  # the ClusterRole the cluster-scoped ones only (nodes for slurm, the
  # runtimes and token reviews for trainjob, the webhook configurations).
  render "rbac-$set-namespaced" --set "controllers={$set}" --set 'watchNamespaces={team-a}'
  expect_rbac "$(rules_of ClusterRole gantry-manager)
$(rules_of Role gantry-manager team-a)" ${set//,/ }
  lacksitem rayclusters "$(rules_of ClusterRole gantry-manager)"
  lacksitem pods "$(rules_of ClusterRole gantry-manager)"
done
# "all" grants the merged rules, the same as every family listed.
render rbac-all
eq "$(rules_of ClusterRole gantry-manager | sort)" "$(render rbac-every --set 'controllers={raycluster,trainjob,slurm}'; rules_of ClusterRole gantry-manager | sort)" "controllers=all and every family listed grant the same rules"

# --- Kubeflow SDK: public ConfigMap, user roles (trainjob controller) -------------------
# Trainer's chart publishes "v<chart version>" (trainer.version); Gantry
# publishes the Trainer version whose API it serves, the one
# test/tools/trainer builds for the oracle tests.
trainer_version=v$(awk '$1 == "github.com/kubeflow/trainer/v2" { sub(/^v/, "", $2); print $2 }' test/tools/trainer/go.mod)
[ "$trainer_version" != v ] || { case=setup; fail "test/tools/trainer/go.mod names no github.com/kubeflow/trainer/v2 version"; }
public_role='rules:
- apiGroups:
  - ""
  resources:
  - configmaps
  resourceNames:
  - kubeflow-trainer-public
  verbs:
  - get
  - list
  - watch'
trainer_read='rules:
- apiGroups:
  - trainer.kubeflow.org
  resources:
  - trainjobs
  - trainjobs/status
  - trainingruntimes
  - clustertrainingruntimes
  verbs:
  - get
  - list
  - watch'
trainer_edit="$trainer_read"'
- apiGroups:
  - trainer.kubeflow.org
  resources:
  - trainjobs
  verbs:
  - create
  - delete
  - deletecollection
  - patch
  - update
- apiGroups:
  - ""
  resources:
  - pods
  - pods/log
  - events
  verbs:
  - get
  - list
  - watch'
trainer_admin="$trainer_edit"'
- apiGroups:
  - trainer.kubeflow.org
  resources:
  - trainingruntimes
  verbs:
  - create
  - delete
  - deletecollection
  - patch
  - update'
cluster_runtimes='rules:
- apiGroups:
  - trainer.kubeflow.org
  resources:
  - clustertrainingruntimes
  verbs:
  - get
  - list
  - watch'
agg=rbac.authorization.k8s.io/aggregate-to
kfagg=rbac.authorization.kubeflow.org/aggregate-to
# expect_public NAMESPACE PREFIX: the public ConfigMap and its Role and
# RoleBinding, in NAMESPACE, the RBAC named PREFIX-kubeflow-trainer-public.
expect_public() {
  local cm binding
  eq "$(count ConfigMap kubeflow-trainer-public "$1")" 1 "ConfigMaps kubeflow-trainer-public in $1"
  cm=$(docs ConfigMap kubeflow-trainer-public "$1")
  has "kubeflow_trainer_version: \"$trainer_version\"" "$cm"
  eq "$(awk '/^data:/ { d = 1; next } /^[^ ]/ { d = 0 } d' <<<"$cm" | grep -c .)" 1 "keys of the public ConfigMap"
  eq "$(count Role "$2-kubeflow-trainer-public" "$1")" 1 "Roles $2-kubeflow-trainer-public in $1"
  eq "$(rules_of Role "$2-kubeflow-trainer-public" "$1")" "$public_role" "rules of the public ConfigMap's Role"
  eq "$(count RoleBinding "$2-kubeflow-trainer-public" "$1")" 1 "RoleBindings $2-kubeflow-trainer-public in $1"
  binding=$(docs RoleBinding "$2-kubeflow-trainer-public" "$1")
  has 'kind: Role' "$binding"; has "name: $2-kubeflow-trainer-public" "$binding"
  has 'kind: Group' "$binding"; has 'name: system:authenticated' "$binding"
  eq "$(grep -c '^  - kind: ' <<<"$binding")" 1 "subjects of the public ConfigMap's RoleBinding"
}
# expect_user_roles PREFIX: the aggregated user ClusterRoles PREFIX-trainer-{view,edit,admin}.
expect_user_roles() {
  local view edit admin
  view=$(docs ClusterRole "$1-trainer-view"); edit=$(docs ClusterRole "$1-trainer-edit"); admin=$(docs ClusterRole "$1-trainer-admin")
  for want in "$agg-view: \"true\"" "$agg-edit: \"true\"" "$agg-admin: \"true\"" \
    "$kfagg-kubeflow-view: \"true\"" "$kfagg-kubeflow-trainer-view: \"true\""; do has "$want" "$view"; done
  for want in "$agg-edit: \"true\"" "$agg-admin: \"true\"" \
    "$kfagg-kubeflow-edit: \"true\"" "$kfagg-kubeflow-trainer-admin: \"true\""; do has "$want" "$edit"; done
  lacks "$agg-view:" "$edit"; lacks "$kfagg-kubeflow-view:" "$edit"
  for want in "$agg-admin: \"true\"" "$kfagg-kubeflow-admin: \"true\"" "$kfagg-kubeflow-trainer-admin: \"true\""; do has "$want" "$admin"; done
  lacks "$agg-view:" "$admin"; lacks "$agg-edit:" "$admin"; lacks "$kfagg-kubeflow-edit:" "$admin"
  for role in "$view" "$edit" "$admin"; do lacks 'aggregationRule:' "$role"; done
  eq "$(rules_of ClusterRole "$1-trainer-view")" "$trainer_read" "rules of $1-trainer-view"
  eq "$(rules_of ClusterRole "$1-trainer-edit")" "$trainer_edit" "rules of $1-trainer-edit"
  eq "$(rules_of ClusterRole "$1-trainer-admin")" "$trainer_admin" "rules of $1-trainer-admin"
}
# expect_cluster_runtimes PREFIX: every authenticated user may read ClusterTrainingRuntimes.
expect_cluster_runtimes() {
  local binding
  eq "$(rules_of ClusterRole "$1-trainer-view-cluster-runtimes")" "$cluster_runtimes" "rules of $1-trainer-view-cluster-runtimes"
  lacks "$agg" "$(docs ClusterRole "$1-trainer-view-cluster-runtimes")"
  binding=$(docs ClusterRoleBinding "$1-trainer-view-cluster-runtimes")
  has 'kind: ClusterRole' "$binding"; has "name: $1-trainer-view-cluster-runtimes" "$binding"
  has 'kind: Group' "$binding"; has 'name: system:authenticated' "$binding"
  eq "$(grep -c '^  - kind: ' <<<"$binding")" 1 "subjects of $1-trainer-view-cluster-runtimes"
}
# expect_no_sdk PREFIX [public|roles|runtimes]...: those parts are not rendered.
expect_no_sdk() {
  local prefix=$1 part; shift
  for part in "$@"; do
    case $part in
      public)
        eq "$(count ConfigMap kubeflow-trainer-public)" 0 "ConfigMaps kubeflow-trainer-public"
        eq "$(count Role "$prefix-kubeflow-trainer-public")" 0 "Roles $prefix-kubeflow-trainer-public"
        eq "$(count RoleBinding "$prefix-kubeflow-trainer-public")" 0 "RoleBindings $prefix-kubeflow-trainer-public" ;;
      roles)
        for r in view edit admin; do eq "$(count ClusterRole "$prefix-trainer-$r")" 0 "ClusterRoles $prefix-trainer-$r"; done ;;
      runtimes)
        eq "$(count ClusterRole "$prefix-trainer-view-cluster-runtimes")" 0 "ClusterRoles $prefix-trainer-view-cluster-runtimes"
        eq "$(count ClusterRoleBinding "$prefix-trainer-view-cluster-runtimes")" 0 "ClusterRoleBindings $prefix-trainer-view-cluster-runtimes" ;;
    esac
  done
}
render sdk-default
expect_public "$ns" gantry; expect_user_roles gantry; expect_cluster_runtimes gantry
render sdk-namespaced --set 'watchNamespaces={team-a,team-b}'
expect_public "$ns" gantry; expect_user_roles gantry; expect_cluster_runtimes gantry
render sdk-public-namespace --set trainjob.publicConfigMap.namespace=kubeflow-system
expect_public kubeflow-system gantry
eq "$(count ConfigMap kubeflow-trainer-public "$ns")" 0 "ConfigMaps kubeflow-trainer-public in the release namespace"
render sdk-fullname --set fullnameOverride=ops-gantry
expect_public "$ns" ops-gantry; expect_user_roles ops-gantry; expect_cluster_runtimes ops-gantry
render sdk-public-off --set trainjob.publicConfigMap.enabled=false
expect_no_sdk gantry public; expect_user_roles gantry; expect_cluster_runtimes gantry
render sdk-roles-off --set trainjob.userRoles.enabled=false
expect_no_sdk gantry roles; expect_public "$ns" gantry; expect_cluster_runtimes gantry
render sdk-cluster-runtimes-off --set trainjob.publicClusterRuntimes.enabled=false
expect_no_sdk gantry runtimes; expect_public "$ns" gantry; expect_user_roles gantry
render sdk-without-trainjob --set 'controllers={raycluster,slurm}'
expect_no_sdk gantry public roles runtimes
render sdk-rbac-off --set rbac.create=false
eq "$(count ConfigMap kubeflow-trainer-public "$ns")" 1 "ConfigMaps kubeflow-trainer-public with rbac.create=false"
eq "$(count Role)" 0 "Roles with rbac.create=false"; eq "$(count RoleBinding)" 0 "RoleBindings with rbac.create=false"
eq "$(count ClusterRole)" 0 "ClusterRoles with rbac.create=false"; eq "$(count ClusterRoleBinding)" 0 "ClusterRoleBindings with rbac.create=false"
refuse schema-sdk-unknown-key "values don't meet the specifications of the schema" --set trainjob.publicConfigMap.enable=true
refuse schema-sdk-namespace "values don't meet the specifications of the schema" --set trainjob.publicConfigMap.namespace=Kubeflow_System

# --- chart knobs (extraVolumes, envFrom, commonLabels, extraObjects, digest, probes, workers) ---
# probe_of NAME: the lines under the manager container's NAME: key, e.g. livenessProbe.
probe_of() { awk -v k="$1:" '{ l = $0; sub(/^ +/, "", l); i = length($0) - length(l) } on && i <= d { on = 0 } on { print l } l == k { on = 1; d = i }' <<<"$(docs Deployment gantry "$ns")"; }
probe_timing() { probe_of "$1" | grep -E '^(initialDelay|period|timeout|failureThreshold)' | sort | paste -sd, -; }
render default
dep=$(docs Deployment gantry "$ns")
app_version=$(awk '$1 == "appVersion:" { gsub(/"/, "", $2); print $2 }' "$chart/Chart.yaml")
has "image: \"ghcr.io/gantry-dev/gantry:$app_version\"" "$dep"
for unwanted in '--workers' 'envFrom:' 'team: ml'; do lacks "$unwanted" "$dep"; done
eq "$(probe_timing livenessProbe)" "failureThreshold: 3,initialDelaySeconds: 15,periodSeconds: 20,timeoutSeconds: 1" "default liveness probe"
eq "$(probe_timing readinessProbe)" "failureThreshold: 3,initialDelaySeconds: 5,periodSeconds: 10,timeoutSeconds: 1" "default readiness probe"
digest=sha256:$(printf '%064d' 0 | tr 0 a)
render knobs --set image.digest="$digest" --set image.tag=v9 --set raycluster.workers=4 --set slurm.workers=2 \
  --set livenessProbe.timeoutSeconds=5 --set readinessProbe.failureThreshold=6 \
  --set-json 'envFrom=[{"secretRef":{"name":"proxy-env"}}]' \
  --set-json 'extraVolumes=[{"name":"corp-ca","configMap":{"name":"corp-ca"}}]' \
  --set-json 'extraVolumeMounts=[{"name":"corp-ca","mountPath":"/etc/ssl/corp","readOnly":true}]' \
  --set-json 'extraObjects=[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"extra-{{ .Release.Name }}"}},"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ include \"gantry.fullname\" . }}-extra\n  namespace: {{ .Release.Namespace }}\n  labels: {{- include \"gantry.labels\" . | nindent 4 }}\n"]'
dep=$(docs Deployment gantry "$ns")
has "image: \"ghcr.io/gantry-dev/gantry@$digest\"" "$dep"; lacks ':v9' "$dep"
hasitem --workers=raycluster=4,slurm=2 "$dep"
eq "$(probe_timing livenessProbe)" "failureThreshold: 3,initialDelaySeconds: 15,periodSeconds: 20,timeoutSeconds: 5" "tuned liveness probe"
eq "$(probe_timing readinessProbe)" "failureThreshold: 6,initialDelaySeconds: 5,periodSeconds: 10,timeoutSeconds: 1" "tuned readiness probe"
has 'envFrom:
            - secretRef:
                name: proxy-env' "$dep"
has 'mountPath: /etc/ssl/corp' "$dep"; has 'name: corp-ca' "$dep"; has 'name: webhook-cert' "$dep"
eq "$(count ConfigMap extra-gantry)" 1 "extraObjects given as an object"
has 'app.kubernetes.io/instance: gantry' "$(docs ConfigMap gantry-extra "$ns")"
render knobs-alone --set webhook.enabled=false --set trainjob.workers=3 \
  --set-json 'extraVolumes=[{"name":"scratch","emptyDir":{}}]' --set-json 'extraVolumeMounts=[{"name":"scratch","mountPath":"/scratch"}]'
dep=$(docs Deployment gantry "$ns")
hasitem --workers=trainjob=3 "$dep"; has 'volumes:' "$dep"; has 'mountPath: /scratch' "$dep"; lacks 'webhook-cert' "$dep"
# commonLabels: on the labels of every object rendered (CRDs, RBAC, webhooks,
# cert-manager, PDB, ServiceMonitor...) and the manager's Pods; podLabels win.
labelled() {
  awk -v want="    $1" '
    function flush() { if (kind) { n++; if (hit) h++ } kind = hit = meta = lab = 0 }
    /^---/ { flush(); next }
    /^kind: / { kind = 1 }
    /^metadata:/ { meta = 1; next }
    /^[^ #]/ { meta = 0 }
    meta && /^  [^ ]/ { lab = ($0 == "  labels:"); next }
    meta && lab && $0 == want { hit = 1 }
    END { flush(); print h + 0 "/" n + 0 }' <<<"$out"
}
for variant in cert-manager namespaced; do
  case $variant in
    cert-manager) more=(--set replicas=2 --set metrics.serviceMonitor.enabled=true --set certManager.enabled=true
      --set-json 'raycluster.defaultContainerEnvs=[{"name":"A","value":"1"}]') ;;
    namespaced) more=(--set 'watchNamespaces={team-a}') ;;
  esac
  render "common-labels-$variant" --set-string commonLabels.team=ml --set-string 'commonLabels.app\.kubernetes\.io/part-of=platform' \
    --set-string podLabels.team=ml "${more[@]}"
  nobj=$(grep -c '^kind: ' <<<"$out")
  [ "$nobj" -gt 30 ] || fail "only $nobj objects rendered"
  eq "$(labelled 'team: ml')" "$nobj/$nobj" "objects labelled by commonLabels"
  eq "$(labelled 'app.kubernetes.io/part-of: platform')" "$nobj/$nobj" "objects labelled by commonLabels"
done
dep=$(docs Deployment gantry "$ns")
eq "$(grep -c '^        team: ml$' <<<"$dep")" 1 "pod template labels team (commonLabels and podLabels)"
has '        app.kubernetes.io/part-of: platform' "$dep"
refuse common-labels-servicemonitor 'metrics.serviceMonitor.labels.release is also in commonLabels' --set metrics.serviceMonitor.enabled=true \
  --set-string commonLabels.release=prom --set-string metrics.serviceMonitor.labels.release=prom
schema="values don't meet the specifications of the schema"
refuse schema-common-labels-reserved "$schema" --set-string 'commonLabels.app\.kubernetes\.io/name=x'
refuse schema-common-labels-value "$schema" --set commonLabels.team=true
refuse schema-image-digest "$schema" --set image.digest=latest
refuse schema-image-digest-key "$schema" --set image.digets="$digest"
refuse schema-probe-key "$schema" --set livenessProbe.timeoutSecond=3
refuse schema-workers "$schema" --set raycluster.workers=-1
refuse schema-workers-key "$schema" --set trainjob.worker=2
refuse schema-extra-volumes-key "$schema" --set 'extraVolume[0].name=x'
refuse schema-extra-volume-mount "$schema" --set-json 'extraVolumeMounts=[{"name":"x"}]'
refuse schema-env-from "$schema" --set-json 'envFrom=[{"secretRefs":{"name":"x"}}]'
refuse schema-extra-objects "$schema" --set-json 'extraObjects=[3]'

echo "chart check: ok ($checks assertions; $ncrd CRDs, $nhooks webhooks)"
