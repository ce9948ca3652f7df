"""Client-side rollouts of managed workloads: ``apply``, ``set image``, ``scale``, ``status``, ``history``,
``undo``, ``pause``, ``resume``, ``restart``, ``delete``.

Every command that changes the spec records the change in the workload's
ConfigMap and then drives the rollout to its end (``--no-wait`` only records
it; ``status -w`` drives it later, from here or anywhere). Exit codes: 0
rolled out; 1 failed (progress deadline exceeded, new pods failing,
interrupted); 2 bad usage or an invalid manifest.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kubectl_rollout.cli.interruptible import run_interruptibly
from kubectl_rollout.cli.jsonl_output import JsonLinesPrinter
from kubectl_rollout.cli.options import global_options, open_cluster
from kubectl_rollout.cli.restart_commands import restart_by_eviction
from kubectl_rollout.cli.rollout_output import RolloutPrinter
from kubectl_rollout.jobs.events.rollout import RolloutOutcome
from kubectl_rollout.jobs.events.stream import EventStream, new_job_id
from kubectl_rollout.kube.durations import parse_duration
from kubectl_rollout.kube.errors import UsageError, UserFacingError
from kubectl_rollout.rollout.spec import InvalidManifest, parse_workload
from kubectl_rollout.rollout.state import PAUSED as PAUSED_REASON
from kubectl_rollout.rollout.state import RESUMED, condition, rollout_status_message, set_condition

if TYPE_CHECKING:
    # These import the kubernetes client (and yaml): each function imports what
    # it uses when it runs, so that --help and TAB completion do without them.
    from kubectl_rollout.kube.cluster_access import Cluster
    from kubectl_rollout.kube.watched_collection import WatchedCollection
    from kubectl_rollout.rollout.driver import RolloutResult
    from kubectl_rollout.rollout.record import Record

RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"


def _duration(_ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return parse_duration(value) or None
    except ValueError as err:
        raise click.BadParameter(str(err), param=param) from err


def _drive_options(command: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option(
            "--wait/--no-wait",
            default=True,
            show_default=True,
            help="Drive the rollout to its end (the default), or only record the change.",
        ),
        click.option(
            "--timeout",
            default=None,
            callback=_duration,
            metavar="DURATION",
            help="Give up waiting after this long (the rollout itself goes on with the next driver).",
        ),
        click.option(
            "--auto-rollback",
            is_flag=True,
            help="When the rollout fails (progress deadline, failing pods), return to the last good revision.",
        ),
        click.option(
            "--ignore-pdb",
            is_flag=True,
            help="Shrink old ReplicaSets as the Deployment controller would, even past what the "
            "workload's PodDisruptionBudgets allow.",
        ),
        click.option(
            "--fail-after-restarts",
            type=click.IntRange(min=1),
            default=3,
            show_default=True,
            help="Fail the rollout once a new pod crash-loops this many restarts (image pull failures fail at once).",
        ),
        click.option("-o", "--output", type=click.Choice(["text", "jsonl"]), default="text", show_default=True),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _stream(output: str) -> EventStream:
    if output == "jsonl":
        return EventStream(new_job_id(), JsonLinesPrinter(sys.stdout))
    printer = RolloutPrinter(sys.stdout, sys.stderr)
    return EventStream(new_job_id(), lambda envelope: printer(envelope.event))


@dataclasses.dataclass(frozen=True, kw_only=True)
class DriveOptions:
    """How to drive a rollout, from the command's options (see ``_drive_options``)."""

    wait: bool = True
    timeout: float | None = None
    auto_rollback: bool = False
    ignore_pdb: bool = False
    fail_after_restarts: int = 3
    output: str = "text"

    @classmethod
    def pop_from(cls, options: dict[str, Any]) -> DriveOptions:
        """Take the drive options out of a command's keyword arguments, leaving the connection flags."""
        return cls(**{f.name: options.pop(f.name) for f in dataclasses.fields(cls) if f.name in options})


