"""Client-model pods for unit tests of pure logic (no cluster involved)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kubernetes import client


def pod(
    name: str = "p",
    *,
    namespace: str = "ns",
    owner: tuple[str, str] | None = ("ReplicaSet", "rs"),
    owner_api: str = "apps/v1",
    phase: str = "Running",
    empty_dir: bool = False,
    mirror: bool = False,
    deleted_at: datetime | None = None,
    priority: int | None = None,
    priority_class: str | None = None,
    labels: dict[str, str] | None = None,
    ready: bool = True,
) -> Any:
    owners = None
    if owner is not None:
        owners = [
            client.V1OwnerReference(api_version=owner_api, kind=owner[0], name=owner[1], uid="u", controller=True)
        ]
    volumes = [client.V1Volume(name="scratch", empty_dir=client.V1EmptyDirVolumeSource())] if empty_dir else []
    return client.V1Pod(
        metadata=client.V1ObjectMeta(
            name=name,
            namespace=namespace,
            owner_references=owners,
            annotations={"kubernetes.io/config.mirror": "x"} if mirror else None,
            deletion_timestamp=deleted_at,
            labels=labels,
        ),
        spec=client.V1PodSpec(
            containers=[client.V1Container(name="c")],
            volumes=volumes,
            priority=priority,
            priority_class_name=priority_class,
        ),
        status=client.V1PodStatus(
            phase=phase,
            conditions=[client.V1PodCondition(type="Ready", status="True" if ready else "False")],
        ),
    )
