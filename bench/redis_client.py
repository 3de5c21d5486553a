"""What one Redis command costs the calling process: redis-py's asyncio client against
the same command written and read by hand on asyncio streams (the floor any client
pays: one write, one read, the event loop between).

A run crosses about 130 Redis commands in all its stages (`bench.load` counts them), so
the difference, times that count, is what a leaner client could save a run. Starts its
own `redis-server` on a free port; CPU time of this process, per command, GET of a
200-byte value, one command in flight (as a stage's handler sends them), under uvloop
as the stages run.

    python -m bench.redis_client [--commands 20000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import subprocess
import time

import redis.asyncio as redis
import uvloop

from bench._util import emit_json, format_table

VALUE = b"x" * 200
COMMANDS_PER_RUN = 130  # bench.load's count of a finished run's commands, rounded


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _redis_py(port: int, n: int, single: bool = False) -> float:
    # single: one connection held by the client, no pool to take it from and give back
    client = redis.Redis(host="127.0.0.1", port=port, single_connection_client=single)
    await client.set("k", VALUE)
    started = time.process_time()
    for _ in range(n):
        await client.get("k")
    spent = time.process_time() - started
    await client.aclose()
    return spent * 1e6 / n


async def _by_hand(port: int, n: int) -> float:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    request = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"
    started = time.process_time()
    for _ in range(n):
        writer.write(request)
        await writer.drain()
        await reader.readuntil(b"\r\n")
        await reader.readexactly(len(VALUE) + 2)
    spent = time.process_time() - started
    writer.close()
    return spent * 1e6 / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commands", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    port = _free_port()
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--save", "", "--appendonly", "no"], stdout=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        samples: dict[str, list[float]] = {"redis-py": [], "redis-py, one connection": [], "by hand": []}
        for _ in range(args.rounds):  # in turns: the machine's speed drifts
            samples["redis-py"].append(uvloop.run(_redis_py(port, args.commands)))
            samples["redis-py, one connection"].append(uvloop.run(_redis_py(port, args.commands, single=True)))
            samples["by hand"].append(uvloop.run(_by_hand(port, args.commands)))
    finally:
        server.terminate()
        server.wait()
    client, floor = statistics.median(samples["redis-py"]), statistics.median(samples["by hand"])
    single = statistics.median(samples["redis-py, one connection"])
    rows = [
        {"client": name, "CPU us a command, median": round(statistics.median(v), 1),
         "rounds": " / ".join(f"{x:.1f}" for x in v)}
        for name, v in samples.items()
    ]
    print(f"GET of {len(VALUE)} bytes, {args.commands} commands a round, one in flight, uvloop")
    print(format_table(rows))
    per_run = (client - floor) * COMMANDS_PER_RUN / 1000
    print(f"redis-py / by hand: {client / floor:.2f}; over {COMMANDS_PER_RUN} commands a run: {per_run:.1f} ms of CPU")
    emit_json({
        "bench": "redis_client", "redis_py_us": round(client, 1), "by_hand_us": round(floor, 1),
        "redis_py_one_connection_us": round(single, 1),
        "ratio": round(client / floor, 2), "extra_ms_per_run": round(per_run, 1),
    })


if __name__ == "__main__":
    main()
