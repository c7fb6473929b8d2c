#pragma once
// NatsEventLoop: runs cnats's socket I/O on jetfan's io_context, through cnats's external event-loop
// API (natsOptions_SetEventLoop), so that no cnats thread reads from or writes to the server's
// socket: the io thread reads (natsConnection_ProcessReadEvent) when the socket is readable, and
// writes what cnats buffered (natsConnection_ProcessWriteEvent) when cnats asks it to.
//
// The contract with cnats 3.4.1 (src/conn.c):
//   - attach(fd) after each connect and reconnect: from then on, poll the socket for reading. After a
//     reconnect it comes from cnats's reconnect thread, with the same user data and a new socket.
//   - read(remove) and write(remove) when cnats stops using a socket (a disconnect), from whichever
//     thread found the error; write(add) whenever cnats has bytes buffered for the socket, from any
//     thread that published (the io thread, cnats's ping timer, its reconnect thread); write(remove)
//     once ProcessWriteEvent has written everything. All are called under the connection's lock, so
//     they must not call cnats: they only record the request and post to the io_context.
//   - detach once the connection is closed: no more calls after it.
//   - cnats owns the socket and closes it on its own thread, before the io thread hears of a
//     disconnect. So the reactor polls a duplicate made in attach, which only this side closes: the
//     socket's number may belong to a handler's connection by the time the io thread moves on.
// ProcessReadEvent reads once, at most 32 KiB, and returns at once when nothing can be read;
// ProcessWriteEvent writes what it can without blocking. Neither is called with nothing to do: a
// write of zero bytes is taken by cnats 3.4.1 as a closed connection.
//
// Everything cnats needs a reply for (a request, a flush) must not be waited for on the io thread
// while it is not processing read events: see drive_until().

#include <nats/nats.h>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <functional>
#include <memory>

namespace jetfan {

class NatsEventLoop {
 public:
  explicit NatsEventLoop(boost::asio::io_context& io);
  ~NatsEventLoop();
  NatsEventLoop(const NatsEventLoop&) = delete;
  NatsEventLoop& operator=(const NatsEventLoop&) = delete;

  // Makes the connections made with `options` run on this loop. Also sets cnats's send-as-soon-as-
  // possible mode: without it a cnats flusher thread would ask for each write, a millisecond late.
  natsStatus install(natsOptions* options);

  // Called on the io thread after each read event cnats processed (what it read is routed to the
  // subscriptions by then). Set before connecting.
  void on_read(std::function<void()> after_read);

  // Processes cnats's read and write events on this thread, without running the io_context (no other
  // handler runs meanwhile), until `done()` or `deadline`. For waiting on a reply on the io thread:
  // the waiting itself goes to another thread, this one feeds it.
  void drive_until(const std::function<bool()>& done, std::chrono::steady_clock::time_point deadline);

  // True once since cnats dropped a connection in the middle of reading bytes the server sent (the
  // socket had bytes waiting, and cnats stopped reading it during ProcessReadEvent): a protocol
  // error, such as a MSG it cannot parse, rather than the server closing. Clears the mark.
  bool take_broken_read();

  // Stops polling the socket (closes jetfan's duplicate, not cnats's socket). On the io thread,
  // after the connection is closed (cnats has called detach).
  void shutdown();

  struct State;  // shared with the callbacks and the handlers posted for them; in the .cpp

 private:
  std::shared_ptr<State> state_;
};

}  // namespace jetfan
