"""Client-side rollouts of managed workloads: ``apply``, ``set image``, ``scale``, ``status``, ``history``,
``undo``, ``pause``, ``resume``, ``restart``, ``delete``; and their canary steps: ``promote``, ``abort``,
``retry``.

Every command that changes the spec records the change in the workload's
ConfigMap and then drives the rollout to its end (``--no-wait`` only records
it; ``status -w`` drives it later, from here or anywhere). Exit codes: 0
rolled out; 1 failed (progress deadline exceeded, new pods failing,
interrupted); 2 bad usage or an invalid manifest.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kubectl_rollout.cli.bounded_types import GRACE_PERIOD, OBJECT_NAME, REPLICAS, REVISION, count
from kubectl_rollout.cli.cluster_completion import complete_deployments, complete_restart_targets, complete_workloads
from kubectl_rollout.cli.job_options import agent_options
from kubectl_rollout.cli.jsonl_output import JsonLinesPrinter
from kubectl_rollout.cli.options import duration_callback, global_options, open_cluster
from kubectl_rollout.cli.restart_commands import restart_by_eviction
from kubectl_rollout.cli.rollout_output import rollout_printer
from kubectl_rollout.jobs import next_steps
from kubectl_rollout.jobs.events.rollout import ContainerImage
from kubectl_rollout.kube.durations import go_duration, parse_duration
from kubectl_rollout.kube.errors import UsageError, UserFacingError
from kubectl_rollout.rollout.bluegreen.format import (
    ACTIVE_SERVICE,
    BLUE_GREEN,
    LONGEST_WAIT_SECONDS,
    PREVIEW_SERVICE,
    SCALE_DOWN_DELAY,
    STRATEGY_ANNOTATION,
    BlueGreen,
    blue_green_of,
)
from kubectl_rollout.rollout.spec import InvalidManifest
from kubectl_rollout.rollout.steps.format import STEPS_ANNOTATION

if TYPE_CHECKING:
    from kubectl_rollout.jobs.events.base import Envelope

    # These import the kubernetes client (and yaml): each function imports what
    # it uses when it runs, so that --help and TAB completion do without them.
    from kubectl_rollout.jobs.spec import DriveOptions, RolloutAction
    from kubectl_rollout.kube.cluster_access import Cluster
    from kubectl_rollout.kube.permissions import Permission


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
            type=count(at_least=1),
            default=3,
            show_default=True,
            help="Fail the rollout once a new pod crash-loops this many restarts (image pull failures fail at once).",
        ),
        click.option("-o", "--output", type=click.Choice(["text", "jsonl"]), default="text", show_default=True),
    ]
    for option in reversed(options):
        command = option(command)
    return agent_options(command)


def _pop_drive(options: dict[str, Any]) -> tuple[DriveOptions, str]:
    """Take the drive options and -o out of a command's keyword arguments, leaving the connection flags."""
    from kubectl_rollout.jobs.spec import DriveOptions

    names = [f.name for f in dataclasses.fields(DriveOptions)]
    drive = DriveOptions(**{name: options.pop(name) for name in names if name in options})
    return drive, options.pop("output", "text")


def _run_job(
    ctx: click.Context,
    cluster: Cluster,
    action: RolloutAction,
    output: str,
    flags: dict[str, Any],
    *,
    use_agent: bool | None = False,
    detach: bool = False,
) -> None:
    """Run a rollout job through the job runner (in the agent, or here), print its events, and exit as it ended.

    ``use_agent``: False runs it here (pause: it ends at once); None lets the terminal decide (``wants_agent``).
    """
    from kubectl_rollout.cli.job_commands import run_job_command
    from kubectl_rollout.cli.options import connection_of
    from kubectl_rollout.jobs.spec import JobKind, JobSpec

    spec = JobSpec(kind=JobKind.ROLLOUT, connection=connection_of(ctx, cluster, flags), rollout=action)
    if output == "jsonl":
        sink: Callable[[Envelope], None] = JsonLinesPrinter(sys.stdout)
    else:
        sink = rollout_printer(sys.stdout, sys.stderr)
    run_job_command(
        ctx,
        spec,
        cluster,
        sink,
        on_interrupt="interrupted: the rollout's state is in the cluster; continue it with "
        + next_steps.follow_rollout(action.workload),
        close=lambda: None,
        use_agent=use_agent,
        detach=detach,
    )


