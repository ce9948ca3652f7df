"""One eviction request in flight per budget (kubectl_rollout.eviction.budget_lanes)."""

from __future__ import annotations

import threading
import time

from kubectl_rollout.eviction.budget_lanes import Budget, BudgetLanes


def _most_at_once(lanes: BudgetLanes, budgets: list[Budget | None]) -> int:
    inside, most, guard = [0], [0], threading.Lock()

    def send(budget: Budget | None) -> None:
        with lanes.lane(budget):
            with guard:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            time.sleep(0.05)
            with guard:
                inside[0] -= 1

    threads = [threading.Thread(target=send, args=(b,)) for b in budgets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return most[0]


def test_requests_of_one_budget_go_one_after_another() -> None:
    assert _most_at_once(BudgetLanes(), [("ns", "web")] * 5) == 1


def test_budgets_go_side_by_side() -> None:
    assert _most_at_once(BudgetLanes(), [("ns", "web"), ("ns", "api"), ("other", "web")]) == 3


def test_a_pod_without_one_budget_holds_no_lane() -> None:
    assert _most_at_once(BudgetLanes(), [None] * 4) == 4
