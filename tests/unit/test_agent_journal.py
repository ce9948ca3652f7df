"""The journal on a temporary file: schema and migrations, intent before action, append-only events, pruning."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from kubectl_rollout.agent.errors import AgentError
from kubectl_rollout.agent.host.journal import DAY, MIGRATIONS, SCHEMA_VERSION, Journal
from kubectl_rollout.jobs.events.base import Envelope
from kubectl_rollout.jobs.events.job import JobFinished, JobStarted, JobState
from kubectl_rollout.jobs.spec import Connection, DrainJob, JobKind, JobResult, JobSpec

SPEC = JobSpec(
    kind=JobKind.DRAIN,
    connection=Connection(kubeconfig=("/home/u/.kube/config",), context="prod", namespace="default"),
    drain=DrainJob(nodes=("n1",)),
)


def _append(journal: Journal, job: str, seq: int, event: JobStarted | JobFinished) -> None:
    envelope = Envelope(job=job, seq=seq, at=1.0 * seq, event=event)
    journal.append(envelope, json.dumps(envelope.as_dict()))


def test_a_new_journal_is_in_wal_mode_at_the_latest_schema(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.sqlite3")
    assert journal.schema_version() == SCHEMA_VERSION == len(MIGRATIONS)
    journal.close()
    with sqlite3.connect(tmp_path / "j.sqlite3") as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_an_older_journal_is_migrated_and_keeps_its_jobs(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    old = Journal(path, migrations=MIGRATIONS[:1])
    assert old.schema_version() == 1
    with sqlite3.connect(path) as db:
        db.execute(
            "INSERT INTO jobs (id, kind, target, spec, state, created_at) VALUES ('j1', 'drain', 'node/n1', ?, "
            "'running', 5)",
            (SPEC.to_json(),),
        )
    old.close()
    journal = Journal(path)
    assert journal.schema_version() == SCHEMA_VERSION
    [info] = journal.unfinished()
    assert (info.id, info.runs, info.cancel_requested) == ("j1", 0, False)
    journal.close()


def test_who_submitted_a_job_survives_reopening_and_older_jobs_say_nobody(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    # A journal from before submitted_by was kept, with one job in it.
    before = Journal(path, migrations=MIGRATIONS[:4])
    # The old schema has no submitted_by column: the job goes in as that agent wrote it.
    with sqlite3.connect(path) as db:
        db.execute(
            "INSERT INTO jobs (id, kind, target, spec, state, created_at) VALUES ('old', 'drain', 'node/n1', ?, "
            "'succeeded', 5)",
            (SPEC.to_json(),),
        )
    before.close()
    journal = Journal(path)
    journal.create_job("new", SPEC, now=10.0, submitted_by="tui (pid 4242)")
    journal.close()
    # An agent restart is the journal opened again.
    reopened = Journal(path)
    assert reopened.schema_version() == len(MIGRATIONS)
    assert reopened.get("new").submitted_by == "tui (pid 4242)"  # type: ignore[union-attr]
    assert reopened.get("old").submitted_by == ""  # type: ignore[union-attr]
    reopened.close()


def test_a_journal_from_a_newer_agent_is_refused_with_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    Journal(path).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE schema_version SET version = 99")
    with pytest.raises(AgentError) as caught:
        Journal(path)
    assert "schema version 99, newer than this agent knows" in caught.value.message
    assert "move the file away" in caught.value.message


def test_intent_is_committed_before_the_job_runs_and_the_result_after(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    journal = Journal(path)
    journal.create_job("j1", SPEC, now=10.0)
    # Another connection (another process after a crash) sees the pending job at once.
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT state, spec FROM jobs").fetchone() == ("pending", SPEC.to_json())
    journal.mark_running("j1", now=11.0)
    _append(journal, "j1", 1, JobStarted(kind="drain", target="node/n1"))
    [unfinished] = journal.unfinished()
    assert (unfinished.state, unfinished.runs, unfinished.last_seq) == ("running", 1, 1)
    assert JobSpec.from_dict(unfinished.spec) == SPEC
    _append(journal, "j1", 2, JobFinished(state=JobState.SUCCEEDED, exit_code=0))
    journal.finish("j1", JobResult(state=JobState.SUCCEEDED, exit_code=0, summary="1 node(s) drained"), now=12.0)
    assert journal.unfinished() == []
    info = journal.get("j1")
    assert info is not None
    assert (info.state, info.exit_code, info.summary, info.last_seq) == ("succeeded", 0, "1 node(s) drained", 2)
    assert [e.type for e in journal.events("j1")] == ["JobStarted", "JobFinished"]
    assert [e.seq for e in journal.events("j1", from_seq=2)] == [2]
    journal.close()


def test_events_are_append_only(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.sqlite3")
    journal.create_job("j1", SPEC)
    _append(journal, "j1", 1, JobStarted(kind="drain", target="node/n1"))
    with pytest.raises(sqlite3.IntegrityError):
        _append(journal, "j1", 1, JobStarted(kind="drain", target="node/n1"))
    with sqlite3.connect(tmp_path / "j.sqlite3") as db, pytest.raises(sqlite3.IntegrityError, match="append-only"):
        db.execute("UPDATE events SET body = '{}'")
    journal.close()


def test_pruning_removes_finished_jobs_past_retention_with_their_events_and_nothing_else(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.sqlite3")
    now = 100 * DAY
    for job, finished_days_ago in (("old", 31), ("recent", 29), ("running", None)):
        journal.create_job(job, SPEC, now=now - 40 * DAY)
        _append(journal, job, 1, JobStarted(kind="drain", target="node/n1"))
        if finished_days_ago is not None:
            done = JobResult(state=JobState.SUCCEEDED, exit_code=0)
            journal.finish(job, done, now=now - finished_days_ago * DAY)
    assert journal.prune(older_than_days=30, now=now) == 1
    assert sorted(info.id for info in journal.jobs()) == ["recent", "running"]
    assert journal.events("old") == []
    assert journal.integrity_check() == "ok"
    journal.close()


def test_the_journal_holds_paths_not_credentials(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.sqlite3")
    journal.create_job("j1", SPEC)
    info = journal.get("j1")
    assert info is not None
    assert info.spec["connection"] == {
        "kubeconfig": ["/home/u/.kube/config"],
        "context": "prod",
        "namespace": "default",
        "request_timeout": 0.0,
    }
    journal.close()


def test_pause_and_a_cancel_request_survive_the_agent(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    journal = Journal(path)
    journal.create_job("j1", SPEC)
    journal.mark_running("j1")
    journal.set_paused("j1", True)
    journal.request_cancel("j1")
    journal.close()
    [info] = Journal(path).unfinished()
    assert (info.paused, info.cancel_requested) == (True, True)
