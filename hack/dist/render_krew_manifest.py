#!/usr/bin/env python3
"""Render krew-manifest.yaml from the built archives, so its sha256s are always true.

    .venv/bin/python hack/dist/render_krew_manifest.py [--archives dist] [--base-url URL] [--out FILE]

The committed krew-manifest.yaml is this script's output for the current
version; CI rebuilds the archives and checks that rendering gives the same file.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from build_archives import EXECUTABLE, PLATFORMS, ROOT, archive_name, version  # noqa: E402

RELEASES = "https://github.com/rollout-plus/kubectl-rollout-plus/releases/download"

HEADER = """\
apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: rollout-plus
spec:
  version: v{version}
  homepage: https://github.com/rollout-plus/kubectl-rollout-plus
  shortDescription: PDB-aware node drains and client-side rollouts
  description: |
    Voluntary disruptions, done safely. `kubectl rollout-plus drain` drains
    nodes through the Eviction API like `kubectl drain`, with its flags and
    wording, but retries a pod blocked by a PodDisruptionBudget as soon as the
    budget has room instead of every 5 seconds, honours Retry-After, reports
    which PDB blocks each pod with its healthy/needed counts, bounds
    concurrency, drains nodes in batches that wait for evicted workloads to be
    available again, and prints a pre-flight plan. `apply`, `set image`,
    `undo` and friends drive rolling updates from the client with the
    Deployment controller's semantics, never past a PodDisruptionBudget, and
    fail fast when new pods crash-loop or cannot pull their image.
  caveats: |
    This plugin is written in Python: it needs python3 >= 3.11 on your PATH.

    It needs these permissions (a cluster-admin context has them):
      - get/list nodes and patch nodes (cordon, uncordon)
      - list pods in all namespaces, create pods/eviction
        (delete pods with --disable-eviction)
      - list/watch poddisruptionbudgets, get daemonsets
      - create events (optional: drain steps are recorded on the node)
      - with --surge: get/list/watch/patch deployments and replicasets,
        list horizontalpodautoscalers, get configmaps, get/create/update/delete
        leases, in every namespace
      - with --node-batch: get replicasets, list/watch deployments,
        replicasets, statefulsets and replicationcontrollers
    and, for client-side rollouts, in the workload's namespace:
      - configmaps, replicasets and leases (coordination.k8s.io): all verbs
      - list/watch pods and poddisruptionbudgets
      - get/delete/create deployments (adopt and release only)
    docs/rbac/ in the source holds each of these as a tested least-privilege Role.
  platforms:
"""

PLATFORM = """\
  - selector:
      matchLabels:
        os: {goos}
        arch: {goarch}
    uri: {base_url}/v{version}/{archive}
    sha256: {sha256}
    bin: {executable}
    files:
    - from: {executable}
      to: .
    - from: LICENSE
      to: .
"""


def render(archives: Path, base_url: str) -> str:
    plugin_version = version()
    text = HEADER.format(version=plugin_version)
    for goos, goarch in PLATFORMS:
        archive = archives / archive_name(plugin_version, goos, goarch)
        if not archive.is_file():
            raise SystemExit(f"{archive} is missing; build the archives first (make dist)")
        text += PLATFORM.format(
            goos=goos,
            goarch=goarch,
            base_url=base_url.rstrip("/"),
            version=plugin_version,
            archive=archive.name,
            sha256=hashlib.sha256(archive.read_bytes()).hexdigest(),
            executable=EXECUTABLE,
        )
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--archives", type=Path, default=ROOT / "dist")
    parser.add_argument("--base-url", default=RELEASES, help="where the release archives are published")
    parser.add_argument("--out", type=Path, default=ROOT / "krew-manifest.yaml", help="'-' for stdout")
    args = parser.parse_args()
    text = render(args.archives, args.base_url)
    if str(args.out) == "-":
        sys.stdout.write(text)
    else:
        args.out.write_text(text)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
