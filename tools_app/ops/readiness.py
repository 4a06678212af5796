"""Whether this installation can take work: each check a boolean and a short reason.

The reasons are fixed phrases: no host name, address, path, version or error text
leaves here (the log has the details).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.db import DatabaseError

from tools_app.ops import workers as heartbeats
from tools_app.selectors import ops as ops_selectors

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Check:
    ok: bool
    reason: str = ""

    def as_dict(self) -> dict[str, bool | str]:
        return {"ok": self.ok, **({"reason": self.reason} if self.reason else {})}


def readiness() -> dict[str, Check]:
    """The database, Redis, a live tool worker, and a working sandbox on one of them."""
    checks = {"database": _database()}
    try:
        workers = heartbeats.live_workers()
    except heartbeats.RedisDown as exc:
        logger.warning("readiness: Redis does not answer: %s", exc)
        down = Check(False, "Redis does not answer")
        return {**checks, "redis": down, "workers": down, "sandbox": down}
    checks["redis"] = Check(True)
    checks["workers"] = Check(bool(workers), "" if workers else "no live tool worker")
    checks["sandbox"] = _sandbox(workers)
    return checks


def _database() -> Check:
    try:
        answers = ops_selectors.database_answers()
    except DatabaseError as exc:
        logger.warning("readiness: the database does not answer: %s", exc)
        answers = False
    return Check(answers, "" if answers else "the database does not answer")


def _sandbox(workers: list[dict[str, object]]) -> Check:
    if not workers:
        return Check(False, "no live tool worker to run commands")
    if any(worker.get("sandbox") for worker in workers):
        return Check(True)
    return Check(False, "no worker has a working sandbox (manage.py check on its host says why)")
