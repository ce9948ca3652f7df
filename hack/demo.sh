#!/usr/bin/env bash
# The main job, live against the local cluster: three Deployments under PDBs
# are packed onto one node, then `kubectl rollout-plus drain` (found by kubectl
# on PATH as kubectl-rollout_plus) moves them off without breaking any budget;
# then one Deployment is restarted by eviction, and a managed workload is
# rolled out and updated by the plugin itself.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export KUBECONFIG=${1:-$root/.cluster/default/kubeconfig}
kubectl="$root/.bin/kubectl"
namespace=rollout-plus-demo
target=kwok-node-0

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

step "$kubectl" rollout-plus version

# A clean slate: a previous demo's namespace and cordons go first.
"$kubectl" delete namespace "$namespace" --ignore-not-found --wait=true >/dev/null
"$kubectl" uncordon $("$kubectl" get nodes -o name) >/dev/null
"$kubectl" create namespace "$namespace" >/dev/null
until "$kubectl" -n "$namespace" get serviceaccount default >/dev/null 2>&1; do sleep 0.2; done

# Pack every replica onto the target node: the others refuse new pods meanwhile.
others=$("$kubectl" get nodes -o name | grep -v "/$target\$")
"$kubectl" cordon $others >/dev/null
"$kubectl" apply -f "$root/hack/demo/workloads.yaml" >/dev/null
"$kubectl" -n "$namespace" rollout status deployment --timeout=120s >/dev/null
"$kubectl" uncordon $others >/dev/null
step "$kubectl" -n "$namespace" get pods -o wide

# Jobs run in the agent (--agent: also when nobody watches), so that the TUI finds them afterwards.
step "$kubectl" rollout-plus drain "$target" --ignore-daemonsets --agent
step "$kubectl" -n "$namespace" get pods -o wide
"$kubectl" uncordon "$target" >/dev/null

# A restart by eviction: no new revision, the PDB decides, one pod at a time.
step "$kubectl" rollout-plus restart deployment/api -n "$namespace" --agent

step "$kubectl" rollout-plus apply -f "$root/hack/demo/shop.yaml" --agent
step "$kubectl" rollout-plus set image shop -n "$namespace" shop=registry.example/shop:v2 --agent
step "$kubectl" rollout-plus history shop -n "$namespace"
step "$kubectl" -n "$namespace" get replicasets -l app=shop

printf '\nThe local cluster keeps running; KUBECONFIG=%s\nStop it with: make cluster-down\n' "$KUBECONFIG"
printf '\nThese jobs ran in the local agent; open the TUI on them (and on the cluster) with:\n  make tui\n'