def _change(ctx: click.Context, action: RolloutAction, options: dict[str, Any]) -> None:
    """Record a change of the spec and drive the rollout; ``options`` are the command's drive and connection flags."""
    use_agent, detach = options.pop("use_agent", None), options.pop("detach", False)
    drive, output = _pop_drive(options)
    cluster = open_cluster(ctx, **options)
    _run_job(
        ctx, cluster, dataclasses.replace(action, drive=drive), output, options, use_agent=use_agent, detach=detach
    )


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


def _scale_down_delay(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """--scale-down-delay: a duration from 0 to 24h, written to the annotation as Go spells it (``1m30s``)."""
    seconds = duration_callback(ctx, param, value)
    if seconds is None:
        return None
    if seconds > LONGEST_WAIT_SECONDS:
        raise click.BadParameter(f"{value!r} is longer than {go_duration(LONGEST_WAIT_SECONDS)}", param=param)
    return go_duration(seconds)


@click.command("apply")
@click.option(
    "-f", "--filename", required=True, metavar="FILE", help="The Deployment manifest (YAML or JSON; - for stdin)."
)
@click.option(
    "--steps",
    metavar="STEPS",
    default=None,
    help="Canary steps for the workload's next changes, stored in its annotation rollout-plus.io/steps "
    "(e.g. 'setWeight 10; pause; setWeight 50; pause 5m'; see docs/canary.md). An empty string removes them.",
)
@click.option(
    "--active-service",
    metavar="NAME",
    default=None,
    help="Blue-green: the Service whose selector is switched to the new ReplicaSet at promote, stored in the "
    "annotations rollout-plus.io/strategy: blueGreen and rollout-plus.io/active-service (see docs/canary.md).",
)
@click.option(
    "--preview-service",
    metavar="NAME",
    default=None,
    help="Blue-green: the Service that selects the new ReplicaSet as soon as it exists "
    "(annotation rollout-plus.io/preview-service).",
)
@click.option(
    "--scale-down-delay",
    metavar="DURATION",
    default=None,
    callback=_scale_down_delay,
    help="Blue-green: how long the old ReplicaSet keeps its pods after the switch (default 30s; annotation "
    "rollout-plus.io/scale-down-delay).",
)
@click.option(
    "--plan",
    "plan_only",
    is_flag=True,
    help="Print the counts each canary step gives (blue-green: what each side holds) and the peak pod count, "
    "and change nothing.",
)
@_drive_options
@global_options
@click.pass_context
def apply(
    ctx: click.Context,
    /,
    filename: str,
    steps: str | None,
    active_service: str | None,
    preview_service: str | None,
    scale_down_delay: str | None,
    plan_only: bool,
    **options: Any,
) -> None:
    """Create or update a managed workload from an apps/v1 Deployment manifest, and roll it out.

    The workload is driven by this plugin, not by the Deployment controller:
    its record is the ConfigMap rollout-plus.NAME, which owns its ReplicaSets.
    The rollout follows the Deployment controller's semantics (RollingUpdate
    with maxSurge/maxUnavailable, or Recreate), never shrinks old pods past a
    PodDisruptionBudget, and fails fast when new pods cannot start.
    """
    from kubectl_rollout.jobs.spec import ActionKind, RolloutAction

    manifest = load_manifest(filename)
    given = (manifest.get("metadata") or {}).get("namespace")
    if given and options.get("namespace") and given != options["namespace"]:
        # kubectl apply's words for the same mistake; checked before the cluster is touched
        raise UsageError(
            f'the namespace from the provided object "{given}" does not match the namespace '
            f"\"{options['namespace']}\". You must pass '--namespace={given}' to perform this operation."
        )
    blue_green = {
        STRATEGY_ANNOTATION: BLUE_GREEN if active_service is not None else None,
        ACTIVE_SERVICE: active_service,
        PREVIEW_SERVICE: preview_service,
        SCALE_DOWN_DELAY: scale_down_delay,
    }
    if steps is not None or any(value is not None for value in blue_green.values()):
        annotations = manifest.setdefault("metadata", {}).setdefault("annotations", {}) or {}
        manifest["metadata"]["annotations"] = annotations
        if steps is not None and steps.strip():
            annotations[STEPS_ANNOTATION] = steps
        elif steps is not None:
            annotations.pop(STEPS_ANNOTATION, None)
        # Checked with the manifest's own annotations before anything is written (a preview Service without an
        # active one is refused there, naming what is missing).
        annotations.update({key: value for key, value in blue_green.items() if value is not None})
    if plan_only:
        _print_canary_plan(manifest, options.get("namespace") or "default")
        return
    _change(ctx, RolloutAction(kind=ActionKind.APPLY, manifest=manifest), options)


def _print_canary_plan(manifest: dict[str, Any], namespace: str) -> None:
    """The counts each step gives, from the manifest alone (nothing is read from or sent to the cluster)."""
    from kubectl_rollout.rollout.spec import parse_workload
    from kubectl_rollout.rollout.steps.format import parse_steps
    from kubectl_rollout.rollout.steps.weights import plan_steps

    spec = parse_workload(manifest, default_namespace=namespace)
    settings = blue_green_of(spec.annotations, workload=spec.name, strategy_type=spec.strategy)
    if settings is not None:
        _print_blue_green_plan(spec.name, settings, spec.replicas)
        return
    text = spec.annotations.get(STEPS_ANNOTATION, "")
    if not text.strip():
        raise UsageError(
            f'workload "{spec.name}" has no canary steps: give them with --steps or the annotation {STEPS_ANNOTATION}'
        )
    given = parse_steps(text, workload=spec.name)
    plan = plan_steps(replicas=spec.replicas, surge=spec.max_surge, unavailable=spec.max_unavailable, steps=given)
    click.echo(
        f"workload/{spec.name}: {plan.replicas} replicas, at most {plan.most_pods} pods (maxSurge), at least "
        f"{plan.least_available} available (maxUnavailable)"
    )
    click.echo(f"{'STEP':<6}{'':<28}{'CANARY':>7}{'STABLE':>7}{'PEAK PODS':>10}")
    for step in plan.steps:
        # After the last step the new revision takes every replica: shown as the step it amounts to.
        number = str(step.index + 1) if step.index < len(given) else "end"
        text_of = str(step.step)
        click.echo(f"{number:<6}{text_of:<28}{step.counts.canary:>7}{step.counts.stable:>7}{step.peak_pods:>10}")
    click.echo(f"peak: {plan.peak_pods} pods")


def _print_blue_green_plan(name: str, settings: BlueGreen, replicas: int) -> None:
    """What a blue-green rollout holds at each point: the new and the old ReplicaSet, and the pods in all."""
    from kubectl_rollout.rollout.bluegreen.plan import plan_rows

    rows = plan_rows(settings, replicas=replicas)
    click.echo(f"workload/{name}: {replicas} replicas, {settings.describe()}")
    click.echo(f"{'WHEN':<44}{'NEW':>5}{'OLD':>5}{'PODS':>6}")
    for row in rows:
        click.echo(f"{row.when:<44}{row.new:>5}{row.old:>5}{row.pods:>6}")
    click.echo(f"peak: {max(row.pods for row in rows)} pods (blue-green holds both revisions, beyond maxSurge)")


@click.group("set")
def set_group() -> None:
    """Change one field of a managed workload and roll it out."""


@set_group.command("image")
@click.argument("name", type=OBJECT_NAME, shell_complete=complete_workloads)
@click.argument("images", nargs=-1, required=True, metavar="CONTAINER=IMAGE...")
@_drive_options
@global_options
@click.pass_context
def set_image(ctx: click.Context, /, name: str, images: tuple[str, ...], **options: Any) -> None:
    """Set the image of containers of managed workload NAME (CONTAINER=IMAGE; * for every container)."""
    from kubectl_rollout.jobs.spec import ActionKind, RolloutAction

    wanted: dict[str, str] = {}
    for pair in images:
        container, sep, image = pair.partition("=")
        if not sep or not container or not image:
            raise UsageError(f"{pair!r} is not CONTAINER=IMAGE; e.g. app=registry.example/app:v2")
        wanted[container] = image
    pairs = tuple(ContainerImage(container=c, image=i) for c, i in wanted.items())
    _change(ctx, RolloutAction(kind=ActionKind.SET_IMAGE, name=name, images=pairs), options)


@click.command("scale")
@click.argument("name", type=OBJECT_NAME, shell_complete=complete_workloads)
@click.option(
    "--replicas",
    type=REPLICAS,
    required=True,
    help="The new number of replicas (0 to 2147483647, an int32 as in the API).",
)
@_drive_options
@global_options
@click.pass_context
def scale(ctx: click.Context, /, name: str, replicas: int, **options: Any) -> None:
    """Set the number of replicas of managed workload NAME (mid-rollout: proportionally, like the controller)."""
    from kubectl_rollout.jobs.spec import ActionKind, RolloutAction

    if replicas < 0:
        raise UsageError(f"--replicas must be 0 or more, not {replicas}")
    _change(ctx, RolloutAction(kind=ActionKind.SCALE, name=name, replicas=replicas), options)


@click.command("restart")
@click.argument("name", metavar="NAME | KIND/NAME", shell_complete=complete_restart_targets)
@click.option(
    "--grace-period",
    type=GRACE_PERIOD,
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
def restart(
    ctx: click.Context,
    /,
    name: str,
    grace_period: int,
    dry_run: str,
    resume: bool,
    use_agent: bool | None,
    detach: bool,
    **options: Any,
) -> None:
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
    from kubectl_rollout.jobs.spec import ActionKind, RolloutAction

    if "/" in name:
        restart_by_eviction(
            ctx,
            name,
            timeout=options.pop("timeout"),
            grace_period=grace_period,
            dry_run=dry_run,
            resume=resume,
            output=options.pop("output"),
            use_agent=use_agent,
            detach=detach,
            **options,
        )
        return
    if grace_period != -1 or dry_run != "none" or resume:
        raise UsageError(
            "--grace-period, --dry-run and --resume apply to KIND/NAME only (a workload restarted by eviction)"
        )

    _change(
        ctx, RolloutAction(kind=ActionKind.RESTART, name=name), {**options, "use_agent": use_agent, "detach": detach}
    )


@click.command("pause")
@click.argument("name", type=OBJECT_NAME, shell_complete=complete_workloads)
@global_options
@click.pass_context
def pause(ctx: click.Context, /, name: str, **flags: Any) -> None:
    """Pause managed workload NAME: no rollout progress, no deadline, until resumed (scaling still applies)."""
    from kubectl_rollout.jobs.spec import ActionKind, RolloutAction

    cluster = open_cluster(ctx, **flags)
    _run_job(ctx, cluster, RolloutAction(kind=ActionKind.PAUSE, name=name), "text", flags)


@click.command("resume")
@click.argument("name", type=OBJECT_NAME, shell_complete=complete_workloads)
@_drive_options
@global_options
@click.pass_context
def resume(ctx: click.Context, /, name: str, **options: Any) -> None:
    """Resume paused managed workload NAME and drive its rollout."""
    from kubectl_rollout.jobs.spec import ActionKind, RolloutAction

    _change(ctx, RolloutAction(kind=ActionKind.RESUME, name=name), options)


@click.command("status")
@click.argument("name", type=OBJECT_NAME, shell_complete=complete_workloads)
@click.option("-w", "--watch", is_flag=True, help="Follow (and drive, if no one else does) until the rollout ends.")
@click.option("--timeout", default=None, callback=_duration, metavar="DURATION", help="Stop watching after this long.")
@click.option(
    "-o",
    "--output",
    type=click.Choice(["text", "json", "jsonl"]),
    default="text",
    show_default=True,
    help="json: the status once; jsonl (with -w): the job's events, one per line.",
)
@agent_options
@global_options
@click.pass_context
def status(
    ctx: click.Context,
    /,
    name: str,
    watch: bool,
    timeout: float | None,
    output: str,
    use_agent: bool | None,
    detach: bool,
    **flags: Any,
) -> None:
    """Show the rollout status of managed workload NAME, worded like kubectl rollout status."""
    from kubectl_rollout.jobs.spec import ActionKind, DriveOptions, RolloutAction
    from kubectl_rollout.rollout import operations
    from kubectl_rollout.rollout.bluegreen.record_state import blue_green_state, blue_green_status
    from kubectl_rollout.rollout.canary.record_state import canary_state, step_status

    if output == "jsonl" and not watch:
        raise UsageError("-o jsonl prints a job's events: use it with -w (or -o json for the status once)")
    cluster = open_cluster(ctx, **flags)
    if watch:
        action = RolloutAction(kind=ActionKind.WATCH, name=name, drive=DriveOptions(timeout=timeout))
        output = "jsonl" if output == "jsonl" else "text"
        _run_job(ctx, cluster, action, output, flags, use_agent=use_agent, detach=detach)
        return
    if detach:
        raise UsageError("--detach follows a rollout in the agent: use it with -w")
    report = operations.rollout_status(cluster, cluster.namespace, name)
    step = step_status(report.record) or blue_green_status(report.record)
    if output == "json":
        record = report.record
        click.echo(
            json.dumps(
                {
                    "name": name,
                    "namespace": record.namespace,
                    "generation": record.generation,
                    "message": report.message,
                    "status": record.status.as_dict(),
                    "canary": canary_state(report.record),
                    "blueGreen": blue_green_state(report.record),
                },
                indent=2,
            )
        )
    else:
        click.echo(report.message)
        if step:
            click.echo(step)
    if report.phase.failed:
        ctx.exit(1)


@click.command("history")
@click.argument("name", type=OBJECT_NAME, shell_complete=complete_workloads)
@click.option("--revision", type=REVISION, default=0, help="Show the pod template of this revision.")
@global_options
@click.pass_context
def history(ctx: click.Context, /, name: str, revision: int, **flags: Any) -> None:
    """List the revisions of managed workload NAME with their change-cause, as kubectl rollout history does."""
    import yaml

    from kubectl_rollout.rollout import operations

    cluster = open_cluster(ctx, **flags)
    revisions = {r.number: r for r in operations.history(cluster, cluster.namespace, name)}
    if revision:
        if revision not in revisions:
            raise UserFacingError(
                f"unable to find the specified revision {revision} of workload {name}; "
                f"revisions: {', '.join(map(str, sorted(revisions))) or 'none'}"
            )
        click.echo(f"workload/{name} with revision #{revision}")
        click.echo(yaml.safe_dump({"Pod Template": revisions[revision].template}, sort_keys=False).rstrip())
        return
    click.echo(f"workload/{name}")
    click.echo("REVISION  CHANGE-CAUSE")
    for number in sorted(revisions):
        cause = revisions[number].change_cause
        click.echo(f"{number:<9} {cause if cause is not None else '<none>'}")


@click.command("undo")
@click.argument("name", type=OBJECT_NAME, shell_complete=complete_workloads)
@click.option("--to-revision", type=REVISION, default=0, help="The revision to return to (default: the previous one).")
@_drive_options
@global_options
@click.pass_context
def undo(ctx: click.Context, /, name: str, to_revision: int, **options: Any) -> None:
    """Return managed workload NAME to a previous revision's pod template (its ReplicaSet is reused)."""
    from kubectl_rollout.jobs.spec import ActionKind, RolloutAction

    _change(ctx, RolloutAction(kind=ActionKind.UNDO, name=name, to_revision=to_revision), options)


@click.command("delete")
@click.argument("name", type=OBJECT_NAME, shell_complete=complete_workloads)
@global_options
@click.pass_context
def delete(ctx: click.Context, /, name: str, **flags: Any) -> None:
    """Delete managed workload NAME: its record, and through it every ReplicaSet and pod."""
    from kubectl_rollout.rollout import operations
    from kubectl_rollout.rollout.permissions import delete_permissions

    cluster = open_cluster(ctx, **flags)
    _require(cluster, delete_permissions(cluster.namespace), "delete", name)
    operations.delete(cluster, cluster.namespace, name)
    click.echo(f"workload/{name} deleted")


def _require(cluster: Cluster, needed: list[Permission], *words: str) -> None:
    """Permissions first, as the job commands check theirs: one line naming what is missing, nothing changed."""
    from kubectl_rollout.kube.permissions import require

    require(cluster, needed, action=next_steps.command(*words))


def _deployment_name(target: str) -> str:
    kind, sep, name = target.partition("/")
    if not sep:
        return target
    if kind not in ("deployment", "deployments", "deploy", "deployment.apps", "deployments.apps"):
        raise UsageError(f"only Deployments can be adopted, not {kind!r}; e.g. adopt deployment/web")
    return name


@click.command("adopt")
@click.argument("target", metavar="deployment/NAME", shell_complete=complete_deployments)
@global_options
@click.pass_context
def adopt(ctx: click.Context, /, target: str, **flags: Any) -> None:
    """Turn Deployment NAME into a managed workload, with zero pod restarts.

    The Deployment is deleted with the Orphan policy; its ReplicaSets and pods
    stay and become owned by the workload's record.
    """
    from kubectl_rollout.rollout import adoption as workload_adoption
    from kubectl_rollout.rollout.permissions import adopt_permissions

    name = _deployment_name(target)
    cluster = open_cluster(ctx, **flags)
    _require(cluster, adopt_permissions(cluster.namespace), "adopt", target)
    record = workload_adoption.adopt(cluster, cluster.namespace, name)
    click.echo(f"workload/{name} adopted from deployment.apps/{name} (revision {record.generation})")


@click.command("release")
@click.argument("name", type=OBJECT_NAME, shell_complete=complete_workloads)
@global_options
@click.pass_context
def release(ctx: click.Context, /, name: str, **flags: Any) -> None:
    """Hand managed workload NAME back to a real Deployment, with zero pod restarts."""
    from kubectl_rollout.rollout import adoption as workload_adoption
    from kubectl_rollout.rollout.permissions import release_permissions

    cluster = open_cluster(ctx, **flags)
    _require(cluster, release_permissions(cluster.namespace), "release", name)
    workload_adoption.release(cluster, cluster.namespace, name)
    click.echo(f"deployment.apps/{name} created from workload/{name}; the Deployment controller drives it again")


@click.command("promote")
@click.argument("name", type=OBJECT_NAME, shell_complete=complete_workloads)
@click.option("--full", is_flag=True, help="Skip every remaining step: the new revision takes every replica.")
@_drive_options
@global_options
@click.pass_context
def promote(ctx: click.Context, /, name: str, full: bool, **options: Any) -> None:
    """Move the canary of managed workload NAME past its current step (a pause, a gate, a weight).

    The steps go on from the next one (--full: the new revision takes every
    replica at once, inside maxSurge and maxUnavailable). A workload without
    canary steps, or with no canary under way, is refused and nothing changes.
    """
    from kubectl_rollout.jobs.spec import ActionKind, RolloutAction

    _change(ctx, RolloutAction(kind=ActionKind.PROMOTE, name=name, full=full), options)


@click.command("abort")
@click.argument("name", type=OBJECT_NAME, shell_complete=complete_workloads)
@_drive_options
@global_options
@click.pass_context
def abort(ctx: click.Context, /, name: str, **options: Any) -> None:
    """Abort the canary of managed workload NAME: the stable ReplicaSet back at full size, the canary at 0.

    The workload stays aborted until retry or a new change of its pod
    template; the job waits until the stable ReplicaSet is available again.
    """
    from kubectl_rollout.jobs.spec import ActionKind, RolloutAction

    _change(ctx, RolloutAction(kind=ActionKind.ABORT, name=name), options)


@click.command("retry")
@click.argument("name", type=OBJECT_NAME, shell_complete=complete_workloads)
@_drive_options
@global_options
@click.pass_context
def retry(ctx: click.Context, /, name: str, **options: Any) -> None:
    """Start the aborted canary of managed workload NAME again from its first step."""
    from kubectl_rollout.jobs.spec import ActionKind, RolloutAction

    _change(ctx, RolloutAction(kind=ActionKind.RETRY, name=name), options)


COMMANDS = [
    apply,
    set_group,
    scale,
    status,
    history,
    undo,
    pause,
    resume,
    restart,
    delete,
    adopt,
    release,
    promote,
    abort,
    retry,
]
