"""The agent's wire protocol: encoding, decoding, version negotiation, coalescing a lagging client's backlog."""

from __future__ import annotations

import json

import pytest

from kubectl_rollout.agent.host.conflicts import conflict
from kubectl_rollout.agent.protocol import (
    ErrorCode,
    JobInfo,
    Notification,
    ProtocolError,
    Request,
    Response,
    coalesce,
    decode,
    encode,
    encode_event,
    negotiate,
)
from kubectl_rollout.jobs.events.base import Envelope
from kubectl_rollout.jobs.events.drain import NodeCordoned
from kubectl_rollout.jobs.events.eviction import DryRun
from kubectl_rollout.jobs.kinds import facts_for
from kubectl_rollout.jobs.spec import (
    ActionKind,
    Connection,
    DrainJob,
    DrainOptions,
    JobKind,
    JobSpec,
    RestartJob,
    RolloutAction,
)


def claims(spec: JobSpec) -> frozenset[str]:
    return facts_for(spec).claims(spec)


@pytest.mark.parametrize(
    "message",
    [
        Request(1, "submit", {"spec": {"kind": "drain"}}),
        Request("a", "list", {}),
        Response(3, result={"jobs": []}),
        Response(4, error=ProtocolError(ErrorCode.NO_SUCH_JOB, "no job x", {"job": "x"})),
        Response(None, error=ProtocolError(ErrorCode.PARSE_ERROR, "not JSON")),
        Notification("end", {"job": "x", "last_seq": 7}),
    ],
)
def test_every_message_round_trips_as_one_line(message: Request | Response | Notification) -> None:
    line = encode(message)
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1
    assert json.loads(line)["jsonrpc"] == "2.0"
    back = decode(line)
    if isinstance(message, Response) and message.error is not None:
        assert isinstance(back, Response)
        assert back.error is not None
        assert (back.id, back.error.code, back.error.message, back.error.data) == (
            message.id,
            message.error.code,
            message.error.message,
            message.error.data,
        )
    else:
        assert back == message


def test_an_event_notification_carries_the_envelope_unchanged() -> None:
    envelope = Envelope(job="j1", seq=3, at=1795000000.25, event=NodeCordoned(node="n1", changed=True))
    line = encode_event(json.dumps(envelope.as_dict()))
    message = decode(line)
    assert isinstance(message, Notification)
    assert message.method == "event"
    assert Envelope.from_dict(message.params) == envelope


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (b"{not json", ErrorCode.PARSE_ERROR),
        (b'{"id": 1, "method": "list"}', ErrorCode.INVALID_REQUEST),  # no "jsonrpc": "2.0"
        (b"[1, 2]", ErrorCode.INVALID_REQUEST),
        (b'{"jsonrpc": "2.0", "id": true, "method": "list"}', ErrorCode.INVALID_REQUEST),
        (b'{"jsonrpc": "2.0", "id": 1, "method": 5}', ErrorCode.INVALID_REQUEST),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "list", "params": [1]}', ErrorCode.INVALID_PARAMS),
        (b'{"jsonrpc": "2.0", "id": 1}', ErrorCode.INVALID_REQUEST),
        (b'{"jsonrpc": "2.0", "id": 1, "error": "bad"}', ErrorCode.INVALID_REQUEST),
    ],
)
def test_broken_messages_get_the_json_rpc_code_to_answer_with(line: bytes, code: ErrorCode) -> None:
    with pytest.raises(ProtocolError) as caught:
        decode(line)
    assert caught.value.code == code


@pytest.mark.parametrize(
    ("client", "client_oldest", "server", "server_oldest", "agreed"),
    [
        (1, 1, 1, 1, 1),
        (2, 1, 1, 1, 1),  # a newer client steps down to an older agent it still accepts
        (1, 1, 3, 1, 1),  # a newer agent steps down to an older client it still accepts
        (3, 2, 2, 2, 2),
    ],
)
def test_negotiation_agrees_on_the_older_version_both_accept(
    client: int, client_oldest: int, server: int, server_oldest: int, agreed: int
) -> None:
    assert (
        negotiate(
            client_version=client, client_oldest=client_oldest, server_version=server, server_oldest=server_oldest
        )
        == agreed
    )


def test_an_agent_too_old_for_the_client_is_named_with_both_versions_and_what_to_do() -> None:
    with pytest.raises(ProtocolError) as caught:
        negotiate(client_version=3, client_oldest=2, server_version=1, server_oldest=1)
    assert caught.value.code == ErrorCode.VERSION_MISMATCH
    message = caught.value.message
    assert "this client speaks 3 (accepts 2 and newer)" in message
    assert "the agent speaks 1" in message
    assert "kubectl rollout-plus agent stop" in message
    assert "older than this plugin" in message


