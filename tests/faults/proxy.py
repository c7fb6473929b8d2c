"""A TCP proxy between jetfan and its nats-server that the fault scheduler can stall, slow or cut:
a partition as jetfan sees it. asyncio, in a thread of its own; control methods are thread-safe.

Modes, per direction ("up": jetfan -> server, "down": server -> jetfan):
  pass   bytes flow
  stall  nothing is read from the sender, so bytes pile up in its socket buffers (a black hole that
         keeps the connection open; jetfan notices only through missing heartbeats or timeouts)
  slow   every chunk waits `delay` seconds before it is forwarded
cut() closes every connection at once, dropping whatever was stalled in the proxy; new
connections are accepted (jetfan reconnects through the proxy).
"""

import asyncio
import threading


class Proxy:
    def __init__(self, upstream_port, host="127.0.0.1"):
        self.upstream = (host, upstream_port)
        self.loop = asyncio.new_event_loop()
        self.modes = {"up": "pass", "down": "pass"}
        self.delay = 0.0
        self.connections = set()
        self.flowing = {}
        self.bytes = {"up": 0, "down": 0}
        started = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(started,), daemon=True)
        self.thread.start()
        started.wait()

    def _run(self, started):
        asyncio.set_event_loop(self.loop)
        self.flowing = {"up": asyncio.Event(), "down": asyncio.Event()}
        for e in self.flowing.values():
            e.set()
        self.server = self.loop.run_until_complete(asyncio.start_server(self._accept, "127.0.0.1", 0))
        self.port = self.server.sockets[0].getsockname()[1]
        started.set()
        self.loop.run_forever()

    async def _accept(self, client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            client_writer.close()
            return
        pair = (client_writer, server_writer)
        self.connections.add(pair)
        tasks = [asyncio.ensure_future(self._pump(client_reader, server_writer, "up")),
                 asyncio.ensure_future(self._pump(server_reader, client_writer, "down"))]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for t in tasks:
            t.cancel()
        self._close(pair)

    async def _pump(self, reader, writer, direction):
        try:
            while True:
                await self.flowing[direction].wait()
                chunk = await reader.read(65536)
                if not chunk:
                    return
                await self.flowing[direction].wait()  # a stall that began during the read holds this chunk
                if self.modes[direction] == "slow":
                    await asyncio.sleep(self.delay)
                writer.write(chunk)
                self.bytes[direction] += len(chunk)
                await writer.drain()
        except (OSError, asyncio.CancelledError):
            return

    def _close(self, pair):
        if pair in self.connections:
            self.connections.discard(pair)
            for w in pair:
                transport = w.transport
                if transport:
                    transport.abort()

    # --- control, from any thread ---

    def _call(self, fn):
        done = threading.Event()

        def run():
            fn()
            done.set()
        self.loop.call_soon_threadsafe(run)
        done.wait(5)

    def set_mode(self, direction, mode, delay=0.0):
        def apply():
            for d in (("up", "down") if direction == "both" else (direction,)):
                self.modes[d] = mode
                if mode == "stall":
                    self.flowing[d].clear()
                else:
                    self.flowing[d].set()
            self.delay = delay
        self._call(apply)

    def heal(self):
        self.set_mode("both", "pass")

    def cut(self):
        def apply():
            for pair in list(self.connections):
                self._close(pair)
        self._call(apply)

    def close(self):
        def apply():
            self.cut_all = True
            for pair in list(self.connections):
                self._close(pair)
            self.server.close()
        self._call(apply)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
