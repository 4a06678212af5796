"""The channel layer: Redis pub/sub, one PUBLISH per group, with the guarantees of before.

channels_redis's per-channel layer (`RedisChannelLayer`) writes an event into a sorted
set per receiving process and each process pops it; `RedisPubSubChannelLayer` publishes
it once per group and every subscribed process gets it from its one pub/sub connection
(BENCHMARKS.md, "One push to many", measures both). Three things it does not do, done
here:

* **One round trip for a commit's messages.** `group_send_all` sends the PUBLISHes of
  one `events.publish_all` in one pipeline per shard, where `group_send` is a round
  trip each (an allowed hook's six of them cost the publishing thread 1.27 ms of CPU).

* **A join is confirmed.** `group_add` (and `new_channel`) return once Redis has
  answered the SUBSCRIBE, not when it was written to the socket: a consumer reads its
  snapshot after joining, so an event committed after that read is published to a
  subscription Redis already has. Nothing is lost between the snapshot and the first
  event. (An experiment of 200 joins each followed at once by a publish from another
  connection lost none with channels_redis's own layer either; the guarantee no longer
  rests on that timing.) While nothing is subscribed the receiving task waits for the
  first subscription, where channels_redis's polls every 0.1 s: the first event of a
  `?wait` in an idle process came up to 100 ms late.
* **A lost connection is said.** Pub/sub keeps nothing for a subscriber that is away:
  when the pub/sub connection fails, redis-py reconnects and subscribes again, and
  every local channel then receives `{"type": "layer.reset"}` so that its consumer
  catches up from the event log (`consumers.py`), as a reconnecting browser does.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from channels_redis.pubsub import (
    RedisPubSubChannelLayer,
    RedisPubSubLoopLayer,
    RedisSingleShardConnection,
)
from channels_redis.utils import _wrap_close
from redis.asyncio.client import PubSub

logger = logging.getLogger(__name__)

RESET = {"type": "layer.reset"}
CONFIRM_TIMEOUT_SECONDS = 5.0


class PubSubChannelLayer(RedisPubSubChannelLayer):  # type: ignore[misc]
    """`RedisPubSubChannelLayer` whose per-loop layers are `_LoopLayer`s."""

    async def group_send_all(self, sends: Sequence[tuple[str, dict[str, Any]]]) -> None:
        """`group_send` of each (group, message), in one round trip per shard."""
        await self._get_layer().group_send_all(sends)

    def _get_layer(self) -> _LoopLayer:
        loop = asyncio.get_running_loop()
        layer: _LoopLayer | None = self._layers.get(loop)
        if layer is None:
            layer = _LoopLayer(*self._args, **self._kwargs, channel_layer=self)
            self._layers[loop] = layer
            _wrap_close(self, loop)
        return layer


class _LoopLayer(RedisPubSubLoopLayer):  # type: ignore[misc]
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        hosts = [shard.host for shard in vars(self)["_shards"]]
        self._shards = [_Shard(host, self) for host in hosts]

    async def group_send_all(self, sends: Sequence[tuple[str, dict[str, Any]]]) -> None:
        by_shard: dict[_Shard, list[tuple[str, bytes]]] = {}
        for group, message in sends:
            channel = self._get_group_channel_name(group)
            publishes = by_shard.setdefault(self._get_shard(channel), [])
            publishes.append((channel, self.channel_layer.serialize(message)))
        for shard, publishes in by_shard.items():
            await shard.publish_all(publishes)

    def reset_all(self) -> None:
        """Tell every local channel that messages may have been lost."""
        for queue in self.channels.values():
            queue.put_nowait(self.channel_layer.serialize(RESET))


class _Shard(RedisSingleShardConnection):  # type: ignore[misc]
    """One Redis connection pair (publish, pub/sub) whose subscriptions are confirmed."""

    def __init__(self, host: dict[str, Any], channel_layer: _LoopLayer) -> None:
        super().__init__(host, channel_layer)
        self._confirmations: dict[str, asyncio.Future[None]] = {}
        self._resubscribing: set[str] = set()
        self._has_subscriptions = asyncio.Event()

    def _ensure_redis(self) -> None:
        if self._redis is None:
            super()._ensure_redis()
            redis: Any = self._redis
            self._pubsub = _PubSub(redis.connection_pool, shard=self)

    async def publish_all(self, publishes: list[tuple[str, bytes]]) -> None:
        """Each (channel, message) PUBLISHed, in order, in one pipeline: one write and
        one read where `publish` is a round trip each."""
        async with self._lock:
            self._ensure_redis()
            redis: Any = self._redis
            async with redis.pipeline(transaction=False) as pipeline:
                for channel, message in publishes:
                    pipeline.publish(channel, message)
                await pipeline.execute()

    async def subscribe(self, channel: str) -> None:
        async with self._lock:
            confirmed = self._confirmations.get(channel)
            if channel not in self._subscribed_to:
                self._ensure_redis()
                confirmed = asyncio.get_running_loop().create_future()
                self._confirmations[channel] = confirmed
                self._ensure_receiver()
                await self._pubsub.subscribe(channel)
                self._subscribed_to.add(channel)
                self._has_subscriptions.set()
        if confirmed is not None:  # this join's SUBSCRIBE, or a concurrent one's
            await asyncio.wait_for(asyncio.shield(confirmed), CONFIRM_TIMEOUT_SECONDS)

    async def unsubscribe(self, channel: str) -> None:
        await super().unsubscribe(channel)
        self._confirmations.pop(channel, None)

    async def flush(self) -> None:
        await super().flush()
        self._confirmations.clear()
        self._resubscribing.clear()

    async def _do_receiving(self) -> None:
        failing = False
        while True:
            try:
                if not (self._pubsub and self._pubsub.subscribed):
                    self._has_subscriptions.clear()
                    await self._has_subscriptions.wait()
                    continue
                self._dispatch(await self._pubsub.get_message(timeout=1.0))
                failing = False
            except (asyncio.CancelledError, GeneratorExit):
                raise
            except Exception as exc:
                if not failing:
                    logger.warning("channel layer: pub/sub connection failed (%r)", exc)
                failing = True
                await asyncio.sleep(0.2)

    def _dispatch(self, message: dict[str, Any] | None) -> None:
        if message is None:
            return
        if message["type"] == "message":
            self._receive_message(message)
        elif message["type"] == "subscribe":
            name = _name(message["channel"])
            confirmed = self._confirmations.pop(name, None)
            if confirmed is not None and not confirmed.done():
                confirmed.set_result(None)
            if name in self._resubscribing:
                self._resubscribing.discard(name)
                if not self._resubscribing:
                    self.channel_layer.reset_all()


class _PubSub(PubSub):
    """redis-py's PubSub, telling its shard when it subscribes again after a reconnect."""

    def __init__(self, pool: Any, *, shard: _Shard) -> None:
        super().__init__(pool)
        self.shard = shard

    async def on_connect(self, connection: Any) -> None:
        # Once Redis confirmed each of these, the local channels hear that messages may
        # have been lost while the connection was away.
        self.shard._resubscribing = {_name(channel) for channel in self.channels}
        await super().on_connect(connection)


def _name(channel: str | bytes) -> str:
    return channel.decode() if isinstance(channel, bytes) else channel
