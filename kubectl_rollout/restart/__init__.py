"""Restarting a workload the plugin does not own by evicting its pods one at a time."""
