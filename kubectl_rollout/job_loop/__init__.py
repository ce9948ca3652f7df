"""The layer that runs jobs: one loop for every kind (``loop.run_job``), above the engines whose bodies it runs.

The CLI runs a job here in its own process; the agent runs the very same specs.
"""
