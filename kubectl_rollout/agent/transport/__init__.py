"""The agent's Unix-socket transport, and the agent process around it.

``server`` listens (the socket and its permissions, the peer's uid, hello,
each request checked against ``request_schema`` and dispatched to the job
host or to ``cluster_service``, attached streams with backpressure and
limits); ``connection`` is one client's socket; ``process`` is the agent
process (the pid lock, logging, the stop watchdog, ``run_agent``, ``main``).
It runs no engine itself: jobs go through the job host, cluster queries
through the job loop's.
"""
