"""The pod selector a surge record keeps, written as the label selector string a pod list takes: a killed
drain's marks are found on exactly the surged object's pods, and never by a selector that picks more."""

from __future__ import annotations

import pytest
from kubernetes import client

from kubectl_rollout.drain.surge.record import selector_text


def _requirement(key: str, operator: str, values: list[str] | None = None) -> client.V1LabelSelectorRequirement:
    return client.V1LabelSelectorRequirement(key=key, operator=operator, values=values)


@pytest.mark.parametrize(
    ("selector", "text"),
    [
        pytest.param(None, "", id="none"),
        pytest.param(client.V1LabelSelector(), "", id="empty-picks-nothing-here"),
        pytest.param(client.V1LabelSelector(match_labels={"app": "web"}), "app=web", id="one-label"),
        pytest.param(
            client.V1LabelSelector(match_labels={"pod-template-hash": "5d8f7c9b4", "app": "web"}),
            "app=web,pod-template-hash=5d8f7c9b4",
            id="a-replica-sets-labels-sorted",
        ),
        pytest.param(
            client.V1LabelSelector(
                match_labels={"app": "web"},
                match_expressions=[
                    _requirement("tier", "In", ["front", "api"]),
                    _requirement("track", "NotIn", ["canary"]),
                    _requirement("owner", "Exists"),
                    _requirement("legacy", "DoesNotExist"),
                ],
            ),
            "app=web,tier in (api,front),track notin (canary),owner,!legacy",
            id="every-operator",
        ),
        pytest.param(
            client.V1LabelSelector(match_labels={"app": "web"}, match_expressions=[_requirement("x", "Gt", ["1"])]),
            "",
            id="an-unknown-operator-lists-nothing",
        ),
    ],
)
def test_a_records_selector_as_a_label_selector_string(selector: client.V1LabelSelector | None, text: str) -> None:
    assert selector_text(selector) == text