def _drive(cluster: Cluster, namespace: str, name: str, drive: DriveOptions) -> RolloutResult:
    from kubectl_rollout.rollout.driver import RolloutDriver

    cancel = threading.Event()
    driver = RolloutDriver(
        cluster,
        namespace,
        name,
        _stream(drive.output).emit,
        cancel=cancel,
        timeout=drive.timeout,
        respect_pdbs=not drive.ignore_pdb,
        auto_rollback=drive.auto_rollback,
        fail_after_restarts=drive.fail_after_restarts,
    )
    return run_interruptibly(
        driver.run,
        cancel,
        on_interrupt=f"interrupted: the rollout's state is in the cluster; continue it with "
        f"kubectl rollout-plus status {name} -w",
        name=f"drive {name}",
    )


def _finish(ctx: click.Context, result: RolloutResult) -> None:
    if result.paused:
        click.echo(result.message, err=True)
        return
    if not result.succeeded:
        click.echo(f"error: {result.message}", err=True)
        ctx.exit(1)


def _change(
    ctx: click.Context,
    name: str,
    mutate: Callable[[dict[str, Any], Record, Cluster], None],
    options: dict[str, Any],
) -> None:
    """Read the record, change its manifest, store it, and drive the rollout.

    ``options`` are the command's keyword arguments: drive options and connection flags.
    """
    from kubectl_rollout.rollout.record import save_spec

    drive = DriveOptions.pop_from(options)
    cluster = open_cluster(ctx, **options)

    def change(record: Record) -> Record:
        manifest = copy.deepcopy(record.manifest)
        mutate(manifest, record, cluster)
        return save_spec(cluster, manifest, parse_workload(manifest, default_namespace=record.namespace), record)

    record = _retrying_conflicts(cluster, cluster.namespace, name, change)
    if drive.wait:
        _finish(ctx, _drive(cluster, record.namespace, name, drive))


def _retrying_conflicts(cluster: Cluster, namespace: str, name: str, change: Callable[[Record], Record]) -> Record:
    """Apply ``change`` to a fresh read of the record; a running driver may write its status meanwhile."""
    from kubernetes.client.exceptions import ApiException

    from kubectl_rollout.rollout.record import StaleRecord, read

    for _ in range(5):
        try:
            return change(read(cluster, namespace, name))
        except StaleRecord:
            continue
        except ApiException as err:
            if err.status != 409:
                raise
    raise UserFacingError(f'managed workload "{name}" kept changing under us; try again')


# --- commands -----------------------------------------------------------------------------


def load_manifest(path: str) -> dict[str, Any]:
    import yaml

    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text()
    except OSError as err:
        raise UsageError(f"cannot read {path}: {err.strerror}") from err
    try:
        documents = [d for d in yaml.safe_load_all(text) if d]
    except yaml.YAMLError as err:
        raise InvalidManifest(f"{path} is not valid YAML or JSON: {err}") from err
    if len(documents) != 1 or not isinstance(documents[0], dict):
        raise InvalidManifest(
            f"{path} must hold exactly one apps/v1 Deployment manifest (found {len(documents)} documents)"
        )
    return documents[0]


