#!/usr/bin/env bash
# Builds Argo Rollouts' controller (rollouts-controller) from its Go module, for
# hack/compare_argo.py, which runs it out of cluster beside our canary. Not part
# of `make setup`, the test suite or CI: the build takes many CPU-minutes and is
# only needed when the comparison is re-run by hand.
#
# Usage: hack/build-argo-rollouts.sh [VERSION]   (default below)
# Prints the binary's path on stdout; progress goes to stderr.
#
# The module has `replace` directives, which `go install module@version`
# refuses, so the module is downloaded, its source copied somewhere writable and
# built there. Like hack/build-binaries.sh, the binary is cached per version
# outside git ($ROLLOUT_PLUS_CACHE, default ~/.cache/kubectl-rollout-plus) and
# built into a scratch folder first, so an interrupted build is never trusted.
set -euo pipefail

version=${1:-v1.10.2}
module=github.com/argoproj/argo-rollouts
cache=${ROLLOUT_PLUS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-rollout-plus}
out="$cache/bin/argo-rollouts-$version"
mkdir -p "$cache/bin"

command -v go >/dev/null || { echo "build-argo-rollouts: Go is not installed; install Go >= 1.26 first." >&2; exit 1; }
# The module's go.mod may ask for a newer Go than the one installed; let Go
# fetch that toolchain from the proxy unless the caller chose one.
export GOTOOLCHAIN=${GOTOOLCHAIN:-go1.27.3}

if [ -x "$out/rollouts-controller" ] && [ -d "$out/crds" ]; then
  echo "cached argo-rollouts-$version" >&2
  echo "$out/rollouts-controller"
  exit 0
fi

started=$SECONDS
echo "building argo-rollouts-$version: rollouts-controller (GOTOOLCHAIN=$GOTOOLCHAIN)" >&2
scratch=$(mktemp -d "$cache/bin/.build-XXXXXX")
trap 'rm -rf "$scratch"' EXIT

# `go mod download -json` prints an Error field (and exits non-zero) when the
# module or the Go version it requires is not served; show it as it is.
info=$(cd "$scratch" && go mod download -json "$module@$version") || { echo "$info" >&2; exit 1; }
src=$(printf '%s\n' "$info" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
[ -n "$src" ] || { echo "build-argo-rollouts: no Dir for $module@$version:" >&2; echo "$info" >&2; exit 1; }

# The module cache is read-only; the build writes nothing into the source, but
# copying keeps it from ever trying (and lets go.sum be completed if needed).
cp -r "$src" "$scratch/src"
chmod -R u+w "$scratch/src"
(cd "$scratch/src" && go build -trimpath -ldflags "-s -w -X $module/utils/version.version=${version#v}" \
  -o "$scratch/rollouts-controller" ./cmd/rollouts-controller)
mkdir -p "$scratch/crds"
cp "$scratch/src/manifests/crds/"*.yaml "$scratch/crds/"
rm -f "$scratch/crds/kustomization.yaml"

mkdir -p "$out"
mv "$scratch/rollouts-controller" "$scratch/crds" "$out/"
echo "built argo-rollouts-$version in $((SECONDS - started))s" >&2
echo "$out/rollouts-controller"
