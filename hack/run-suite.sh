#!/usr/bin/env bash
# The whole test suite, as `make test` (and, under coverage, `make coverage` and CI) runs it.
#
#   hack/run-suite.sh PYTEST... [-- PYTEST_ARGS...]
#
# PYTEST is how to run pytest (`.venv/bin/pytest`, or `.venv/bin/coverage run -m pytest`). Two phases on
# the control plane started here once (or the running one ROLLOUT_PLUS_TEST_KUBECONFIG names):
#
# 1. every test not marked `serial`, on ROLLOUT_PLUS_TEST_WORKERS pytest-xdist workers (default 3: most
#    integration tests wait on the cluster rather than compute, so more workers than cores pays);
# 2. the tests marked `serial`, in two streams at once, each alone on a control plane of its own
#    (conftest.py, SERIAL_STREAMS): the side-by-side rollouts on the first, the rest (surge drains, whose
#    killed records any drain in the cluster restores) on a second one started here in .cluster/tests-serial.
#
# Each phase writes its JUnit reports into ROLLOUT_PLUS_JUNIT_DIR when set. Exits non-zero when either
# phase failed, and with pytest's 5 when no phase ran a test.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

pytest=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do pytest+=("$1"); shift; done
[ $# -gt 0 ] && shift
args=("$@")
workers=${ROLLOUT_PLUS_TEST_WORKERS:-3}
junit_dir=${ROLLOUT_PLUS_JUNIT_DIR:-}
cluster_dir="$root/.cluster/tests"
python=${PYTHON:-python3}

started=0
if [ -z "${ROLLOUT_PLUS_TEST_KUBECONFIG:-}" ]; then
  "$python" hack/cluster.py status --dir "$cluster_dir" >/dev/null 2>&1 || started=1
  kubeconfig=$("$python" hack/cluster.py up --dir "$cluster_dir" | tail -n 1) || {
    echo "run-suite: the local control plane did not start; see $cluster_dir/logs" >&2
    exit 1
  }
  export ROLLOUT_PLUS_TEST_KUBECONFIG=$kubeconfig
fi
stop_cluster() {
  if [ "$started" = 1 ] && [ "${ROLLOUT_PLUS_KEEP_CLUSTER:-}" != 1 ]; then
    "$python" hack/cluster.py down --dir "$cluster_dir" >/dev/null 2>&1
  fi
}
trap stop_cluster EXIT

junit() { [ -n "$junit_dir" ] && mkdir -p "$junit_dir" && echo "--junitxml=$junit_dir/$1.xml"; }

echo "run-suite: phase 1, the tests not marked serial, on $workers workers" >&2
"${pytest[@]}" -n "$workers" --dist loadgroup -m "not serial" $(junit parallel) ${args[@]+"${args[@]}"}
parallel=$?
echo "run-suite: phase 2, the tests marked serial, in two streams on two control planes" >&2
serial_dir="$root/.cluster/tests-serial"
serial_started=0
"$python" hack/cluster.py status --dir "$serial_dir" >/dev/null 2>&1 || serial_started=1
stop_clusters() {
  stop_cluster
  if [ "$serial_started" = 1 ] && [ "${ROLLOUT_PLUS_KEEP_CLUSTER:-}" != 1 ]; then
    "$python" hack/cluster.py down --dir "$serial_dir" >/dev/null 2>&1
  fi
}
trap stop_clusters EXIT
ROLLOUT_PLUS_SERIAL_STREAM=rollouts "${pytest[@]}" -m serial $(junit serial-rollouts) ${args[@]+"${args[@]}"} &
rollouts_pid=$!
if serial_kubeconfig=$("$python" hack/cluster.py up --dir "$serial_dir" | tail -n 1); then
  ROLLOUT_PLUS_SERIAL_STREAM=others ROLLOUT_PLUS_TEST_KUBECONFIG=$serial_kubeconfig \
    "${pytest[@]}" -m serial $(junit serial-others) ${args[@]+"${args[@]}"}
  others=$?
else
  echo "run-suite: the second control plane did not start; see $serial_dir/logs" >&2
  others=1
fi
wait "$rollouts_pid"
rollouts=$?

# pytest's 5 is "no test ran": fine for one run when another ran some (a -k that selects only one kind).
if [ "$parallel" = 5 ] && [ "$rollouts" = 5 ] && [ "$others" = 5 ]; then exit 5; fi
[ "$parallel" = 5 ] && parallel=0
[ "$rollouts" = 5 ] && rollouts=0
[ "$others" = 5 ] && others=0
[ "$parallel" = 0 ] && [ "$rollouts" = 0 ] && [ "$others" = 0 ] && exit 0
echo "run-suite: failed (phase 1 exit $parallel, phase 2 exits $rollouts (rollouts) and $others (others))" >&2
exit 1
