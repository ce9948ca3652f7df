"""The agent's journal: every job and every event it emitted, in SQLite (WAL), so that jobs survive the agent.

Intent before action: a job's row (its spec, state ``pending``) is committed
before the job starts, and ``running`` before its first API call; each event
is committed as it is emitted; the result after the last. After a crash the
rows still ``pending`` or ``running`` are the jobs to resume.

Nothing secret is written: a spec names the kubeconfig file(s), the context
and the namespace, and whoever runs the job reads the credentials again.

One connection, shared by the agent's threads under a lock: writes are short
(one row) and the event loop's reads too.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from kubectl_rollout.agent.errors import AgentError
from kubectl_rollout.agent.protocol import ABRIDGED_TEXT, JobInfo, cut
from kubectl_rollout.jobs.events.base import Envelope
from kubectl_rollout.jobs.events.job import JobState
from kubectl_rollout.jobs.kinds import target_of
from kubectl_rollout.jobs.spec import JobResult, JobSpec

DAY = 86400.0

#: schema migrations, in order; the journal records the last one applied. Never edit one that shipped.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE jobs (
            id TEXT PRIMARY KEY,
            kind TEXT NOT NULL,
            target TEXT NOT NULL,
            spec TEXT NOT NULL,
            state TEXT NOT NULL,
            created_at REAL NOT NULL,
            started_at REAL,
            finished_at REAL,
            exit_code INTEGER,
            summary TEXT NOT NULL DEFAULT '',
            error TEXT NOT NULL DEFAULT ''
        )""",
        "CREATE INDEX jobs_by_state ON jobs (state)",
        """CREATE TABLE events (
            job TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            type TEXT NOT NULL,
            body TEXT NOT NULL,
            PRIMARY KEY (job, seq)
        ) WITHOUT ROWID""",
        # Events are history: appended, and deleted only with their job.
        """CREATE TRIGGER events_are_append_only BEFORE UPDATE ON events
           BEGIN SELECT RAISE(ABORT, 'journal events are append-only'); END""",
    ),
    (
        # Resume: how many times a job was started, and a cancel asked for before a crash.
        "ALTER TABLE jobs ADD COLUMN runs INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE jobs ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0",
    ),
    (
        # Pause survives the agent: a job paused before a crash resumes paused.
        "ALTER TABLE jobs ADD COLUMN paused INTEGER NOT NULL DEFAULT 0",
    ),
    (
        # Attach with ``coalesce`` leaves out superseded events of a finished job too, without decoding its
        # events again (``Event.coalesce_key``; NULL for events recorded before: those are all sent).
        "ALTER TABLE events ADD COLUMN coalesce_key TEXT",
    ),
    (
        # Who submitted a job survives the agent (the Jobs screen's BY column); '' for jobs recorded before.
        "ALTER TABLE jobs ADD COLUMN submitted_by TEXT NOT NULL DEFAULT ''",
    ),
)
SCHEMA_VERSION = len(MIGRATIONS)


@dataclass(frozen=True)
class StoredEvent:
    seq: int
    type: str
    #: the envelope as JSON (``Envelope.as_dict()``), as it goes on the wire
    body: str
    #: the event's ``coalesce_key()``: a later event with the same key supersedes it
    coalesce_key: str | None = None


