"""The shape of Kubernetes names, as apimachinery's validation checks them."""

from __future__ import annotations

import re

#: a lowercase RFC 1123 subdomain (IsDNS1123Subdomain), unanchored to build longer patterns from
DNS_SUBDOMAIN_PATTERN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
DNS_SUBDOMAIN = re.compile(rf"^{DNS_SUBDOMAIN_PATTERN}$")