@click.command("apply")
@click.option(
    "-f", "--filename", required=True, metavar="FILE", help="The Deployment manifest (YAML or JSON; - for stdin)."
)
@_drive_options
@global_options
@click.pass_context
def apply(ctx: click.Context, /, filename: str, **options: Any) -> None:
    """Create or update a managed workload from an apps/v1 Deployment manifest, and roll it out.

    The workload is driven by this plugin, not by the Deployment controller:
    its record is the ConfigMap rollout-plus.NAME, which owns its ReplicaSets.
    The rollout follows the Deployment controller's semantics (RollingUpdate
    with maxSurge/maxUnavailable, or Recreate), never shrinks old pods past a
    PodDisruptionBudget, and fails fast when new pods cannot start.
    """
    from kubectl_rollout.rollout.record import WorkloadNotFound, read, save_spec

    drive = DriveOptions.pop_from(options)
    manifest = load_manifest(filename)
    cluster = open_cluster(ctx, **options)
    spec = parse_workload(manifest, default_namespace=cluster.namespace)
    if manifest.get("metadata", {}).get("namespace") not in (None, spec.namespace):
        raise UsageError("the manifest's namespace and -n disagree")
    manifest.setdefault("metadata", {})["namespace"] = spec.namespace
    try:
        previous: Record | None = read(cluster, spec.namespace, spec.name)
    except WorkloadNotFound:
        previous = None
    if previous is not None and previous.spec.paused and "paused" not in manifest.get("spec", {}):
        # As kubectl apply's three-way merge keeps a field the manifest never set: a paused workload stays paused.
        manifest["spec"]["paused"] = True
        spec = parse_workload(manifest, default_namespace=cluster.namespace)
    save_spec(cluster, manifest, spec, previous)
    verb = "created" if previous is None else "configured"
    click.echo(f"workload/{spec.name} {verb}", err=drive.output == "jsonl")
    if drive.wait:
        _finish(ctx, _drive(cluster, spec.namespace, spec.name, drive))


@click.group("set")
def set_group() -> None:
    """Change one field of a managed workload and roll it out."""


@set_group.command("image")
@click.argument("name")
@click.argument("images", nargs=-1, required=True, metavar="CONTAINER=IMAGE...")
@_drive_options
@global_options
@click.pass_context
def set_image(ctx: click.Context, /, name: str, images: tuple[str, ...], **options: Any) -> None:
    """Set the image of containers of managed workload NAME (CONTAINER=IMAGE; * for every container)."""
    wanted: dict[str, str] = {}
    for pair in images:
        container, sep, image = pair.partition("=")
        if not sep or not container or not image:
            raise UsageError(f"{pair!r} is not CONTAINER=IMAGE; e.g. app=registry.example/app:v2")
        wanted[container] = image

    def mutate(manifest: dict[str, Any], _record: Record, _cluster: Cluster) -> None:
        containers = manifest["spec"]["template"]["spec"]["containers"]
        names = [c["name"] for c in containers]
        unknown = [c for c in wanted if c != "*" and c not in names]
        if unknown:
            raise UsageError(
                f'unable to find container named "{unknown[0]}" in workload {name} (containers: {", ".join(names)})'
            )
        for container in containers:
            image = wanted.get(container["name"], wanted.get("*"))
            if image:
                container["image"] = image

    _change(ctx, name, mutate, options)


@click.command("scale")
@click.argument("name")
@click.option("--replicas", type=int, required=True, help="The new number of replicas.")
@_drive_options
@global_options
@click.pass_context
def scale(ctx: click.Context, /, name: str, replicas: int, **options: Any) -> None:
    """Set the number of replicas of managed workload NAME (mid-rollout: proportionally, like the controller)."""
    if replicas < 0:
        raise UsageError(f"--replicas must be 0 or more, not {replicas}")

    def mutate(manifest: dict[str, Any], _record: Record, _cluster: Cluster) -> None:
        manifest["spec"]["replicas"] = replicas

    _change(ctx, name, mutate, options)


