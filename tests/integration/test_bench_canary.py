"""The canary benchmark's measuring (hack/bench_canary.py) on a small real canary: the record's step starts,
the pods' and ReplicaSets' watches, and the segments and readiness waits made of them, as the cluster did it.

Not a benchmark: nothing here is timed against a target; the times checked are what kwok's stages impose
(pods Ready 1 s after they start) and the steps ask for (a 1 s pause).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from integration.test_canary import V2, created, plugin, workload

from kubectl_rollout.kube.cluster_access import Cluster

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "hack"))

from bench_canary import PodTimes, ScaleUps, StepStarts
from canary_figures import figures, segments

STEPS = "setWeight 50; pause 1s; setWeight 100"


def test_a_real_canary_is_cut_at_its_recorded_steps_with_the_clusters_readiness_waits(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    created(cluster, namespace, kubeconfig, tmp_path, workload(STEPS, replicas=4))
    pods = PodTimes(cluster, namespace).start()
    scale_ups = ScaleUps(cluster, namespace).start()
    steps = StepStarts(cluster, namespace).start()
    began = time.time()
    result = plugin(kubeconfig, namespace, "set", "image", "web", f"app={V2}")
    ended = time.time()
    for follower in (pods, scale_ups, steps):
        follower.stop()
    assert result.returncode == 0, result.stderr

    # the first rollout's record (every step done) is not taken for this canary's: four starts, in order
    assert sorted(steps.starts) == [0, 1, 2, 3]
    found = segments(steps=STEPS, step_starts=steps.starts, began=began, ended=ended)
    run, _ = figures(found, scale_ups=scale_ups.at, pods=pods.lives(), requests=[])
    by_label = {figure.label: figure for figure in run}
    assert list(by_label) == ["start", "1 setWeight 50%", "2 pause 1s", "3 setWeight 100%", "end"]

    # the new revision's 4 pods, each seen created and Ready; 2 in each setWeight step, none elsewhere
    lives = pods.lives()
    assert len(lives) == 4
    assert all(life.ready is not None for life in lives)
    per_segment = [sum(1 for life in lives if s.start <= life.created < s.end) for s in found]
    assert per_segment == [0, 2, 0, 2, 0]

    # a setWeight step waited at least what kwok imposes (Ready 1 s after the pod starts), never beyond its end
    for label in ("1 setWeight 50%", "3 setWeight 100%"):
        assert 1.0 <= by_label[label].readiness <= by_label[label].seconds, by_label[label]
    # the pause lasted what it asked for, and waited for no pod
    pause = by_label["2 pause 1s"]
    assert (pause.pause, pause.readiness) == (1.0, 0.0)
    assert pause.seconds >= 1.0, pause
