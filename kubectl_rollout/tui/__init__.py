"""The Textual app that shows jobs live; a client of the agent or of an in-process job.

Installed as ``kubectl_rollout.tui``.
"""
