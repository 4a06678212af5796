"""A round-robin TCP proxy for the benchmarks: one address in front of several web
processes, each new connection to the next one (no nginx, Caddy or HAProxy here).

Run: python benchmarks/_round_robin.py LISTEN_PORT UPSTREAM_PORT [UPSTREAM_PORT ...]
(all on 127.0.0.1). It prints "ready" once it listens, and runs until killed.
"""

from __future__ import annotations

import asyncio
import itertools
import sys


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        if writer.can_write_eof():
            try:
                writer.write_eof()
            except (ConnectionError, OSError):
                writer.close()


async def serve(listen: int, upstreams: list[int]) -> None:
    turn = itertools.cycle(upstreams)

    async def one(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            up_r, up_w = await asyncio.open_connection("127.0.0.1", next(turn))
        except OSError:
            client_w.close()
            return
        await asyncio.gather(pipe(client_r, up_w), pipe(up_r, client_w))
        up_w.close()
        client_w.close()

    server = await asyncio.start_server(one, "127.0.0.1", listen, backlog=4096)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(serve(int(sys.argv[1]), [int(port) for port in sys.argv[2:]]))
