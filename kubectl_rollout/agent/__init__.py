"""The local agent: runs jobs, journals them in SQLite, and resumes them after a crash.

Installed as ``kubectl_rollout.agent``.
"""
