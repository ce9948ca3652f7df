#!/usr/bin/env bash
# The whole test suite, as `make test` (and, under coverage, `make coverage` and CI) runs it.
#
#   hack/run-suite.sh PYTEST... [-- PYTEST_ARGS...]
#
# PYTEST is how to run pytest (`.venv/bin/pytest`, or `.venv/bin/coverage run -m pytest`). Two phases on
# one control plane, started here once (or the running one ROLLOUT_PLUS_TEST_KUBECONFIG names):
#
# 1. every test not marked `serial`, on ROLLOUT_PLUS_TEST_WORKERS pytest-xdist workers (default 3: most
#    integration tests wait on the cluster rather than compute, so more workers than cores pays);
# 2. the tests marked `serial`, alone: they need a cluster nobody else acts on at the same time (a drain
#    killed on purpose leaves a surge record that the next drain anywhere in the cluster restores).
#
# Each phase writes its JUnit report into ROLLOUT_PLUS_JUNIT_DIR when set. Exits non-zero when either
# phase failed, and with pytest's 5 when neither ran a test.
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
echo "run-suite: phase 2, the tests marked serial, alone" >&2
"${pytest[@]}" -m serial $(junit serial) ${args[@]+"${args[@]}"}
serial=$?

# pytest's 5 is "no test ran": fine for one phase when the other ran some (a -k that selects only one kind).
if [ "$parallel" = 5 ] && [ "$serial" = 5 ]; then exit 5; fi
[ "$parallel" = 5 ] && parallel=0
[ "$serial" = 5 ] && serial=0
[ "$parallel" = 0 ] && [ "$serial" = 0 ] && exit 0
echo "run-suite: failed (phase 1 exit $parallel, phase 2 exit $serial)" >&2
exit 1
