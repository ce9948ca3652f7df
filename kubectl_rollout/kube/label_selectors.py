"""Validation of label selectors, with the grammar of apimachinery's ``labels.Parse``.

Checked before anything is changed, so that a typo in ``--pod-selector`` or
``-l`` is refused up front instead of after the node has been cordoned.

    selector    := requirement ("," requirement)*
    requirement := KEY | "!" KEY | KEY ("=" | "==" | "!=") VALUE
                 | KEY ("in" | "notin") "(" VALUE ("," VALUE)* ")"
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kubectl_rollout.kube.names import DNS_SUBDOMAIN_PATTERN

_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
_KEY = re.compile(rf"^(({DNS_SUBDOMAIN_PATTERN})/)?{_NAME}$")
_VALUE = re.compile(rf"^({_NAME})?$")
_SET = re.compile(r"^(?P<key>\S+)\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)$")
_EQUALITY = re.compile(r"^(?P<key>[^=!\s]+)\s*(?P<op>==|=|!=)\s*(?P<value>\S*)$")


def _split_requirements(selector: str) -> list[str]:
    """Split on commas that are not inside a set's parentheses."""
    parts: list[str] = []
    depth = 0
    current = ""
    for char in selector:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                raise ValueError("unbalanced ')'")
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    if depth != 0:
        raise ValueError("unbalanced '('")
    parts.append(current)
    return [p.strip() for p in parts]


def _check_key(key: str) -> None:
    prefix, _, name = key.rpartition("/")
    if len(name) > 63 or (prefix and len(prefix) > 253) or not _KEY.match(key):
        raise ValueError(f"invalid label key {key!r}")


def _check_value(value: str) -> None:
    if len(value) > 63 or not _VALUE.match(value):
        raise ValueError(f"invalid label value {value!r}")


def validate_label_selector(selector: str) -> None:
    """Raise ``ValueError`` saying what is wrong; an empty selector selects everything."""
    if not selector.strip():
        return
    for requirement in _split_requirements(selector):
        if not requirement:
            raise ValueError("empty requirement (a stray comma?)")
        if match := _SET.match(requirement):
            _check_key(match["key"])
            values = [v.strip() for v in match["values"].split(",")]
            if values == [""]:
                raise ValueError(f"{match['op']} needs at least one value in {requirement!r}")
            for value in values:
                _check_value(value)
        elif match := _EQUALITY.match(requirement):
            _check_key(match["key"])
            _check_value(match["value"])
        elif requirement.startswith("!"):
            _check_key(requirement[1:].strip())
        else:
            _check_key(requirement)


def selector_matches(selector: Any, labels: Mapping[str, str] | None) -> bool:
    """Whether a ``metav1.LabelSelector`` (client model) selects ``labels``.

    As the API server reads a PDB's selector: a null selector selects nothing,
    an empty one (no terms) selects everything.
    """
    if selector is None:
        return False
    expressions = [(e.key, e.operator, e.values or []) for e in selector.match_expressions or []]
    return _matches(selector.match_labels or {}, expressions, labels or {})


def selector_matches_dict(selector: Mapping[str, Any] | None, labels: Mapping[str, str] | None) -> bool:
    """The same for a selector written as in a manifest (``matchLabels`` / ``matchExpressions``)."""
    if selector is None:
        return False
    expressions = [
        (e.get("key", ""), e.get("operator", ""), e.get("values") or []) for e in selector.get("matchExpressions") or []
    ]
    return _matches(selector.get("matchLabels") or {}, expressions, labels or {})


def _matches(
    match_labels: Mapping[str, str], expressions: list[tuple[str, str, list[str]]], labels: Mapping[str, str]
) -> bool:
    if any(labels.get(key) != value for key, value in match_labels.items()):
        return False
    for key, operator, values in expressions:
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


def selector_to_string(selector: Mapping[str, Any]) -> str:
    """A manifest's selector in the query syntax (``app=web,tier in (a,b),!legacy``)."""
    parts = [f"{key}={value}" for key, value in sorted((selector.get("matchLabels") or {}).items())]
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression["key"], expression["operator"], expression.get("values") or []
        if operator == "In":
            parts.append(f"{key} in ({','.join(values)})")
        elif operator == "NotIn":
            parts.append(f"{key} notin ({','.join(values)})")
        elif operator == "Exists":
            parts.append(key)
        elif operator == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts)


def check_label(key: str, value: str | None) -> None:
    """A label as the API server would take it on an object (``value`` None: the key alone, to remove it)."""
    _check_key(key)
    if value is not None:
        _check_value(value)
