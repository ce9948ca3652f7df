"""Cluster access: connecting, retrying what the API server throttles, watched collections, selectors,
durations, permission checks, leases and the errors a person can act on."""
