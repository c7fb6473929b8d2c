# A complete handler in Python: prints each message it is given and acks it. handler.py SOCKET NAME
import asyncio
import sys

import jetfan  # pip install ./clients/python


async def main(path: str, name: str) -> None:
    async with await jetfan.connect(path=path, handler=name) as h:  # reconnects by itself
        print(f"[{name}] connected", flush=True)
        async for msg in h:  # msg.key, .seq, .deliveries, .headers, .data, .json()
            print(f"[{name}] got {msg.key} (seq {msg.seq}): {msg.text()}", flush=True)
            msg.ack()  # or msg.nak(delay=1.5) (seconds), msg.term(reason); raise in h.process(fn) to NAK

asyncio.run(main(*sys.argv[1:3]))
