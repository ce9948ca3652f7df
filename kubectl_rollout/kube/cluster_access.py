"""Reaching the cluster: kubeconfig resolution like kubectl's, and one client per invocation.

This is the only module that turns kubeconfig files into an API client. It
follows kubectl's precedence: ``--kubeconfig`` (one file) over ``KUBECONFIG``
(a list of files joined by ``os.pathsep``, merged, first one wins) over
``~/.kube/config``; ``--context`` over the current context; ``--namespace``
over the context's namespace over ``default``.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.kube_config import ConfigNode, KubeConfigLoader, KubeConfigMerger

from kubectl_rollout import __version__
from kubectl_rollout.kube.api_outage import ApiOutage
from kubectl_rollout.kube.api_retry import call_with_retry
from kubectl_rollout.kube.connection_settings import ConnectionSettings as ConnectionSettings
from kubectl_rollout.kube.connection_settings import kubeconfig_paths as kubeconfig_paths
from kubectl_rollout.kube.errors import UserFacingError
from kubectl_rollout.kube.first_contact import FirstContact, first_contact_timeout
from kubectl_rollout.kube.shared_pools import SharedPools
from kubectl_rollout.kube.unreachable import LOCAL_CLUSTER_HINT as LOCAL_CLUSTER_HINT
from kubectl_rollout.kube.unreachable import ClusterAccessError as ClusterAccessError
from kubectl_rollout.kube.unreachable import describe_unreachable, refused_credentials


class _TimeoutApiClient(client.ApiClient):  # type: ignore[misc]  # the client is untyped
    """An API client that applies --request-timeout to every request that sets none.

    Watches are left alone: their streams stay open on purpose, and the server
    side ``timeoutSeconds`` of each watch bounds them.

    While a job runs, ``outage`` is its ``ApiOutage``: every request of every
    thread then rides out a server that stops answering (``api_outage``). Not
    before the server has answered once, though: the first request asks it
    first (``first_contact``), and a server that never answered fails the
    command in seconds.
    """

    def __init__(self, configuration: client.Configuration, request_timeout: float, *, context: str) -> None:
        super().__init__(configuration)
        self._default_timeout = request_timeout or None
        self.outage: ApiOutage | None = None
        self.first_contact = FirstContact(
            server=configuration.host, context=context, timeout=first_contact_timeout(request_timeout)
        )

    def _ask_version(self, timeout: float) -> int:
        """One GET /version, no retry, within ``timeout``: the HTTP status it got."""
        headers = {"Accept": "application/json", "User-Agent": self.user_agent}
        self.update_params_for_auth(headers, [], ["BearerToken"])
        response = self.rest_client.pool_manager.request(
            "GET",
            f"{self.configuration.host}/version",
            headers=headers,
            timeout=urllib3.Timeout(total=timeout),
            retries=False,
        )
        return int(response.status)

    def request(self, method: str, url: str, query_params: Any = None, *args: Any, **kwargs: Any) -> Any:
        self.first_contact.ensure(self._ask_version)
        watching = any(key == "watch" and value for key, value in query_params or [])
        if kwargs.get("_request_timeout") is None and self._default_timeout and not watching:
            kwargs["_request_timeout"] = self._default_timeout
        outage = self.outage
        if outage is None:
            return super().request(method, url, query_params, *args, **kwargs)
        return outage.call(lambda: super(_TimeoutApiClient, self).request(method, url, query_params, *args, **kwargs))


@dataclass(frozen=True)
class Cluster:
    """A connection to one cluster, under one context, defaulting to one namespace."""

    api_client: client.ApiClient
    context: str
    server: str
    namespace: str

    @cached_property
    def core(self) -> client.CoreV1Api:
        return client.CoreV1Api(self.api_client)

    @cached_property
    def apps(self) -> client.AppsV1Api:
        return client.AppsV1Api(self.api_client)

    @cached_property
    def policy(self) -> client.PolicyV1Api:
        return client.PolicyV1Api(self.api_client)

    @cached_property
    def coordination(self) -> client.CoordinationV1Api:
        return client.CoordinationV1Api(self.api_client)

    @cached_property
    def events(self) -> client.EventsV1Api:
        return client.EventsV1Api(self.api_client)

    def server_version(self) -> str:
        """The API server's gitVersion; the first request most commands make."""
        try:
            info = call_with_retry(client.VersionApi(self.api_client).get_code)
        except (urllib3.exceptions.HTTPError, ApiException, OSError) as err:
            raise describe_transport_failure(err, self) from err
        return str(info.git_version)

    def ride_out_outages(self, outage: ApiOutage | None) -> None:
        """From now on every request retries connection errors as ``outage`` says (None: fail at once)."""
        if isinstance(self.api_client, _TimeoutApiClient):
            self.api_client.outage = outage

    def known_to_answer(self) -> None:
        """The server answered before (a job resumed after a restart): ride out its outages from the start."""
        if isinstance(self.api_client, _TimeoutApiClient):
            self.api_client.first_contact.mark_answered()

    def close(self) -> None:
        self.api_client.close()


