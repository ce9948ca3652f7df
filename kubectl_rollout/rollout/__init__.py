"""Client-side rollouts of managed workloads with the Deployment controller's semantics: replica
arithmetic, one sync as a plan, rollout status and conditions, the record, ReplicaSets and the driver."""
