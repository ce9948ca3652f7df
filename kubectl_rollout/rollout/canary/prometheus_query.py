"""One instant query of a Prometheus gate, through the API server's service proxy.

``GET /api/v1/namespaces/NS/services/NAME:PORT/proxy/api/v1/query?query=...``:
the API server forwards it to one of the Service's endpoints, so nothing is
port-forwarded and the user's own kubeconfig credentials decide (``get`` on
``services/proxy``). The API server proxies only to endpoints that are Pods
of the Service's namespace (their ``targetRef``, with a matching pod IP);
a Service without selector whose Endpoints name a bare address is answered
503.

The answer is returned as it came (HTTP status and body), for
``prometheus_analysis.classify`` to judge; nothing here decides.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

import urllib3
from kubernetes.client.exceptions import ApiException

from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.rollout.steps.prometheus_gate import PrometheusService

#: one query gets this long (Prometheus' own default query timeout is 2 minutes; a gate's answer should be quick):
#: the driver's pass waits for it, well inside the workload Lease's 15 s
QUERY_TIMEOUT_SECONDS = 10.0
#: the body kept of an answer (a query API answer for one number is small)
LONGEST_BODY = 64 * 1024


@dataclass(frozen=True, kw_only=True)
class RawAnswer:
    #: the HTTP status; 0 when nothing answered
    status: int
    body: str


def proxy_path(service: PrometheusService, *, namespace: str) -> str:
    """The service proxy's path to the query API of ``service`` (its namespace defaults to ``namespace``)."""
    where = quote(service.namespace or namespace, safe="")
    target = f"{quote(service.name, safe='')}:{quote(service.port, safe='')}"
    return f"/api/v1/namespaces/{where}/services/{target}/proxy/api/v1/query"


def instant_query(
    cluster: Cluster, service: PrometheusService, query: str, *, namespace: str, timeout: float = QUERY_TIMEOUT_SECONDS
) -> RawAnswer:
    """One instant query, at the server's now; an HTTP error or no answer is returned, not raised."""
    try:
        response = cluster.api_client.call_api(
            proxy_path(service, namespace=namespace),
            "GET",
            query_params=[("query", query)],
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
            _preload_content=False,
            _request_timeout=timeout,
            _return_http_data_only=True,
        )
        return RawAnswer(status=int(response.status), body=response.data[:LONGEST_BODY].decode(errors="replace"))
    except ApiException as err:
        body = err.body.decode(errors="replace") if isinstance(err.body, bytes) else str(err.body or err.reason)
        return RawAnswer(status=int(err.status or 0), body=body[:LONGEST_BODY])
    except (urllib3.exceptions.HTTPError, OSError) as err:
        return RawAnswer(status=0, body=f"{type(err).__name__}: {err}")
