#!/usr/bin/env bash
# Builds the local control plane's binaries from Go modules: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kubectl, kwok, krew and krew's manifest
# validator. Nothing is downloaded from GitHub releases, dl.k8s.io or registries.
#
# Each tool has its own Go module under hack/tools/ so their dependency versions
# never meet. Binaries are built once per version into a cache outside git
# ($ROLLOUT_PLUS_CACHE, default ~/.cache/kubectl-rollout-plus) and linked into
# .bin/ of this checkout, so a second run is a no-op that takes a second.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${ROLLOUT_PLUS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-rollout-plus}
links="$root/.bin"
mkdir -p "$cache/bin" "$links"

command -v go >/dev/null || { echo "build-binaries: Go is not installed; install Go >= 1.26 first." >&2; exit 1; }

# Prints the version a tool module requires of $2.
module_version() {
  (cd "$root/hack/tools/$1" && go list -m -f '{{.Version}}' "$2")
}

# build TOOL_DIR KEY LDFLAGS NAME=PACKAGE... — builds each PACKAGE as binary NAME
# into $cache/bin/KEY, unless all of them are there already.
build() {
  local tool=$1 key=$2 ldflags=$3
  shift 3
  local out="$cache/bin/$key"
  local missing=0 spec
  for spec in "$@"; do [ -x "$out/${spec%%=*}" ] || missing=1; done
  if [ "$missing" = 1 ]; then
    local started=$SECONDS
    echo "building $key: ${*%%=*}" >&2
    # Build into a scratch folder and move it in place, so an interrupted build
    # never leaves a half-written binary that a later run would trust.
    local scratch
    scratch=$(mktemp -d "$cache/bin/.build-XXXXXX")
    for spec in "$@"; do
      (cd "$root/hack/tools/$tool" && go build -trimpath -ldflags "$ldflags" -o "$scratch/${spec%%=*}" "${spec#*=}")
    done
    mkdir -p "$out"
    mv "$scratch"/* "$out/"
    rmdir "$scratch"
    echo "built $key in $((SECONDS - started))s" >&2
  else
    echo "cached $key" >&2
  fi
  for spec in "$@"; do ln -sfn "$out/${spec%%=*}" "$links/${spec%%=*}"; done
}

total_started=$SECONDS

k8s=$(module_version kubernetes k8s.io/kubernetes)
k8s_minor=${k8s#v1.}; k8s_minor=${k8s_minor%%.*}
# The release date of the module stands in for the build date so that two
# builds of one version are identical.
k8s_date=$(cd "$root/hack/tools/kubernetes" && go list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes)
k8s_ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  k8s_ldflags+=" -X $pkg.gitVersion=$k8s -X $pkg.gitMajor=1 -X $pkg.gitMinor=$k8s_minor"
  k8s_ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$k8s_date"
done
build kubernetes "kubernetes-$k8s" "$k8s_ldflags" \
  kube-apiserver=k8s.io/kubernetes/cmd/kube-apiserver \
  kube-controller-manager=k8s.io/kubernetes/cmd/kube-controller-manager \
  kube-scheduler=k8s.io/kubernetes/cmd/kube-scheduler \
  kubectl=k8s.io/kubernetes/cmd/kubectl

etcd=$(module_version etcd go.etcd.io/etcd/server/v3)
build etcd "etcd-$etcd" "-s -w" etcd=go.etcd.io/etcd/server/v3

kwok=$(module_version kwok sigs.k8s.io/kwok)
build kwok "kwok-$kwok" "-s -w" kwok=sigs.k8s.io/kwok/cmd/kwok

krew=$(module_version krew sigs.k8s.io/krew)
build krew "krew-$krew" "-s -w -X sigs.k8s.io/krew/internal/version.gitTag=$krew" \
  krew=sigs.k8s.io/krew/cmd/krew validate-krew-manifest=sigs.k8s.io/krew/cmd/validate-krew-manifest

# kubectl finds plugins named kubectl-NAME on PATH; krew is one of them.
ln -sfn "$cache/bin/krew-$krew/krew" "$links/kubectl-krew"

echo "binaries ready in $links (kubernetes $k8s, etcd $etcd, kwok $kwok, krew $krew) after $((SECONDS - total_started))s" >&2
echo "cache: $(du -sh "$cache/bin" | cut -f1) in $cache/bin" >&2
