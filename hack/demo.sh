#!/usr/bin/env bash
# The main job, shown against the local cluster: kubectl finds the plugin on
# PATH (kubectl-rollout_plus) and runs it as `kubectl rollout-plus`.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export KUBECONFIG=${1:-$root/.cluster/default/kubeconfig}
kubectl="$root/.bin/kubectl"

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

step "$kubectl" plugin list
step "$kubectl" rollout-plus version
step "$kubectl" get nodes -o wide
printf '\nThe local cluster keeps running; KUBECONFIG=%s\nStop it with: make cluster-down\n' "$KUBECONFIG"
