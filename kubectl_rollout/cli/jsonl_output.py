"""``-o jsonl``: one JSON object per event, in the envelope every job shares (``jobs.events.base``)."""

from __future__ import annotations

import json
import threading
from typing import TextIO

from kubectl_rollout.jobs.events.base import Envelope


class JsonLinesPrinter:
    def __init__(self, out: TextIO) -> None:
        self.out = out
        self._lock = threading.Lock()

    def __call__(self, envelope: Envelope) -> None:
        with self._lock:
            self.out.write(json.dumps(envelope.as_dict(), sort_keys=False) + "\n")
            self.out.flush()
