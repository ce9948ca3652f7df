"""`python -m kubectl_rollout` runs the plugin, as `kubectl rollout-plus` would."""

from kubectl_rollout.cli.main import main

main()
