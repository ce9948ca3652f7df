"""One line for a cluster that cannot be reached: which server, which context, why, and what to check.

A person who typed the wrong context, or whose VPN is closed, must read what
failed and where to look, never urllib3's paragraph or a traceback. The cause
is one of: connection refused, a name that does not resolve (or no route), a
TLS certificate the client does not trust, no answer in time, credentials the
server refused (401).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from kubectl_rollout.kube.errors import UserFacingError

#: What to do when the local test cluster is not running (README, first command).
LOCAL_CLUSTER_HINT = "start the local cluster with `make cluster-up` (or `make demo`) from a checkout"


class ClusterAccessError(UserFacingError):
    """The cluster cannot be reached, or the kubeconfig does not say how."""


def where(server: str, context: str) -> str:
    return f'the Kubernetes API server at {server} (context "{context}")'


def refused_credentials(server: str, context: str) -> ClusterAccessError:
    return ClusterAccessError(
        f"{where(server, context)} rejected the credentials (401 Unauthorized); "
        "refresh them in your kubeconfig and retry"
    )


def describe_unreachable(err: BaseException, *, server: str, context: str) -> ClusterAccessError:
    """Turn a connection failure (urllib3's, or the socket's) into one actionable line."""
    import urllib3  # here, not at the top: `version`'s light path words its failures without the client's stack

    reason = getattr(err, "reason", None) or err
    text = str(reason)
    at = where(server, context)
    if "CERTIFICATE_VERIFY_FAILED" in text or isinstance(reason, urllib3.exceptions.SSLError):
        return ClusterAccessError(
            f"TLS verification with {at} failed ({short(text)}); check certificate-authority-data in your kubeconfig"
        )
    host = urlsplit(server).hostname or ""
    hint = (
        LOCAL_CLUSTER_HINT
        if host in ("127.0.0.1", "localhost", "::1")
        else "check that the cluster is up and reachable from here (VPN, proxy, firewall)"
    )
    lowered = text.lower()
    if "refused" in lowered:
        return ClusterAccessError(f"cannot reach {at}: connection refused; {hint}")
    if "name or service not known" in lowered or "nodename nor servname" in lowered or "name resolution" in lowered:
        return ClusterAccessError(
            f"cannot reach {at}: the name {host} does not resolve (DNS); check the server address in your "
            "kubeconfig and your DNS or VPN"
        )
    # urllib3's NewConnectionError (no route, unreachable network) subclasses its ConnectTimeoutError.
    if isinstance(reason, urllib3.exceptions.NewConnectionError):
        return ClusterAccessError(f"cannot reach {at}: {short(text)}; {hint}")
    if "timed out" in lowered or isinstance(reason, urllib3.exceptions.TimeoutError | TimeoutError):
        return ClusterAccessError(
            f"{at} did not answer in time; check that it is up and reachable from here (VPN, proxy, firewall) "
            "and --request-timeout"
        )
    return ClusterAccessError(f"cannot reach {at}: {short(text)}; {hint}")


def short(text: str, limit: int = 160) -> str:
    """``text`` on one line, cut at ``limit`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