class Journal:
    def __init__(self, path: Path, *, migrations: tuple[tuple[str, ...], ...] = MIGRATIONS) -> None:
        self.path = path
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10)
            self._db.execute("PRAGMA journal_mode=WAL")
            # WAL with synchronous=NORMAL: a commit survives the agent's crash (SIGKILL), the last ones
            # may not survive a power cut; the cluster's state covers those on resume.
            self._db.execute("PRAGMA synchronous=NORMAL")
            # The WAL file shrinks back to 1 MiB after each checkpoint instead of keeping its high-water mark.
            self._db.execute("PRAGMA journal_size_limit=1048576")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._migrate(migrations)
        except sqlite3.DatabaseError as err:
            raise AgentError(
                f"cannot open the agent's journal {path}: {err}; move the file away to start with an empty journal"
            ) from err

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _migrate(self, migrations: tuple[tuple[str, ...], ...]) -> None:
        with self._transaction() as db:
            db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            row = db.execute("SELECT version FROM schema_version").fetchone()
            current = 0 if row is None else int(row[0])
            if current > len(migrations):
                raise AgentError(
                    f"the journal {self.path} has schema version {current}, newer than this agent knows "
                    f"({len(migrations)}); run the newer plugin, or move the file away to start afresh"
                )
            for statements in migrations[current:]:
                for statement in statements:
                    db.execute(statement)
            if row is None:
                db.execute("INSERT INTO schema_version (version) VALUES (?)", (len(migrations),))
            else:
                db.execute("UPDATE schema_version SET version = ?", (len(migrations),))

    def schema_version(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT version FROM schema_version").fetchone()[0])

    # --- jobs --------------------------------------------------------------------------------

    def create_job(self, job_id: str, spec: JobSpec, *, now: float | None = None, submitted_by: str = "") -> None:
        """``submitted_by``: the client that asked for it, as its hello named it (never a credential)."""
        with self._transaction() as db:
            db.execute(
                "INSERT INTO jobs (id, kind, target, spec, state, created_at, submitted_by) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    job_id,
                    spec.kind.value,
                    target_of(spec),
                    spec.to_json(),
                    JobState.PENDING.value,
                    now or time.time(),
                    submitted_by,
                ),
            )

    def mark_running(self, job_id: str, *, now: float | None = None) -> None:
        with self._transaction() as db:
            db.execute(
                "UPDATE jobs SET state = ?, started_at = COALESCE(started_at, ?), runs = runs + 1 WHERE id = ?",
                (JobState.RUNNING.value, now or time.time(), job_id),
            )

    def request_cancel(self, job_id: str) -> None:
        with self._transaction() as db:
            db.execute("UPDATE jobs SET cancel_requested = 1 WHERE id = ?", (job_id,))

    def set_paused(self, job_id: str, paused: bool) -> None:
        with self._transaction() as db:
            db.execute("UPDATE jobs SET paused = ? WHERE id = ?", (int(paused), job_id))

    def finish(self, job_id: str, result: JobResult, *, now: float | None = None) -> None:
        with self._transaction() as db:
            db.execute(
                "UPDATE jobs SET state = ?, finished_at = ?, exit_code = ?, summary = ?, error = ? WHERE id = ?",
                (result.state.value, now or time.time(), result.exit_code, result.summary, result.error, job_id),
            )

    def append(self, envelope: Envelope, body: str) -> None:
        """Record one event; ``body`` is ``json.dumps(envelope.as_dict())``, computed once by the caller."""
        with self._transaction() as db:
            db.execute(
                "INSERT INTO events (job, seq, type, body, coalesce_key) VALUES (?, ?, ?, ?, ?)",
                (envelope.job, envelope.seq, envelope.type, body, envelope.event.coalesce_key()),
            )

    _JOB_COLUMNS = (
        "id, kind, target, spec, state, created_at, started_at, finished_at, exit_code, summary, error, runs, "
        "cancel_requested, (SELECT COALESCE(MAX(seq), 0) FROM events WHERE events.job = jobs.id), paused, "
        "submitted_by"
    )

    @staticmethod
    def _info(row: tuple[object, ...]) -> JobInfo:
        spec = json.loads(str(row[3]))
        connection = spec.get("connection") or {}
        return JobInfo(
            id=str(row[0]),
            kind=str(row[1]),
            target=str(row[2]),
            spec=spec,
            state=str(row[4]),
            context=connection.get("context"),
            namespace=connection.get("namespace"),
            created_at=float(row[5]),  # type: ignore[arg-type]
            started_at=None if row[6] is None else float(row[6]),  # type: ignore[arg-type]
            finished_at=None if row[7] is None else float(row[7]),  # type: ignore[arg-type]
            exit_code=None if row[8] is None else int(row[8]),  # type: ignore[call-overload]
            summary=str(row[9]),
            error=str(row[10]),
            runs=int(row[11]),  # type: ignore[call-overload]
            cancel_requested=bool(row[12]),
            last_seq=int(row[13]),  # type: ignore[call-overload]
            paused=bool(row[14]),
            submitted_by=str(row[15]),
        )

    def get(self, job_id: str) -> JobInfo | None:
        with self._lock:
            row = self._db.execute(f"SELECT {self._JOB_COLUMNS} FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return None if row is None else self._info(row)

    def jobs(self, *, limit: int = 100) -> list[JobInfo]:
        """The newest ``limit`` jobs, newest first."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT {self._JOB_COLUMNS} FROM jobs ORDER BY created_at DESC LIMIT ?", (limit,)
            ).fetchall()
        return [self._info(row) for row in rows]

    def summaries(self, *, limit: int = 100) -> list[JobInfo]:
        """The newest ``limit`` jobs as ``list`` answers them (``JobInfo.abridge``), newest first.

        Read abridged from SQLite: a thousand jobs with megabyte specs never come into memory whole.
        """
        with self._lock:
            rows = self._db.execute(
                """SELECT id, kind, substr(target, 1, :n), json_object(
                       'kind', json_extract(spec, '$.kind'), 'version', json_extract(spec, '$.version'),
                       'connection', json(json_extract(spec, '$.connection'))),
                     state, created_at, started_at, finished_at, exit_code, substr(summary, 1, :n),
                     substr(error, 1, :n), runs, cancel_requested,
                     (SELECT COALESCE(MAX(seq), 0) FROM events WHERE events.job = jobs.id), paused,
                     substr(submitted_by, 1, :n), length(target), length(summary), length(error)
                   FROM jobs ORDER BY created_at DESC LIMIT :limit""",
                {"n": ABRIDGED_TEXT, "limit": limit},
            ).fetchall()
        infos = []
        for row in rows:
            info = self._info(row[:16])
            lengths = row[16:]
            infos.append(
                JobInfo(
                    **{
                        **info.as_dict(),
                        "spec": {k: v for k, v in info.spec.items() if v is not None},
                        "target": cut(info.target, ABRIDGED_TEXT, length=int(lengths[0])),
                        "summary": cut(info.summary, ABRIDGED_TEXT, length=int(lengths[1])),
                        "error": cut(info.error, ABRIDGED_TEXT, length=int(lengths[2])),
                        "abridged": True,
                    }
                )
            )
        return infos

    def unfinished(self) -> list[JobInfo]:
        """Jobs a crash or a stop interrupted, oldest first: the ones to resume."""
        states = (JobState.PENDING.value, JobState.RUNNING.value)
        with self._lock:
            rows = self._db.execute(
                f"SELECT {self._JOB_COLUMNS} FROM jobs WHERE state IN (?, ?) ORDER BY created_at", states
            ).fetchall()
        return [self._info(row) for row in rows]

    def events(self, job_id: str, *, from_seq: int = 1) -> list[StoredEvent]:
        with self._lock:
            rows = self._db.execute(
                "SELECT seq, type, body, coalesce_key FROM events WHERE job = ? AND seq >= ? ORDER BY seq",
                (job_id, from_seq),
            ).fetchall()
        return [StoredEvent(int(seq), str(kind), str(body), key) for seq, kind, body, key in rows]

    def prune(self, *, older_than_days: float, now: float | None = None) -> int:
        """Delete finished jobs (and their events) that finished more than ``older_than_days`` ago."""
        cutoff = (now or time.time()) - older_than_days * DAY
        finished = (JobState.SUCCEEDED.value, JobState.FAILED.value, JobState.CANCELLED.value)
        with self._transaction() as db:
            cursor = db.execute("DELETE FROM jobs WHERE state IN (?, ?, ?) AND finished_at < ?", (*finished, cutoff))
            return cursor.rowcount

    def integrity_check(self) -> str:
        with self._lock:
            return str(self._db.execute("PRAGMA integrity_check").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
