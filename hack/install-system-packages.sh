#!/usr/bin/env bash
# Installs the Debian packages the project needs, only those missing: openssl
# (the local cluster's PKI), tmux (the TUI's real-terminal test) and zsh (the
# completion script is run in a real zsh as well as in bash). Go and
# Python >= 3.11 come with the machine; their absence is reported, not fixed.
set -euo pipefail

missing=()
command -v openssl >/dev/null || missing+=(openssl)
command -v tmux >/dev/null || missing+=(tmux)
command -v zsh >/dev/null || missing+=(zsh)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing Debian packages: ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi

command -v go >/dev/null || { echo "Go >= 1.26 is required to build the local control plane; install it first." >&2; exit 1; }
python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || { echo "Python >= 3.11 is required (found $(python3 --version 2>&1))." >&2; exit 1; }
