#!/usr/bin/env bash
# The whole test suite, as `make test` (and, under coverage, `make coverage` and CI) runs it.
#
#   hack/run-suite.sh PYTEST... [-- PYTEST_ARGS...]
#
# PYTEST is how to run pytest (`.venv/bin/pytest`, or `.venv/bin/coverage run -m pytest`). Three runs at
# once, each on a control plane of its own, because most tests wait on the cluster rather than compute:
#
# - the tests not marked `serial`, on ROLLOUT_PLUS_TEST_WORKERS pytest-xdist workers (default 3), on the
#   control plane started here in .cluster/tests (or the running one ROLLOUT_PLUS_TEST_KUBECONFIG names);
# - the tests marked `serial`, which need a cluster on which no other test acts, in two streams
#   (tests/conftest.py, SERIAL_STREAMS), each alone on a control plane started here: the side-by-side
#   rollouts in .cluster/tests-rollouts, the rest (surge drains, whose killed records any drain in the cluster
#   restores) in .cluster/tests-serial. A stream's output is shown when it ends.
#
# Then, once all three have ended and the control planes of the first two are stopped, the serial tests of the
# stream "alone" (hundreds of pods moved: they need the machine to themselves) on .cluster/tests-serial.
#
# Each run writes its JUnit report into ROLLOUT_PLUS_JUNIT_DIR when set. Exits non-zero when any run failed,
# and with pytest's 5 when no run ran a test.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

pytest=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do pytest+=("$1"); shift; done
[ $# -gt 0 ] && shift
args=("$@")
workers=${ROLLOUT_PLUS_TEST_WORKERS:-3}
junit_dir=${ROLLOUT_PLUS_JUNIT_DIR:-}
python=${PYTHON:-python3}
logs=$(mktemp -d "${TMPDIR:-/tmp}/run-suite.XXXXXX")

# The control planes this script started, stopped at the end unless ROLLOUT_PLUS_KEEP_CLUSTER=1.
started=()
# stop_started [KEPT]: stops them, but KEPT
stop_started() {
  [ "${ROLLOUT_PLUS_KEEP_CLUSTER:-}" = 1 ] && return 0
  for dir in ${started[@]+"${started[@]}"}; do
    [ "$dir" = "${1:-}" ] || "$python" hack/cluster.py down --dir "$dir" >/dev/null 2>&1
  done
}
stop_clusters() {
  stop_started
  rm -rf "$logs"
}
trap stop_clusters EXIT

# Remembers the directories of control planes not yet running, before anything starts, so that the trap stops
# each one even when its start fails halfway.
for dir in "$root/.cluster/tests" "$root/.cluster/tests-rollouts" "$root/.cluster/tests-serial"; do
  if [ "$dir" = "$root/.cluster/tests" ] && [ -n "${ROLLOUT_PLUS_TEST_KUBECONFIG:-}" ]; then continue; fi
  "$python" hack/cluster.py status --dir "$dir" >/dev/null 2>&1 || started+=("$dir")
done

junit() { [ -n "$junit_dir" ] && mkdir -p "$junit_dir" && echo "--junitxml=$junit_dir/$1.xml"; }

# One stream of the serial tests: its control plane, then pytest alone on it; the output goes to a log.
serial_stream() {
  local stream=$1 dir=$2 kubeconfig
  if ! kubeconfig=$("$python" hack/cluster.py up --dir "$dir" | tail -n 1); then
    echo "run-suite: the control plane of the $stream stream did not start; see $dir/logs"
    return 1
  fi
  ROLLOUT_PLUS_SERIAL_STREAM=$stream ROLLOUT_PLUS_TEST_KUBECONFIG=$kubeconfig \
    "${pytest[@]}" -m serial $(junit "serial-$stream") ${args[@]+"${args[@]}"}
}
echo "run-suite: the tests marked serial, in two streams on control planes of their own (shown when they end)" >&2
serial_stream rollouts "$root/.cluster/tests-rollouts" >"$logs/rollouts.log" 2>&1 &
rollouts_pid=$!
serial_stream others "$root/.cluster/tests-serial" >"$logs/others.log" 2>&1 &
others_pid=$!

if [ -z "${ROLLOUT_PLUS_TEST_KUBECONFIG:-}" ]; then
  kubeconfig=$("$python" hack/cluster.py up --dir "$root/.cluster/tests" | tail -n 1) || {
    echo "run-suite: the local control plane did not start; see $root/.cluster/tests/logs" >&2
    # a stream is a subshell running pytest: stop its pytest too, not only the subshell
    pkill -TERM -P "$rollouts_pid" 2>/dev/null
    pkill -TERM -P "$others_pid" 2>/dev/null
    kill "$rollouts_pid" "$others_pid" 2>/dev/null
    wait
    exit 1
  }
  export ROLLOUT_PLUS_TEST_KUBECONFIG=$kubeconfig
fi
echo "run-suite: meanwhile the tests not marked serial, on $workers workers" >&2
"${pytest[@]}" -n "$workers" --dist loadgroup -m "not serial" $(junit parallel) ${args[@]+"${args[@]}"} \
  2>&1 | tee "$logs/parallel.log"
parallel=${PIPESTATUS[0]}

wait "$rollouts_pid"
rollouts=$?
wait "$others_pid"
others=$?
for stream in rollouts others; do
  echo "run-suite: ---- the serial stream '$stream' ----" >&2
  cat "$logs/$stream.log"
done

# The machine to itself: the control planes of the other runs stopped (when this script started them), then
# the stream "alone" on the cluster of the stream "others".
stop_started "$root/.cluster/tests-serial"
echo "run-suite: ---- the serial stream 'alone', with the machine to itself ----" >&2
serial_stream alone "$root/.cluster/tests-serial" 2>&1 | tee "$logs/alone.log"
alone=${PIPESTATUS[0]}

# The failures of all four runs once more, last, where a log's tail (CI keeps only the tail) shows them.
failures=$(grep -h -E '^(FAILED|ERROR) |^run-suite: .*did not start' "$logs"/{parallel,rollouts,others,alone}.log 2>/dev/null)
if [ -n "$failures" ]; then
  echo "run-suite: ---- what failed, in all four runs ----" >&2
  echo "$failures" >&2
fi

# pytest's 5 is "no test ran": fine for one run when another ran some (a -k that selects only one kind).
[ "$parallel $rollouts $others $alone" = "5 5 5 5" ] && exit 5
failed=0
for code in "$parallel" "$rollouts" "$others" "$alone"; do [ "$code" = 0 ] || [ "$code" = 5 ] || failed=1; done
[ "$failed" = 0 ] && exit 0
echo "run-suite: failed (exit $parallel for the tests not marked serial; $rollouts, $others and $alone for the serial streams rollouts, others and alone)" >&2
exit 1
