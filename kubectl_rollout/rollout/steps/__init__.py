"""Progressive delivery's pure parts: the step format (``format``) and the replica arithmetic of a weight
(``weights``). Below the plan and the spec, which use them; the canary's walk, state and commands, which
act on the cluster, are in ``rollout.canary``."""
