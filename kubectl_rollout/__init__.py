"""kubectl rollout-plus: PDB-aware node drains and client-side rolling updates."""

from kubectl_rollout import lazy_kubernetes

__version__ = "0.1.0"

# Before any module of ours imports the kubernetes client: its models load as they are used (lazy_kubernetes).
lazy_kubernetes.install()
