"""The typed events of every job, in one envelope."""
