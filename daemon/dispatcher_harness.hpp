#pragma once
// The real Dispatcher, driven through its seams, for the daemon's unit tests: a FakeUpstream for
// JetStream, a ManualTimekeeper for time, and real HandlerSessions on socketpairs, read by the
// protocol's own DeliveryParser. A DispatchChecker watches the dispatcher's tap, so the core's
// rules hold throughout. Catch2's REQUIRE and CHECK report what goes wrong.
//
// Thread: the test's, which runs the io_context the sessions use (pump()).

#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

#include "delivery_parser.hpp"
#include "dispatch_checker.hpp"
#include "dispatcher.hpp"
#include "fake_upstream.hpp"
#include "peer_reader.hpp"
#include "timekeeper.hpp"

namespace jetfan::testing {

using std::chrono::milliseconds;
using Kind = FakeUpstream::Reply::Kind;

inline HandlerSettings handler(std::string name, std::vector<std::string> patterns, int max_inflight = 8) {
  HandlerSettings h;
  h.name = std::move(name);
  h.patterns = std::move(patterns);
  h.max_inflight = max_inflight;
  h.ack_timeout = milliseconds(30000);
  return h;
}

inline Config config(std::vector<HandlerSettings> handlers) {
  Config c;
  c.file = "test.yaml";
  c.consumer.stream = "STREAM";
  c.consumer.durable = "CONSUMER";
  c.consumer.batch = 4;
  c.consumer.max_held = 64;
  c.key.strip_prefix = "ev.";
  c.socket.path = "/dispatcher-test.sock";  // never bound: connections are socketpairs
  c.socket.hello_timeout = milliseconds(3600000);
  c.socket.idle_timeout = milliseconds(3600000);
  c.delivery.nak_delay = milliseconds(1000);
  c.delivery.nak_delay_max = milliseconds(60000);
  c.delivery.drain_timeout = milliseconds(5000);
  c.handlers = std::move(handlers);
  return c;
}

inline ServeSettings serve(const Config& c) {
  auto derived = derive_serve_settings(c, fake_consumer_facts());
  REQUIRE(derived.settings);
  return std::move(*derived.settings);
}

// The handler end of one connection.
struct Peer {
  int fd = -1;
  ConnectionId id = 0;
  proto::DeliveryParser parser;
  std::vector<proto::Frame> unread;  // read already, not yet handed to the test
  bool closed = false;               // jetfan closed its end
};

class Harness : private DispatcherTap {
 public:
  // `pin`: read as a pinned_client of that group.
  explicit Harness(Config c, std::optional<PinSettings> pin = std::nullopt)
      : config_(std::move(c)), settings_(serve(config_)), checker_(settings_.core) {
    settings_.pin = std::move(pin);
    dispatcher_.emplace(
        config_, settings_, upstream, time, notifier_, arena_,
        DispatcherHooks{[this] { stopped_accepting = true; }, [this] { finished = true; }, [this] { ++take_overs; }});
    dispatcher_->set_tap(this);
    dispatcher_->start();
  }
  ~Harness() {
    dispatcher_.reset();
    for (auto& peer : peers_) ::close(peer.fd);
  }

  Dispatcher& dispatcher() { return *dispatcher_; }
  Config& config() { return config_; }

