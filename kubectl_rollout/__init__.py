"""kubectl rollout-plus: PDB-aware node drains and client-side rolling updates."""

__version__ = "0.1.0"