def test_an_agent_too_new_for_the_client_says_so() -> None:
    with pytest.raises(ProtocolError) as caught:
        negotiate(client_version=1, client_oldest=1, server_version=4, server_oldest=3)
    assert "newer than this plugin" in caught.value.message


def test_coalescing_keeps_every_unkeyed_event_and_the_last_of_each_key_in_order() -> None:
    backlog = [
        (1, None, b"a"),
        (2, "pod/x", b"x1"),
        (3, "pod/y", b"y1"),
        (4, "pod/x", b"x2"),
        (5, None, b"b"),
        (6, "pod/x", b"x3"),
    ]
    assert [seq for seq, _key, _line in coalesce(backlog)] == [1, 3, 5, 6]
    assert coalesce([]) == []


def test_job_info_ignores_fields_it_does_not_know() -> None:
    info = JobInfo(id="j", kind="drain", target="node/a", state="running", last_seq=4)
    assert JobInfo.from_dict({**info.as_dict(), "added_later": 1}) == info


def _drain(*nodes: str, context: str = "c", dry_run: DryRun = DryRun.NONE) -> JobSpec:
    return JobSpec(
        kind=JobKind.DRAIN,
        connection=Connection(context=context),
        drain=DrainJob(nodes=nodes, options=DrainOptions(dry_run=dry_run)),
    )


def test_a_second_drain_of_a_node_conflicts_naming_the_job_and_the_node() -> None:
    running = {"job1": claims(_drain("a", "b"))}
    assert conflict(_drain("b", "c"), running) == ("job1", "node/b")
    assert conflict(_drain("c"), running) is None
    assert conflict(_drain("b", context="other"), running) is None  # another cluster's node b
    assert conflict(_drain("b", dry_run=DryRun.CLIENT), running) is None  # a dry run changes nothing


def test_a_second_restart_of_a_workload_conflicts_in_its_namespace_only() -> None:
    def restart(namespace: str) -> JobSpec:
        return JobSpec(
            kind=JobKind.RESTART,
            connection=Connection(context="c", namespace=namespace),
            restart=RestartJob(workload="deployment/web"),
        )

    running = {"job1": claims(restart("shop"))}
    assert conflict(restart("shop"), running) == ("job1", "shop/deployment/web")
    assert conflict(restart("other"), running) is None


@pytest.mark.parametrize(
    ("flag", "env", "terminal", "agent"),
    [
        (None, {}, True, True),  # a terminal: the job should survive it
        (None, {}, False, False),  # CI: nothing to survive
        (True, {}, False, True),
        (False, {}, True, False),
        (None, {"ROLLOUT_PLUS_AGENT": "1"}, False, True),
        (None, {"ROLLOUT_PLUS_AGENT": "0"}, True, False),
        (False, {"ROLLOUT_PLUS_AGENT": "1"}, True, False),  # the flag wins
        (None, {"ROLLOUT_PLUS_AGENT": "maybe"}, True, True),  # not a choice: the default
    ],
)
def test_where_a_job_runs(flag: bool | None, env: dict[str, str], terminal: bool, agent: bool) -> None:
    from kubectl_rollout.cli.agent_choice import wants_agent

    assert wants_agent(flag, env, terminal=terminal) is agent


@pytest.mark.parametrize(
    ("ours", "theirs", "shared"),
    [
        # apply -f of a manifest in prod, without -n: the manifest's namespace, as the job itself acts there
        ({"manifest_namespace": "prod"}, {"namespace": "prod"}, "prod/workload/web"),
        ({"manifest_namespace": "prod"}, {"connection_namespace": "prod"}, "prod/workload/web"),
        ({"manifest_namespace": "prod"}, {}, None),  # set image in default: another workload
        ({"namespace": "prod"}, {"connection_namespace": "prod"}, "prod/workload/web"),
        ({}, {}, "default/workload/web"),
    ],
)
def test_a_rollout_claims_its_workload_in_the_namespace_it_acts_in(
    ours: dict[str, str], theirs: dict[str, str], shared: str | None
) -> None:
    def rollout(
        *, manifest_namespace: str = "", namespace: str | None = None, connection_namespace: str | None = None
    ) -> JobSpec:
        if manifest_namespace:
            manifest = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}}
            manifest["metadata"]["namespace"] = manifest_namespace  # type: ignore[index]
            action = RolloutAction(kind=ActionKind.APPLY, manifest=manifest, namespace=namespace)
        else:
            action = RolloutAction(kind=ActionKind.SET_IMAGE, name="web", namespace=namespace)
        return JobSpec(
            kind=JobKind.ROLLOUT, connection=Connection(context="c", namespace=connection_namespace), rollout=action
        )

    running = {"job1": claims(rollout(**theirs))}
    assert conflict(rollout(**ours), running) == (("job1", shared) if shared else None)
