"""The local agent: runs jobs, journals them in SQLite, and resumes them after a crash.

Three parts: the job host (``host``: jobs, journal, resume; no socket), the
Unix-socket transport and the agent process (``transport``), and the client
the CLI and the TUI talk to it with (``client``). Installed as
``kubectl_rollout.agent``.
"""
