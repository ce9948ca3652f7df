"""``python -m kubectl_rollout.agent``: run the agent in the foreground; clients spawn it this way."""

from kubectl_rollout.agent.transport.process import main

main()
