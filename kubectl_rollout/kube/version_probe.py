"""Asking the API server for its version without loading the kubernetes client.

Importing the client costs about 0.7 s (it imports every model and API class
it has), ten times what the request itself takes. ``version`` is the command
people run to see whether the plugin works at all, so it tries this light path
first: read the kubeconfig as kubectl merges it, make one ``GET /version`` with
the standard library, and stop. Whatever this path does not cover (exec and
auth-provider credentials, proxies) or any other failure returns None, and the
caller goes the ordinary way through the client, which words every error. A
server that does not answer is the exception: asking it a second time through
the client would double the wait, so that is worded here, as the client's
first contact words it (``unreachable``), within the same bound.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import ssl
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubectl_rollout.kube.connection_settings import ConnectionSettings, kubeconfig_paths
from kubectl_rollout.kube.first_contact import first_contact_timeout


@dataclass(frozen=True)
class ServerVersion:
    git_version: str
    server: str


class _NotCovered(Exception):
    """The kubeconfig needs something only the client does."""


def probe_server_version(
    settings: ConnectionSettings, environ: Mapping[str, str] | None = None
) -> ServerVersion | None:
    """The server's version by the light path, or None when only the client can tell.

    Raises ClusterAccessError when the server cannot be reached at all (refused, no such name, TLS, no answer
    in time) or refuses the credentials.
    """
    from kubectl_rollout.kube.errors import UserFacingError

    try:
        return _probe(settings, os.environ if environ is None else environ)
    except UserFacingError:
        raise
    except Exception:
        return None


def _load(path: Path) -> dict[str, Any]:
    text = path.read_text()
    try:
        document = json.loads(text)
    except ValueError:
        import yaml

        document = yaml.safe_load(text)
    return document if isinstance(document, dict) else {}


def _merged(documents: list[dict[str, Any]], section: str) -> dict[str, dict[str, Any]]:
    """kubectl's merge: for each named entry, the first file that defines it wins."""
    merged: dict[str, dict[str, Any]] = {}
    for document in documents:
        for entry in document.get(section) or []:
            merged.setdefault(str(entry.get("name")), entry.get(section.rstrip("s")) or {})
    return merged


def _probe(settings: ConnectionSettings, environ: Mapping[str, str]) -> ServerVersion:
    paths = [p for p in kubeconfig_paths(settings.kubeconfig, environ) if p.is_file()]
    if not paths:
        raise _NotCovered("no kubeconfig")
    documents = [_load(p) for p in paths]
    context_name = settings.context or next((d["current-context"] for d in documents if d.get("current-context")), "")
    context = _merged(documents, "contexts")[context_name]
    cluster = _merged(documents, "clusters")[context["cluster"]]
    user = _merged(documents, "users").get(str(context.get("user")), {})
    if {"exec", "auth-provider"} & user.keys() or "proxy-url" in cluster:
        raise _NotCovered("credentials or proxies only the client handles")
    if any(key in os.environ for key in ("HTTPS_PROXY", "https_proxy")):
        raise _NotCovered("a proxy")
    server = str(cluster["server"]).rstrip("/")
    request = urllib.request.Request(f"{server}/version", headers={"Accept": "application/json"})
    token = user.get("token") or (Path(user["tokenFile"]).read_text().strip() if user.get("tokenFile") else None)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    elif user.get("username"):
        basic = base64.b64encode(f"{user['username']}:{user.get('password', '')}".encode()).decode()
        request.add_header("Authorization", f"Basic {basic}")
    with _tls(cluster, user) as tls:
        timeout = first_contact_timeout(settings.request_timeout)  # the bound of any command's first contact
        try:
            with urllib.request.urlopen(request, context=tls, timeout=timeout) as answer:
                body = json.loads(answer.read())
        except urllib.error.HTTPError as err:
            if err.code == 401:
                from kubectl_rollout.kube.unreachable import refused_credentials

                raise refused_credentials(server, context_name) from err
            raise _NotCovered(f"answered {err.code}") from err
        except (urllib.error.URLError, OSError) as err:
            from kubectl_rollout.kube.unreachable import describe_unreachable

            reason = err.reason if isinstance(err, urllib.error.URLError) else err
            cause = reason if isinstance(reason, BaseException) else err
            raise describe_unreachable(cause, server=server, context=context_name) from err
    return ServerVersion(git_version=str(body["gitVersion"]), server=server)


@contextlib.contextmanager
def _tls(cluster: Mapping[str, Any], user: Mapping[str, Any]) -> Iterator[ssl.SSLContext]:
    if not str(cluster.get("server", "")).startswith("https://"):
        raise _NotCovered("not https")
    tls = ssl.create_default_context()
    if cluster.get("insecure-skip-tls-verify"):
        tls.check_hostname = False
        tls.verify_mode = ssl.CERT_NONE
    elif cluster.get("certificate-authority-data"):
        tls.load_verify_locations(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    elif cluster.get("certificate-authority"):
        tls.load_verify_locations(cafile=cluster["certificate-authority"])
    if cluster.get("tls-server-name"):
        raise _NotCovered("tls-server-name")
    cert, key = _material(user, "client-certificate"), _material(user, "client-key")
    if cert is None and key is None:
        yield tls
        return
    if cert is None or key is None:
        raise _NotCovered("half a client certificate")
    # ssl loads a client certificate only from files: a private folder that lives for this call alone.
    with tempfile.TemporaryDirectory(prefix="rollout-plus-") as folder:
        cert_file, key_file = Path(folder, "cert.pem"), Path(folder, "key.pem")
        for path, data in ((cert_file, cert), (key_file, key)):
            path.touch(mode=0o600)
            path.write_bytes(data)
        tls.load_cert_chain(cert_file, key_file)
    yield tls


def _material(user: Mapping[str, Any], field: str) -> bytes | None:
    if user.get(f"{field}-data"):
        return base64.b64decode(user[f"{field}-data"])
    if user.get(field):
        return Path(user[field]).read_bytes()
    return None
