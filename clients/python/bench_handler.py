"""The benchmark's handler on the Python client, a stand-in for `jetfan-bench handler` (the C++
client's; bench/jetfan_bench.cpp) with the same command line and output:

    python3 clients/python/bench_handler.py SOCKET NAME LATENCY_FILE

Prints ready_ns=<CLOCK_MONOTONIC ns> once connected, acks every message at once, and when jetfan
closes the connection writes one publish-to-receipt latency in microseconds per line to
LATENCY_FILE (each payload starts with its publish time in ns). SIGTERM and SIGINT are ignored, as
the C++ one does, so it writes the file when the harness stops jetfan."""

from __future__ import annotations

import asyncio
import re
import signal
import sys
import time
from array import array
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the jetfan package beside this file

import jetfan  # noqa: E402

LEADING_DIGITS = re.compile(rb"\d+")


async def main(path: str, name: str, latency_file: str) -> None:
    loop = asyncio.get_running_loop()
    for stop in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(stop, lambda: None)
    h = await jetfan.connect(path=path, handler=name, reconnect=False)
    print(f"ready_ns={time.monotonic_ns()}", flush=True)
    micros = array("I")
    clock, match = time.monotonic_ns, LEADING_DIGITS.match
    async for msg in h:
        now = clock()
        sent = match(msg.data)
        if sent is not None and 0 < (ns := int(sent.group())) < now:
            micros.append(min((now - ns) // 1000, 2**32 - 1))
        msg.ack()
    await h.close()
    Path(latency_file).write_text("".join(map("{}\n".format, micros)))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: bench_handler.py SOCKET NAME LATENCY_FILE")
    asyncio.run(main(*sys.argv[1:4]))