@click.command("restart")
@click.argument("name", metavar="NAME | KIND/NAME")
@click.option(
    "--grace-period",
    type=int,
    default=-1,
    show_default=True,
    help="KIND/NAME only: seconds each evicted pod gets to stop; -1 uses the pod's own.",
)
@click.option(
    "--dry-run",
    type=click.Choice(["none", "client", "server"]),
    default="none",
    show_default=True,
    help="KIND/NAME only: client prints the order in which pods would go; server sends dry-run evictions.",
)
@click.option(
    "--resume",
    is_flag=True,
    help="KIND/NAME only: continue a restart that stopped early, replacing only the pods it had not replaced yet.",
)
@_drive_options
@global_options
@click.pass_context
def restart(ctx: click.Context, /, name: str, grace_period: int, dry_run: str, resume: bool, **options: Any) -> None:
    """Replace every pod of a workload.

    NAME, a managed workload: a rolling update to a template with a new
    restartedAt annotation, as kubectl rollout restart does.

    KIND/NAME (deployment/, statefulset/ or daemonset/), a workload the plugin
    does not own: its pods are evicted one at a time through the Eviction API,
    so PodDisruptionBudgets decide, and the next pod goes only when the
    workload has all its pods available again. No new revision is created.
    A restart that stops early records how far it got on the workload (the
    label rollout-plus.kubectl.io/restart-cutoff); --resume continues it.
    """
    if "/" in name:
        restart_by_eviction(
            ctx,
            name,
            timeout=options.pop("timeout"),
            grace_period=grace_period,
            dry_run=dry_run,
            resume=resume,
            output=options.pop("output"),
            **options,
        )
        return
    if grace_period != -1 or dry_run != "none" or resume:
        raise UsageError(
            "--grace-period, --dry-run and --resume apply to KIND/NAME only (a workload restarted by eviction)"
        )

    def mutate(manifest: dict[str, Any], _record: Record, _cluster: Cluster) -> None:
        template = manifest["spec"]["template"].setdefault("metadata", {})
        template.setdefault("annotations", {})[RESTARTED_AT] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    _change(ctx, name, mutate, options)


def _set_paused(ctx: click.Context, name: str, paused: bool, flags: dict[str, Any]) -> None:
    from kubectl_rollout.rollout.record import read, save_spec, save_status

    cluster = open_cluster(ctx, **flags)
    record = read(cluster, cluster.namespace, name)
    if bool(record.spec.paused) == paused:
        state = "paused" if paused else "not paused"
        raise UsageError(
            f'workload "{name}" is already {state}' if paused else f'workload "{name}" is not paused; nothing to resume'
        )
    reason, message = (PAUSED_REASON, "Deployment is paused") if paused else (RESUMED, "Deployment is resumed")

    def change(record: Record) -> Record:
        manifest = copy.deepcopy(record.manifest)
        manifest["spec"]["paused"] = paused
        record = save_spec(cluster, manifest, parse_workload(manifest, default_namespace=record.namespace), record)
        progressing = dataclasses.replace(
            condition("Progressing", True, reason, message, time.time()), status="Unknown"
        )
        conditions = set_condition(record.status.conditions, progressing)
        return save_status(cluster, record, dataclasses.replace(record.status, conditions=conditions))

    _retrying_conflicts(cluster, cluster.namespace, name, change)
    click.echo(f"workload/{name} {'paused' if paused else 'resumed'}")


@click.command("pause")
@click.argument("name")
@global_options
@click.pass_context
def pause(ctx: click.Context, /, name: str, **flags: Any) -> None:
    """Pause managed workload NAME: no rollout progress, no deadline, until resumed (scaling still applies)."""
    _set_paused(ctx, name, True, flags)


@click.command("resume")
@click.argument("name")
@_drive_options
@global_options
@click.pass_context
def resume(ctx: click.Context, /, name: str, **options: Any) -> None:
    """Resume paused managed workload NAME and drive its rollout."""
    drive = DriveOptions.pop_from(options)
    _set_paused(ctx, name, False, options)
    if drive.wait:
        cluster = open_cluster(ctx, **options)
        _finish(ctx, _drive(cluster, cluster.namespace, name, drive))


