"""Blue-green on managed workloads: an active and a preview Service switched on ``pod-template-hash``."""
