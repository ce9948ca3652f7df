"""``python -m kubectl_rollout.cli.warm SOCKET``: the warm command server (the agent starts it)."""

from kubectl_rollout.cli.warm.server import main

main()
