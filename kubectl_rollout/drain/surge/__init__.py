"""``drain --surge``: a workload whose PDB allows no eviction now gets extra replicas first.

Its pods are then evicted (the Eviction API stays the only way out), its count
comes down by one per eviction, and it is restored at the end; the original
count is recorded on the object, so a killed drain never leaves it raised.
The drain engine (``kubectl_rollout.drain.engine``) calls this package; nothing
here knows of nodes being cordoned or pods being filtered.
"""
