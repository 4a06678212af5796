"""Websockets, kept thin: authenticate, check access, join a group, send a snapshot, then
forward events. A client that reconnects sends its last `seq` and gets what it missed.

* `/ws/sessions/{id}/`: the session and its calls, then the session's events (`seq` is
  the session's event number).
* `/ws/approvals/`: the calls awaiting a decision, then every tool call event (`seq` is
  the event's id, monotonic across sessions).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.core.serializers.json import DjangoJSONEncoder
from django.http import Http404

from tools_app import access
from tools_app.core.digits import ascii_int
from tools_app.live import events
from tools_app.models import Event
from tools_app.selectors import records

REPLAY_LIMIT = 1000


def _last_seq(scope: dict[str, Any]) -> int | None:
    values = parse_qs(scope.get("query_string", b"").decode()).get("last_seq", [])
    return ascii_int(values[0]) if values else None


class JsonConsumer(AsyncJsonWebsocketConsumer):  # type: ignore[misc]
    """Sends JSON the way the API does (dates as ISO 8601), and notes the last `seq` sent:
    when the channel layer says messages may have been lost (`layer.reset`, its Redis
    connection came back), the consumer catches up from there, as a reconnecting
    client would."""

    sent_seq: int | None = None

    @classmethod
    async def encode_json(cls, content: Any) -> str:
        return json.dumps(content, cls=DjangoJSONEncoder)

    async def send_json(self, content: Any, close: bool = False) -> None:
        if isinstance(content.get("seq"), int):
            self.sent_seq = content["seq"]
        await super().send_json(content, close)

    async def dispatch(self, message: dict[str, Any]) -> None:
        """An event is forwarded without the database, so without channels' per-message
        `close_old_connections` hop through the one database thread: with 200 reviewers
        connected, that hop per socket was most of daphne's time per event
        (BENCHMARKS.md, "One push to many"). A batch (`events.publish_all`) is one
        frame per event, as if its events had come one by one."""
        if message["type"] == events.SESSION_EVENT:
            await self.session_event(message)
        elif message["type"] == events.SESSION_EVENTS:
            for event in message["events"]:
                await self.session_event({"type": events.SESSION_EVENT, "event": event})
        else:
            await super().dispatch(message)

    async def session_event(self, message: dict[str, Any]) -> None:
        raise NotImplementedError

    async def layer_reset(self, message: dict[str, Any]) -> None:
        await self._catch_up(self.sent_seq)

    async def _catch_up(self, last_seq: int | None) -> None:
        raise NotImplementedError


class SessionConsumer(JsonConsumer):
    async def connect(self) -> None:
        self.session_id = int(self.scope["url_route"]["kwargs"]["session_id"])
        self.group = events.session_group(self.session_id)
        if not await database_sync_to_async(_may_see_session)(self.scope, self.session_id):
            await self.close()  # before accept: the handshake is refused
            return
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        await self._catch_up(_last_seq(self.scope))

    async def disconnect(self, code: int) -> None:
        await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if isinstance(content, dict) and isinstance(content.get("last_seq"), int):
            await self._catch_up(content["last_seq"])

    async def session_event(self, message: dict[str, Any]) -> None:
        await self.send_json(message["event"])

    async def _catch_up(self, last_seq: int | None) -> None:
        if last_seq is None:
            await self.send_json(await database_sync_to_async(_session_snapshot)(self.session_id))
            return
        missed = await database_sync_to_async(_session_events_after)(self.session_id, last_seq)
        for event in missed:
            await self.send_json(event)


class ApprovalsConsumer(JsonConsumer):
    """A reviewer's inbox: the calls of the projects they review (as of connecting)."""

    projects: list[int] = []

    async def connect(self) -> None:
        self.projects = await database_sync_to_async(_reviewed_project_ids)(self.scope)
        if not self.projects:
            await self.close()
            return
        for project in self.projects:
            await self.channel_layer.group_add(events.approvals_group(project), self.channel_name)
        await self.accept()
        await self._catch_up(_last_seq(self.scope))

    async def disconnect(self, code: int) -> None:
        for project in self.projects:
            await self.channel_layer.group_discard(
                events.approvals_group(project), self.channel_name
            )

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if isinstance(content, dict) and isinstance(content.get("last_seq"), int):
            await self._catch_up(content["last_seq"])

    async def session_event(self, message: dict[str, Any]) -> None:
        event = dict(message["event"])
        event["session_seq"], event["seq"] = event["seq"], event["id"]
        await self.send_json(event)

    async def _catch_up(self, last_seq: int | None) -> None:
        if last_seq is None:
            snapshot = await database_sync_to_async(_approvals_snapshot)(self.projects)
            await self.send_json(snapshot)
            return
        missed = await database_sync_to_async(_approval_events_after)(last_seq, self.projects)
        for event in missed:
            await self.session_event({"event": event})


# --- database work, in small synchronous helpers ------------------------------------------


def _user(scope: dict[str, Any]) -> Any:
    user = scope.get("user")
    return user if user is not None and user.is_authenticated else None


def _may_see_session(scope: dict[str, Any], session_id: int) -> bool:
    """Through the same helper as the pages and the API: refused when it would be a 404."""
    user = _user(scope)
    if user is None:
        return False
    try:
        access.session_for(user, session_id, scope=access.BROWSER)
    except Http404:
        return False
    return True


def _reviewed_project_ids(scope: dict[str, Any]) -> list[int]:
    user = _user(scope)
    if user is None or not access.may_review(user, access.BROWSER):
        return []
    return list(access.reviewed_projects(user).values_list("pk", flat=True))


def _session_snapshot(session_id: int) -> dict[str, Any]:
    session = records.session_get(session_id)
    if session is None:
        return {"type": "snapshot", "seq": 0, "session": None, "tool_calls": []}
    calls = session.tool_calls.select_related("human__user").order_by("id")
    return {
        "type": "snapshot",
        "seq": session.last_event_seq,
        "session": records.session_as_dict(session),
        "tool_calls": [records.tool_call_as_dict(call) for call in calls],
    }


def _session_events_after(session_id: int, last_seq: int) -> list[dict[str, Any]]:
    missed = Event.objects.filter(session_id=session_id, seq__gt=last_seq).order_by("seq")
    return [events.event_message(event) for event in missed[:REPLAY_LIMIT]]


def _approvals_snapshot(projects: list[int]) -> dict[str, Any]:
    last = Event.objects.order_by("-id").values_list("id", flat=True).first() or 0
    calls = records.approvals_awaiting().filter(session__project__in=projects)
    return {
        "type": "snapshot",
        "seq": last,
        "tool_calls": [records.tool_call_as_dict(call) for call in calls],
    }


def _approval_events_after(last_seq: int, projects: list[int]) -> list[dict[str, Any]]:
    missed = Event.objects.filter(
        id__gt=last_seq, type__startswith="tool_call.", session__project__in=projects
    ).order_by("id")
    return [events.event_message(event) for event in missed[:REPLAY_LIMIT]]
