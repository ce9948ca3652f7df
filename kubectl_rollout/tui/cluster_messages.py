"""Messages the cluster screens send up to the app."""

from __future__ import annotations

from textual.message import Message

from kubectl_rollout.agent.protocol import JobInfo


class JobSubmitted(Message):
    """A cluster screen submitted a job to the agent; ``open``: the user wants to watch it (a drain) now."""

    def __init__(self, job: JobInfo, *, open_it: bool) -> None:
        super().__init__()
        self.job = job
        self.open_it = open_it