def connect(
    settings: ConnectionSettings, environ: Mapping[str, str] | None = None, *, pools: SharedPools | None = None
) -> Cluster:
    """Build a client from the kubeconfig; raises ClusterAccessError with a next step.

    ``pools``: connections kept from earlier clients of this process, reused when the server and the TLS
    identity are the same (``shared_pools``)."""
    env = os.environ if environ is None else environ
    paths = kubeconfig_paths(settings.kubeconfig, env)
    existing = [p for p in paths if p.is_file()]
    if settings.kubeconfig and not existing:
        raise ClusterAccessError(f"kubeconfig {paths[0]} does not exist; check the --kubeconfig path")
    if not existing:
        where = "KUBECONFIG=" + env["KUBECONFIG"] if env.get("KUBECONFIG") else str(paths[0])
        raise ClusterAccessError(
            f"no kubeconfig found ({where}); pass --kubeconfig, set KUBECONFIG, or {LOCAL_CLUSTER_HINT}"
        )
    joined = os.pathsep.join(str(p) for p in existing)
    # Each file is read and parsed once (libyaml when present), not once per question the client's helpers ask
    # (four pure-Python parses, ~15 ms of every command's and every agent job's start).
    documents = {path: _read_kubeconfig(path) for path in existing}
    try:
        merged = _ParsedKubeConfig(joined, {str(path): document for path, document in documents.items()})
        if merged.config is None:
            raise ConfigException("Invalid kube-config file. No configuration found.")
        contexts = KubeConfigLoader(config_dict=merged.config, config_base_path=None).list_contexts()
    except ConfigException as err:
        raise ClusterAccessError(f"cannot read kubeconfig {joined}: {err}") from err
    names = [c["name"] for c in contexts or []]
    context_name = settings.context or _first_current_context(documents)
    if not context_name:
        raise ClusterAccessError(
            f"kubeconfig {joined} has no current context; pass --context (one of: {', '.join(names) or 'none'})"
        )
    if context_name not in names:
        raise ClusterAccessError(
            f'context "{context_name}" not found in kubeconfig {joined}; '
            f"available contexts: {', '.join(names) or 'none'}"
        )
    context = next(c for c in contexts if c["name"] == context_name)

    configuration = client.Configuration()
    try:
        # as config.load_kube_config(joined, context_name, configuration, persist_config=False) does, on the
        # files as parsed above
        KubeConfigLoader(config_dict=merged.config, config_base_path=None, active_context=context_name).load_and_set(
            configuration
        )
    except ConfigException as err:
        raise ClusterAccessError(f'kubeconfig context "{context_name}" is not usable: {err}') from err
    # One connection-level retry for a dropped keep-alive; the engines own every
    # other retry decision (tenacity policies that know what a 429 means).
    configuration.retries = 1
    namespace = settings.namespace or context.get("context", {}).get("namespace") or "default"
    api_client = _TimeoutApiClient(configuration, settings.request_timeout, context=context_name)
    api_client.user_agent = f"kubectl-rollout-plus/{__version__}"
    if pools is not None:
        pools.adopt(api_client)
    return Cluster(api_client=api_client, context=context_name, server=configuration.host, namespace=namespace)


#: the sections of a kubeconfig that hold lists of named entries
_NAMED_SECTIONS = {"clusters": "cluster", "users": "user", "contexts": "context"}


