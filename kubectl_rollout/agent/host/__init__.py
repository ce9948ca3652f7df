"""The job host: the agent's jobs without a socket.

It owns the live jobs (``live_job``), the SQLite journal (``journal``), the
resume after a restart, the claims that refuse a second job on an object
(``conflicts``), pause / cancel / abort, and the stop. Jobs run on threads
through ``job_loop.run_job``, the runner the CLI uses in-process. What the
host needs of whoever serves it is one callback, ``post``, that runs a
function on the thread owning the host's state (the transport's event loop);
so the local agent's Unix-socket transport, an in-cluster agent or a test can
embed it alike. It imports no transport, no asyncio and no socket (the
``agent-host-has-no-transport`` contract).
"""
