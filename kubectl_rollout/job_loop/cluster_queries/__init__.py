"""The cluster queries the TUI asks through the agent (``nodes``, ``plan``, ``cordon``, ``uncordon``,
``workloads``, ``history``, ``pods``): answered by the engines' own code, one connection per cluster.

They sit in the layer that runs jobs, beside ``loop.run_job``: they connect as a job does (``connect_to``)
and read and change the cluster through the engines, which the agent reaches only through this layer.
``queries.ClusterQueries`` answers one query by name with plain data (``jobs.cluster_rows``); what it
refuses it raises as a ``QueryError`` (``errors``), which the agent's transport turns into its protocol's
error codes. ``reads`` holds the reads and the two node writes.
"""
