"""A scripted agent on a generated repository, showing every kind of decision; no API key.

Makes a small git repository under AGENTWEB_VAR/demo, starts a session whose model is a
script, follows it until it first waits for a person, and says where to decide."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from tools_app.management.commands._agents import follow, start
from tools_app.management.commands._common import print_json_line
from tools_app.models import AgentSession
from tools_app.runtime import demo


class Command(BaseCommand):
    help = "Run a scripted demo session on a generated repository (no API key needed)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--policy", default="default")
        parser.add_argument(
            "--follow", action="store_true", help="Follow to the end, not only to the first wait."
        )
        parser.add_argument("--timeout", type=float, default=120)

    def handle(self, *args: Any, **options: Any) -> None:
        session = start_demo(policy=options["policy"])
        self.stderr.write(f"demo session {session.pk} on {session.repo}")
        session = follow(
            self, session, timeout=options["timeout"], until_waiting=not options["follow"]
        )
        self.stderr.write(where_to_look(session))
        print_json_line(self, {"session": session.pk, "status": session.status})


def start_demo(*, policy: str = "default") -> AgentSession:
    """A fresh demo repository and plan, and the session that works on them."""
    folder = demo_folder()
    repo = make_repository(folder / "repo")
    plan = folder / "plan.json"
    plan.write_text(json.dumps(demo.script(), indent=2))
    return start(repo=str(repo), task=demo.TASK, model=f"script:{plan}", policy=policy)


def demo_folder() -> Path:
    base = Path(settings.AGENTWEB_VAR) / "demo"
    base.mkdir(parents=True, exist_ok=True)
    number = 1 + sum(1 for _ in base.glob("run-*"))
    folder = base / f"run-{number}"
    folder.mkdir()
    return folder


def make_repository(root: Path) -> Path:
    for name, text in demo.FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    identity = ["-c", "user.name=agentweb demo", "-c", "user.email=demo@localhost"]
    for command in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "calc"]):
        subprocess.run(["git", *identity, "-C", str(root), *command], check=True)
    return root


def where_to_look(session: AgentSession) -> str:
    base = settings.AGENTWEB_BASE_URL
    lines = [f"The demo session {session.pk} is {session.status}."]
    if session.status == "waiting":
        lines.append(f"Decide its waiting call in the approvals inbox: {base}/approvals/")
    lines.append(f"Its calls: {base}/api/sessions/{session.pk}/tool-calls")
    return "\n".join(lines)
