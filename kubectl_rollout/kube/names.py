"""The shape of Kubernetes names, as apimachinery's validation checks them."""

from __future__ import annotations

import re

#: a lowercase RFC 1123 subdomain (IsDNS1123Subdomain), unanchored to build longer patterns from
DNS_SUBDOMAIN_PATTERN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
DNS_SUBDOMAIN = re.compile(rf"^{DNS_SUBDOMAIN_PATTERN}$")

#: the longest name the API server accepts for an object named by a DNS subdomain
MAX_NAME_LENGTH = 253


def name_problem(name: str) -> str | None:
    """Why the API server would refuse ``name`` as an object's name (None: it would not)."""
    if not name:
        return "a name must not be empty"
    if len(name) > MAX_NAME_LENGTH:
        return f"a name is at most {MAX_NAME_LENGTH} characters (this one has {len(name)})"
    if not DNS_SUBDOMAIN.match(name):
        return (
            "a name is lowercase letters, digits, '-' and '.', starting and ending with a letter or digit "
            "(RFC 1123 subdomain)"
        )
    return None
