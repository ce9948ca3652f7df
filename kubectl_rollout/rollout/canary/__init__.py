"""Canary steps on managed workloads: the step format, the replica arithmetic, the walk through the steps."""