  // A new connection; nullopt when the dispatcher takes none.
  std::optional<std::size_t> connect() {
    int fds[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0);
    HandlerSession::Socket socket(io_);
    socket.assign(boost::asio::local::stream_protocol(), fds[0]);
    const auto id = dispatcher_->accept(std::move(socket));
    if (!id) {
      ::close(fds[1]);
      return std::nullopt;
    }
    peers_.push_back(Peer{fds[1], *id, {}, {}, false});
    pump();
    return peers_.size() - 1;
  }
  // A connection that said HELLO as `name` in protocol `version` and read its READY.
  std::size_t hello(const std::string& name, std::uint32_t version = 1) {
    const auto peer = connect();
    REQUIRE(peer);
    send(*peer, "HELLO " + name + " " + std::to_string(version) + "\r\n");
    auto frames = read(*peer);
    REQUIRE(frames.size() >= 1);
    REQUIRE(frames[0].kind == proto::Frame::Kind::kReady);
    REQUIRE(frames[0].ready.version == proto::negotiated_version(version));
    peers_[*peer].unread.assign(frames.begin() + 1, frames.end());  // MSGs that came right after
    return *peer;
  }
  void send(std::size_t peer, const std::string& bytes) {
    REQUIRE(::send(peers_[peer].fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size()));
    pump();
  }
  void hang_up(std::size_t peer) {
    ::shutdown(peers_[peer].fd, SHUT_RDWR);
    pump();
  }
  // Everything jetfan wrote to `peer` since the last read.
  std::vector<proto::Frame> read(std::size_t peer) {
    pump();
    Peer& p = peers_[peer];
    std::vector<proto::Frame> frames = std::move(p.unread);
    p.unread.clear();
    const auto end = read_peer(p.fd, p.parser, [&](const proto::Frame& frame) { frames.push_back(frame); });
    REQUIRE(end != PeerReadEnd::kMalformed);
    if (end == PeerReadEnd::kClosed) p.closed = true;
    return frames;
  }
  bool closed(std::size_t peer) {
    read(peer);
    return peers_[peer].closed;
  }
  // The MSGs among what `peer` reads now.
  std::vector<proto::Delivery> msgs(std::size_t peer) {
    std::vector<proto::Delivery> out;
    for (const auto& frame : read(peer)) {
      if (frame.kind == proto::Frame::Kind::kMsg) out.push_back(frame.delivery);
    }
    return out;
  }
  void deliver(std::uint64_t seq, const std::string& subject, std::uint64_t deliveries = 1) {
    upstream.deliver(FakeUpstream::Message{seq, subject, "payload " + std::to_string(seq), "", deliveries, 0});
    pump();
  }
  void advance(Duration by) {
    time.advance(by);
    pump();
  }
  void pump() {
    for (int i = 0; i < 64; ++i) {
      io_.restart();
      if (io_.poll() == 0) break;
    }
    if (checking) CHECK(checker_.check_state(dispatcher_->core()) == "");
  }
  std::vector<std::uint64_t> replied(Kind kind) const {
    std::vector<std::uint64_t> seqs;
    for (const auto& reply : upstream.replies) {
      if (reply.kind == kind) seqs.push_back(reply.stream_seq);
    }
    return seqs;
  }
  StatusSnapshot status() {
    StatusSnapshot snapshot;
    dispatcher_->fill_status(snapshot, RateWindow(milliseconds(60000)), time.now(), 0);
    return snapshot;
  }

  FakeUpstream upstream{arena_, "ev."};
  ManualTimekeeper time{TimePoint{} + std::chrono::hours(1)};
  bool stopped_accepting = false;
  bool finished = false;
  int take_overs = 0;               // the pinned_client hook: jetfan became the pinned client
  std::vector<std::string> broken;  // rules the checker found broken
  // The checker models no reload: a test that reloads stops checking first.
  bool checking = true;

 private:
  void arrived(const Arrival& arrival) override { checker_.arrived(arrival); }
  void connected(ConnectionId connection, std::size_t h) override { checker_.connected(connection, h); }
  void disconnected(ConnectionId connection) override { checker_.disconnected(connection); }
  void answered(ConnectionId connection, const proto::Command& command, bool known) override {
    using Answer = DispatchChecker::Answer;
    const Answer answer = command.verb == proto::Verb::kNak    ? Answer::kNak
                          : command.verb == proto::Verb::kTerm ? Answer::kTerm
                          : command.verb == proto::Verb::kWip  ? Answer::kWip
                                                               : Answer::kAck;
    note(checker_.answered(connection, command.id, answer, known));
  }
  void ponged(ConnectionId) override {}
  void answered_publish(ConnectionId, std::uint64_t, bool) override {}
  void began_drain(TimePoint now, Duration handback) override { checker_.began_drain(now, handback); }
  void stood_by(TimePoint now, bool standing, Duration handback_delay) override {
    checker_.stood_by(now, standing, handback_delay);
  }
  void abandoned_all() override { checker_.abandoned_all(); }
  void effects(std::span<const Effect> effects, TimePoint now) override {
    if (checking) note(checker_.check(effects, now));
  }
  void note(const std::string& rule) {
    if (!rule.empty()) broken.push_back(rule);
  }

  Config config_;
  MessageBytesArena arena_;
  boost::asio::io_context io_;
  boost::asio::io_context notifier_io_;
  SystemdNotifier notifier_{notifier_io_};
  ServeSettings settings_;
  DispatchChecker checker_;
  std::vector<Peer> peers_;
  std::optional<Dispatcher> dispatcher_;
};

}  // namespace jetfan::testing