def _watch(cluster: Cluster, namespace: str, name: str, timeout: float | None) -> RolloutResult:
    """Drive the rollout; while another driver holds the lease, follow the record's status instead."""
    from kubectl_rollout.kube.watched_collection import WatchedCollection
    from kubectl_rollout.kube.workload_lease import LEASE_SECONDS, LeaseHeld
    from kubectl_rollout.rollout.driver import RolloutResult
    from kubectl_rollout.rollout.record import from_config_map, record_name

    deadline = None if timeout is None else time.monotonic() + timeout
    printed = ""
    while True:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            return _drive(cluster, namespace, name, DriveOptions(timeout=left))
        except LeaseHeld as held:
            if not printed:
                click.echo(held.message.split(";")[0] + "; following its progress", err=True)
        records = WatchedCollection(
            cluster.core.list_namespaced_config_map,
            namespace=namespace,
            field_selector=f"metadata.name={record_name(name)}",
            description="the record",
        )
        records.start()
        try:
            # Follow until the rollout ends, or until the lease could have lapsed: then try to drive again.
            until = time.monotonic() + LEASE_SECONDS
            while time.monotonic() < until:
                raw = records.get((namespace, record_name(name)))
                if raw is None:
                    return RolloutResult(
                        succeeded=False,
                        message=f'managed workload "{name}" was deleted',
                        outcome=RolloutOutcome.DELETED,
                    )
                record = from_config_map(raw)
                message, done, failed = rollout_status_message(name, record.target(), record.status)
                if message != printed:
                    click.echo(message)
                    printed = message
                if done:
                    return RolloutResult(succeeded=not failed, message=message, outcome=RolloutOutcome.COMPLETE)
                if deadline is not None and time.monotonic() > deadline:
                    return RolloutResult(
                        succeeded=False,
                        message=f"timed out after {timeout:g}s: {message}",
                        outcome=RolloutOutcome.TIMED_OUT,
                    )
                changed = partial(_changed, namespace=namespace, name=name, resource_version=record.resource_version)
                records.wait_until(changed, 1.0, None)
        finally:
            records.stop()


def _changed(records: WatchedCollection, namespace: str, name: str, resource_version: str) -> bool:
    from kubectl_rollout.rollout.record import record_name

    current = records.objects_locked().get((namespace, record_name(name)))
    return current is None or current.metadata.resource_version != resource_version


@click.command("status")
@click.argument("name")
@click.option("-w", "--watch", is_flag=True, help="Follow (and drive, if no one else does) until the rollout ends.")
@click.option("--timeout", default=None, callback=_duration, metavar="DURATION", help="Stop watching after this long.")
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
@global_options
@click.pass_context
def status(ctx: click.Context, /, name: str, watch: bool, timeout: float | None, output: str, **flags: Any) -> None:
    """Show the rollout status of managed workload NAME, worded like kubectl rollout status."""
    from kubectl_rollout.rollout.record import read

    cluster = open_cluster(ctx, **flags)
    record = read(cluster, cluster.namespace, name)
    if watch:
        _finish(ctx, _watch(cluster, record.namespace, name, timeout))
        return
    message, _done, failed = rollout_status_message(name, record.target(), record.status)
    if output == "json":
        click.echo(
            json.dumps(
                {
                    "name": name,
                    "namespace": record.namespace,
                    "generation": record.generation,
                    "message": message,
                    "status": record.status.as_dict(),
                },
                indent=2,
            )
        )
    else:
        click.echo(message)
    if failed:
        ctx.exit(1)


def _replica_sets(cluster: Cluster, record: Record) -> list[Any]:
    from kubectl_rollout.rollout import replica_sets
    from kubectl_rollout.rollout.record import WORKLOAD_LABEL

    listing = cluster.apps.list_namespaced_replica_set(
        record.namespace, label_selector=f"{WORKLOAD_LABEL}={record.name}"
    )
    return replica_sets.owned(listing.items, record)


def _by_revision(cluster: Cluster, record: Record) -> dict[int, Any]:
    from kubectl_rollout.rollout import replica_sets

    revisions: dict[int, Any] = {}
    for rs in _replica_sets(cluster, record):
        revisions[replica_sets.to_managed(rs).revision] = rs
    return revisions


@click.command("history")
@click.argument("name")
@click.option("--revision", type=int, default=0, help="Show the pod template of this revision.")
@global_options
@click.pass_context
def history(ctx: click.Context, /, name: str, revision: int, **flags: Any) -> None:
    """List the revisions of managed workload NAME with their change-cause, as kubectl rollout history does."""
    import yaml

    from kubectl_rollout.rollout import replica_sets
    from kubectl_rollout.rollout.record import CHANGE_CAUSE, read

    cluster = open_cluster(ctx, **flags)
    record = read(cluster, cluster.namespace, name)
    revisions = _by_revision(cluster, record)
    if revision:
        if revision not in revisions:
            raise UserFacingError(
                f"unable to find the specified revision {revision} of workload {name}; "
                f"revisions: {', '.join(map(str, sorted(revisions))) or 'none'}"
            )
        rs = revisions[revision]
        click.echo(f"workload/{name} with revision #{revision}")
        click.echo(yaml.safe_dump({"Pod Template": replica_sets.template_of(rs)}, sort_keys=False).rstrip())
        return
    click.echo(f"workload/{name}")
    click.echo("REVISION  CHANGE-CAUSE")
    for number in sorted(revisions):
        cause = (revisions[number].metadata.annotations or {}).get(CHANGE_CAUSE, "<none>")
        click.echo(f"{number:<9} {cause}")


