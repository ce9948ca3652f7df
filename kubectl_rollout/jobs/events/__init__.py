"""The typed events of every job, in one envelope (``base``).

Importing this package registers every event type, so that ``Event.from_dict``
decodes any of them, whichever module a consumer happened to import.
"""

from kubectl_rollout.jobs.events import api, bluegreen, campaign, canary, drain, eviction, job, restart, rollout, surge

__all__ = ["api", "bluegreen", "campaign", "canary", "drain", "eviction", "job", "restart", "rollout", "surge"]
