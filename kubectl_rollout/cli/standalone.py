"""Entry point of the Krew executable, a shiv zipapp (hack/dist/build_archives.py).

The archive's ``__main__`` checks the Python version and picks the cache
directory; on the first run shiv's bootstrap unpacks the bundled packages
there (once per build), later runs go to the unpacked tree directly; either
way ``main`` runs from that tree.
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    # The unpacked tree is this build's alone and never edited, so its bytecode
    # is cached beside it on first use even where PYTHONDONTWRITEBYTECODE is set
    # (a setting meant for the user's own projects): otherwise every start
    # would compile the kubernetes client again, as the old zipapp did.
    sys.dont_write_bytecode = False
    # Nothing is imported from the archive itself any more; left on sys.path,
    # it would be searched (importlib.metadata reads its whole directory).
    archive = os.path.realpath(sys.argv[0])
    sys.path[:] = [path for path in sys.path if not (os.path.isfile(path) and os.path.realpath(path) == archive)]
    # The thin client, as the console scripts: through the agent's warm command server when it may.
    from kubectl_rollout.cli.warm.client import main as run_cli

    run_cli()
