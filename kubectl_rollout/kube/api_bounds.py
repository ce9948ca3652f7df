"""The API server's own bounds on numbers, so that nothing out of them is ever sent.

A replica count is an int32 in every workload's spec: a larger one is refused
by the API server's decoder when it comes in a Deployment's manifest, but a
client that does its own arithmetic and writes a ReplicaSet could wrap it
(99999999999 becomes 1,215,752,191 pods). Every count we write is checked
against these first. Durations are bounded as Go's ``time.Duration`` is
(int64 nanoseconds, about 292 years), which is also the longest wait Python's
threading accepts.
"""

from __future__ import annotations

import threading

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
#: the longest duration Go (and so kubectl) can express, in seconds
MAX_DURATION_SECONDS = min(INT64_MAX / 1e9, threading.TIMEOUT_MAX)