def _read_kubeconfig(path: Path) -> Any:
    """The file's YAML document, refused, naming the file, when it is not a kubeconfig at all (a password file,
    a YAML list): the client would fail deep inside with a TypeError that names neither."""
    import yaml

    def refuse(why: str) -> ClusterAccessError:
        return ClusterAccessError(
            f"{path} is not a kubeconfig: {why}; point --kubeconfig or KUBECONFIG at a kubeconfig file "
            "(kubectl config view shows the one kubectl uses)"
        )

    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise refuse(f"cannot read it ({err})") from err
    try:
        try:
            # libyaml parses a kubeconfig ten times faster than the pure-Python parser, to the same document
            document = yaml.load(text, Loader=yaml.CSafeLoader)
        except (AttributeError, yaml.YAMLError):
            document = yaml.safe_load(text)  # no libyaml; or the error worded as the pure-Python parser words it
    except yaml.YAMLError as err:
        raise refuse(f"it is not YAML ({' '.join(str(err).split())[:120]})") from err
    if document is None:
        return document  # an empty file: kubectl reads it as an empty config, and so does the context check after
    if not isinstance(document, dict):
        shape = "plain text" if isinstance(document, str) else f"a YAML {type(document).__name__}"
        raise refuse(f"it is {shape}, not a mapping with clusters, users and contexts")
    for section, key in _NAMED_SECTIONS.items():
        entries = document.get(section)
        if entries is None:
            continue
        if not isinstance(entries, list):
            raise refuse(f"{section} must be a list (found {type(entries).__name__})")
        for index, entry in enumerate(entries):
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                raise refuse(f"{section}[{index}] is not a named entry ({{name: ..., {key}: ...}})")
            if not isinstance(entry.get(key) or {}, dict):
                raise refuse(f"{section}[{index}].{key} is not a mapping")
    if not isinstance(document.get("current-context") or "", str):
        raise refuse("current-context is not a string")
    return document


class _ParsedKubeConfig(KubeConfigMerger):  # type: ignore[misc]  # the client is untyped
    """The client's merger of kubeconfig files (the first file's entry of a name wins; relative paths resolve
    against each entry's own file), over documents already parsed instead of reading each file again."""

    config_merged: Any

    def __init__(self, paths: str, documents: dict[str, Any]) -> None:
        self._documents = documents
        super().__init__(paths)

    def load_config(self, path: str) -> None:
        document = self._documents.get(path)
        if document is None and path not in self._documents:
            super().load_config(path)  # not one of ours (never: the paths are the documents' own)
            return
        if document is None:
            raise ConfigException(f"Invalid kube-config. {path} file is empty")
        merged: Any = self.config_merged
        if merged is None:
            first = copy.deepcopy(document)
            for item in ("clusters", "contexts", "users"):
                first[item] = []
            merged = self.config_merged = ConfigNode(path, first, path)
        for item in ("clusters", "contexts", "users"):
            self._merge(item, document.get(item, []) or [], path)
        if "current-context" in document:
            merged.value["current-context"] = document["current-context"]
        self.config_files[path] = document


def _first_current_context(documents: dict[Path, Any]) -> str | None:
    # The client's merger lets the last file's current-context win; kubectl
    # lets the first file that sets one win.
    for document in documents.values():
        name = (document or {}).get("current-context")
        if name:
            return str(name)
    return None


def describe_transport_failure(err: BaseException, cluster: Cluster) -> UserFacingError:
    """Turn a connection or authentication failure into one actionable line."""
    if isinstance(err, ApiException):
        if err.status == 401:
            return refused_credentials(cluster.server, cluster.context)
        return ClusterAccessError(
            f'the Kubernetes API server at {cluster.server} (context "{cluster.context}") answered '
            f"{err.status} {err.reason}: {api_message(err)}"
        )
    return describe_unreachable(err, server=cluster.server, context=cluster.context)


def describe_api_error(err: ApiException) -> str:
    """One line for an API answer nothing else explained."""
    message = api_message(err)
    if err.status == 401:
        return (
            "the Kubernetes API server rejected the credentials (401 Unauthorized); "
            "refresh them in your kubeconfig and retry"
        )
    if err.status == 403:
        return f"{message}; use a context with this permission (nothing else was changed by this step)"
    return f"the API server answered {err.status} {err.reason}: {message}"


def api_message(err: ApiException) -> str:
    """The message of the Status the API server answered with, whole, or the raw body."""
    try:
        return str(json.loads(err.body or "").get("message", err.body))
    except (TypeError, ValueError):
        return str(err.body or err.reason)
