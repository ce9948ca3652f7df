"""The warm command server: the commands that read the cluster, without paying Python's imports on each run.

Importing the CLI and the kubernetes client takes longer (~0.4 s) than kubectl
takes to answer. While the user's agent runs, a process that has already
imported them (``server``, started and stopped by the agent, by module path)
forks a child per command; the child becomes the command (``child``: the
caller's argv, environment, working directory, umask and file descriptors)
and runs the same ``main()`` the in-process path runs. The console scripts
are the thin ``client``: for an eligible command (``eligibility``) whose
server answers, it hands its descriptors over and relays the child's exit;
otherwise it runs the command in its own process, as before. ``wire`` is what
the two say to each other, and nothing here but ``server`` and ``child``
imports more than the standard library.
"""