@click.command("undo")
@click.argument("name")
@click.option("--to-revision", type=int, default=0, help="The revision to return to (default: the previous one).")
@_drive_options
@global_options
@click.pass_context
def undo(ctx: click.Context, /, name: str, to_revision: int, **options: Any) -> None:
    """Return managed workload NAME to a previous revision's pod template (its ReplicaSet is reused)."""
    from kubectl_rollout.rollout import replica_sets

    def mutate(manifest: dict[str, Any], record: Record, cluster: Cluster) -> None:
        revisions = _by_revision(cluster, record)
        current = max(revisions, default=0)
        wanted = to_revision or max((r for r in revisions if r != current), default=0)
        if wanted not in revisions or not wanted:
            raise UserFacingError(
                f"unable to find the specified revision {to_revision or 'before ' + str(current)} "
                f"of workload {name}; revisions: {', '.join(map(str, sorted(revisions))) or 'none'}"
            )
        manifest["spec"]["template"] = replica_sets.template_of(revisions[wanted])
        click.echo(f"workload/{name} rolling back to revision {wanted}", err=True)

    _change(ctx, name, mutate, options)


@click.command("delete")
@click.argument("name")
@global_options
@click.pass_context
def delete(ctx: click.Context, /, name: str, **flags: Any) -> None:
    """Delete managed workload NAME: its record, and through it every ReplicaSet and pod."""
    from kubectl_rollout.rollout.record import read, record_name

    cluster = open_cluster(ctx, **flags)
    record = read(cluster, cluster.namespace, name)
    cluster.core.delete_namespaced_config_map(record_name(name), record.namespace, propagation_policy="Foreground")
    click.echo(f"workload/{name} deleted")


def _deployment_name(target: str) -> str:
    kind, sep, name = target.partition("/")
    if not sep:
        return target
    if kind not in ("deployment", "deployments", "deploy", "deployment.apps", "deployments.apps"):
        raise UsageError(f"only Deployments can be adopted, not {kind!r}; e.g. adopt deployment/web")
    return name


@click.command("adopt")
@click.argument("target", metavar="deployment/NAME")
@global_options
@click.pass_context
def adopt(ctx: click.Context, /, target: str, **flags: Any) -> None:
    """Turn Deployment NAME into a managed workload, with zero pod restarts.

    The Deployment is deleted with the Orphan policy; its ReplicaSets and pods
    stay and become owned by the workload's record.
    """
    from kubectl_rollout.rollout import adoption as workload_adoption

    cluster = open_cluster(ctx, **flags)
    name = _deployment_name(target)
    record = workload_adoption.adopt(cluster, cluster.namespace, name)
    click.echo(f"workload/{name} adopted from deployment.apps/{name} (revision {record.generation})")


@click.command("release")
@click.argument("name")
@global_options
@click.pass_context
def release(ctx: click.Context, /, name: str, **flags: Any) -> None:
    """Hand managed workload NAME back to a real Deployment, with zero pod restarts."""
    from kubectl_rollout.rollout import adoption as workload_adoption

    cluster = open_cluster(ctx, **flags)
    workload_adoption.release(cluster, cluster.namespace, name)
    click.echo(f"deployment.apps/{name} created from workload/{name}; the Deployment controller drives it again")


COMMANDS = [apply, set_group, scale, status, history, undo, pause, resume, restart, delete, adopt, release]
