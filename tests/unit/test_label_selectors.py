from __future__ import annotations

import pytest
from kubernetes import client

from kubectl_rollout.kube.label_selectors import selector_matches, validate_label_selector


@pytest.mark.parametrize(
    "selector",
    [
        "",
        "app",
        "!app",
        "app=web",
        "app==web",
        "app!=web",
        "app=",
        "app in (web,api)",
        "env notin (prod)",
        "app=web,tier!=db",
        "example.com/role=worker",
        "a.b-c_d=e.f-g_h",
        "app in (web, api),!legacy",
        "x in (a,b),y notin (c)",
    ],
)
def test_valid(selector: str) -> None:
    validate_label_selector(selector)


@pytest.mark.parametrize(
    ("selector", "complaint"),
    [
        ("app in (web", "unbalanced"),
        ("app in web)", "unbalanced"),
        ("bad key=x", "invalid label key"),
        ("app=we b", "invalid label"),
        ("app=-web", "invalid label value"),
        ("app,", "empty requirement"),
        ("Example.com/x=y", "invalid label key"),
        ("app in ()", "at least one value"),
        ("k=" + "v" * 64, "invalid label value"),
        ("k" * 64 + "=v", "invalid label key"),
    ],
)
def test_invalid(selector: str, complaint: str) -> None:
    with pytest.raises(ValueError, match=complaint):
        validate_label_selector(selector)


def sel(match_labels: dict[str, str] | None = None, *expressions: tuple[str, str, list[str] | None]) -> object:
    return client.V1LabelSelector(
        match_labels=match_labels,
        match_expressions=[client.V1LabelSelectorRequirement(key=k, operator=o, values=v) for k, o, v in expressions]
        or None,
    )


@pytest.mark.parametrize(
    ("selector", "labels", "matches"),
    [
        (None, {"app": "web"}, False),  # a null selector selects nothing
        (sel(), {"app": "web"}, True),  # an empty one selects everything
        (sel({"app": "web"}), {"app": "web", "x": "y"}, True),
        (sel({"app": "web"}), {"app": "api"}, False),
        (sel(None, ("app", "In", ["web", "api"])), {"app": "api"}, True),
        (sel(None, ("app", "In", ["web"])), {}, False),
        (sel(None, ("app", "NotIn", ["web"])), {}, True),
        (sel(None, ("app", "NotIn", ["web"])), {"app": "web"}, False),
        (sel(None, ("app", "Exists", None)), {"app": ""}, True),
        (sel(None, ("app", "DoesNotExist", None)), {"app": "x"}, False),
        (sel({"tier": "shop"}, ("app", "Exists", None)), {"tier": "shop"}, False),
    ],
)
def test_selector_matches(selector: object, labels: dict[str, str], matches: bool) -> None:
    assert selector_matches(selector, labels) is matches
