// libFuzzer target: the real Dispatcher with whole handler sessions. Real HandlerSessions on
// socketpairs, driven by an io_context polled here, accepted by a real Dispatcher whose upstream is
// a FakeUpstream and whose time moves by hand; a FuzzOwner (session_fuzz_owner.hpp) checks the
// core's rules (core/dispatch_checker.hpp) and what each peer reads after every input. Peers write
// random bytes and valid frames (HELLO, ACK/NAK/TERM/WIP for ids they were sent, ids another peer
// was sent and ids nobody was sent, PING, PONG, lines cut in two), read or stop reading, and hang
// up; the server side delivers messages (more than jetfan holds, so it fills and hands back),
// copies of held, nak'd and settled ones, status replies, probe answers and reconnects, and time
// passes. Each input is a run of its own: it ends by draining, closing every session
// and checking that nothing is held, every message's bytes are freed and no descriptor is left open.
// Build with -DJETFAN_FUZZ=ON (clang); run with scripts/fuzz.sh. Seeds: fuzz/corpus/session_fuzz/.
//
// The input: one mode byte, then operations, each an opcode byte (taken modulo 13) and its
// argument bytes (missing bytes read as 0). A peer is chosen by a byte modulo the peers there are.
//   mode: bit 0 hello_timeout 0 (else a minute); bit 1 idle_timeout 0; bit 2 a 4 KiB output cap and
//         the smallest socket buffers; bit 3 handler "alpha" takes one delivery at a time;
//         bit 4 at most 3 connections, 1 without HELLO; bit 5 max_held 6 (else 64).
//   0 connect                          7 read: which (255: every peer)
//   1 HELLO: peer, who, cut            8 time passes: by (x 250ms; 255: 90 s)
//   2 answer: peer, verb, how, which,  9 hang up: which, how (odd: only stop writing)
//     extra, cut                      10 the server says: what (status, probe answer, reconnect),
//   3 PING/PONG/blank: peer, which,       which pull
//     cut                             11 begin draining (SIGTERM)
//                                     12 a burst of ACK+PING: peer, count, ids..., cut
//   4 raw bytes: peer, cut, length, bytes
//   5 a new message: subject and headers, size
//   6 another copy of a known sequence: pool (nak'd, held, settled), which
// `cut` splits a write in two at that byte (modulo its length + 1), with the session run between.
// HELLO's `who`: bits 0-5 pick the name, bit 6 spells the verb in lower case, bit 7 asks for version 2.

#include <dirent.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unordered_map>
#include <vector>

#include <spdlog/spdlog.h>

#include "delivery_parser.hpp"
#include "peer_reader.hpp"
#include "session_fuzz_owner.hpp"

namespace {

using namespace jetfan;
using namespace jetfan::fuzz;

class Input {
 public:
  Input(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  bool done() const { return at_ >= size_; }
  std::uint8_t byte() { return at_ < size_ ? data_[at_++] : 0; }
  std::string bytes(std::size_t n) {
    n = std::min(n, size_ - std::min(at_, size_));
    std::string out(reinterpret_cast<const char*>(data_ + at_), n);
    at_ += n;
    return out;
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t at_ = 0;
};

// The handler end of one connection.
struct Peer {
  int fd = -1;
  ConnectionId id = 0;
  proto::DeliveryParser parser;
  std::vector<DeliveryId> seen;  // MSG ids this peer read
};

constexpr std::size_t kMaxPeers = 6;
// Ready handlers run per pump: enough for any burst here, and a bound on a timer re-armed at 0.
constexpr int kMaxHandlersPerPump = 512;

void pump(boost::asio::io_context& io) {
  io.restart();
  for (int i = 0; i < kMaxHandlersPerPump && io.poll_one() > 0; ++i) {
  }
}

class Driver {
 public:
  Driver(std::uint8_t mode, MessageBytesArena& arena)
      : config_(config(mode)),
        owner_(config_, arena, TimePoint{} + std::chrono::hours(1)),
        small_buffers_((mode & 4) != 0) {}

  ~Driver() {
    for (auto& peer : peers_) ::close(peer.fd);
  }

  std::uint64_t digest() const { return owner_.digest(); }

  void run(Input& in) {
    while (!in.done()) {
      step(in);
      pump(io_);
      owner_.check_state();
    }
    for (auto& peer : peers_) read(peer);
    owner_.finish();
    for (int round = 0; round < 8; ++round) {
      pump(io_);
      for (auto& peer : peers_) read(peer);
    }
    // Whatever is still queued (operations of closed sockets) completes or is dropped.
    io_.restart();
    io_.poll();
    owner_.check_end();
  }

 private:
  static Config config(std::uint8_t mode) {
    Config c;
    c.file = "fuzz.yaml";
    c.consumer.stream = "STREAM";
    c.consumer.durable = "CONSUMER";
    c.consumer.batch = 4;
    c.consumer.max_held = (mode & 32) ? 6 : 64;
    c.key.strip_prefix = std::string(FuzzOwner::kPrefix);
    SocketSettings& s = c.socket;
    s.path = "/fuzz.sock";
    // A minute, not more: the dispatcher's housekeeping runs every 500 ms of the time that passes,
    // so the jump that reaches these must stay short for an input to run in milliseconds.
    s.hello_timeout = (mode & 1) ? Duration(0) : Duration(60000);
    s.idle_timeout = (mode & 2) ? Duration(0) : Duration(60000);
    s.ping_timeout = Duration(60000);
    s.max_output_buffer = (mode & 4) ? 4096 : 1 << 20;
    s.max_connections = (mode & 16) ? 3 : 8;
    s.max_unidentified = (mode & 16) ? 1 : 4;
    c.delivery.nak_delay = Duration(1000);
    c.delivery.nak_delay_max = Duration(60000);
    c.delivery.remember = 100000;  // more than one input makes: the checker's rules about confirmations hold
    c.delivery.drain_timeout = Duration(2000);
    auto& h = c.handlers;
    h.resize(4);
    h[0] = {"alpha", {"a.*"}, (mode & 8) ? 1 : 2};
    h[0].when_full = WhenFull::kHandBack;
    h[1] = {"beta", {"a.>", "b.*"}, 1};
    h[1].allow.uids = {::getuid()};  // this process: allowed
    h[1].max_instances = 2;
    h[2] = {"gamma", {"c.#"}, 3};
    h[2].allow.uids = {::getuid() + 1};  // someone else: every HELLO as gamma is refused
    h[2].allow.gids = {::getgid() + 1};
    h[3] = {"delta", {"a.b", "#.d"}, 64};
    h[3].max_instances = 1;
    h[3].when_full = WhenFull::kHandBack;
    for (auto& handler : h) handler.ack_timeout = Duration(30000);
    return c;
  }

  Peer* peer(std::uint8_t selector) { return peers_.empty() ? nullptr : &peers_[selector % peers_.size()]; }

  // Writes as a peer would, in two writes cut where `cut` says (a line arrives in pieces).
  void send(Peer* p, const std::string& bytes, std::uint8_t cut) {
    if (!p) return;
    const std::size_t at = bytes.empty() ? 0 : cut % (bytes.size() + 1);
    write(*p, bytes.substr(0, at));
    if (at < bytes.size()) {
      pump(io_);
      write(*p, bytes.substr(at));
    }
  }
  void write(Peer& p, const std::string& bytes) {
    // A session that stopped reading leaves the bytes unsent, as a real socket would.
    if (!bytes.empty()) (void)::send(p.fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }

  void read(Peer& p) {
    const auto end = read_peer(p.fd, p.parser, [&](const proto::Frame& frame) {
      owner_.on_peer_frame(p.id, frame);
      if (frame.kind == proto::Frame::Kind::kMsg) p.seen.push_back(frame.delivery.id);
    });
    require(end != PeerReadEnd::kMalformed, "jetfan wrote a malformed stream: " + p.parser.error());
  }

  void connect() {
    if (peers_.size() >= kMaxPeers) return;
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0) broken("socketpair failed");
    if (small_buffers_) {
      const int smallest = 1;  // the kernel rounds it up to its minimum
      ::setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &smallest, sizeof smallest);
      ::setsockopt(fds[1], SOL_SOCKET, SO_RCVBUF, &smallest, sizeof smallest);
    }
    HandlerSession::Socket socket(io_);
    socket.assign(boost::asio::local::stream_protocol(), fds[0]);
    const auto id = owner_.accept(std::move(socket));
    if (!id) {
      ::close(fds[1]);
      return;
    }
    peers_.push_back(Peer{fds[1], *id, {}, {}});
  }

  DeliveryId pick_id(Peer* p, std::uint8_t how, std::uint8_t which) {
    switch (how % 4) {
      case 0:
        return p->seen.empty() ? which : p->seen[which % p->seen.size()];
      case 1: {  // one another peer was sent: never this peer's to settle
        const Peer* other = &peers_[which % peers_.size()];
        return other->seen.empty() ? which : other->seen[which % other->seen.size()];
      }
      case 2:
        return p->seen.empty() ? 1 : p->seen.back();
      default:
        return which == 255 ? UINT64_MAX : which;
    }
  }

  void step(Input& in) {
    switch (in.byte() % 13) {
      case 0:
        connect();
        break;
      case 1: {  // HELLO
        Peer* p = peer(in.byte());
        const std::uint8_t who = in.byte();
        static const char* const names[] = {"alpha", "beta", "gamma", "delta", "nobody", "ALPHA"};
        const std::string verb = (who & 0x40) ? "hello" : "HELLO";
        const std::string version = (who & 0x80) ? "2" : "1";
        send(p, verb + " " + names[(who & 0x3f) % 6] + " " + version + "\r\n", in.byte());
        break;
      }
      case 2: {  // a confirmation
        Peer* p = peer(in.byte());
        const std::uint8_t verb = in.byte();
        const std::uint8_t how = in.byte();
        const std::uint8_t which = in.byte();
        const std::uint8_t extra = in.byte();
        const std::uint8_t cut = in.byte();
        if (!p) break;
        const std::string id = std::to_string(pick_id(p, how, which));
        std::string line;
        switch (verb % 4) {
          case 0:
            line = "ACK " + id;
            break;
          case 1:
            line = "NAK " + id;
            if (extra % 5 == 1) line += " 0";
            if (extra % 5 == 2) line += " " + std::to_string(extra * 10);
            if (extra % 5 == 3) line += " 18446744073709551615";
            if (extra % 5 == 4) line += " 1099511627777";
            break;
          case 2:
            line = "TERM " + id + ((extra & 1) ? " bad input\tfrom peer" : "");
            break;
          default:
            line = "WIP " + id;
            break;
        }
        send(p, line + ((verb & 4) ? "\n" : "\r\n"), cut);
        break;
      }
      case 3: {  // PING, PONG, a blank line
        Peer* p = peer(in.byte());
        static const char* const lines[] = {"PING\r\n", "PONG\r\n", "\r\n", "  \n"};
        send(p, lines[in.byte() % 4], in.byte());
        break;
      }
      case 4: {  // raw bytes
        Peer* p = peer(in.byte());
        const std::uint8_t cut = in.byte();
        send(p, in.bytes(in.byte()), cut);
        break;
      }
      case 5: {  // a fresh message from the server
        static const char* const subjects[] = {"ev.a.b", "ev.a.x", "ev.a.b.c", "ev.b.y", "ev.c",
                                               "ev.c.d", "ev.z",   "other.a",  "ev.",    "ev.x.d"};
        const std::uint8_t what = in.byte();
        const std::uint8_t size = in.byte();
        // Mostly small; sometimes large enough to fill a socket's buffer.
        const std::string payload =
            size >= 250 ? std::string(70000 + size, 'p') : std::string(size % 40, 'a' + size % 26);
        owner_.publish(next_seq_++, subjects[(what & 0x7f) % 10], payload, (what & 0x80) != 0);
        break;
      }
      case 6: {  // another copy of a sequence the server knows: nak'd, held, or settled (lost ack)
        const std::uint8_t pool = in.byte();
        const std::uint8_t which = in.byte();
        const auto seqs = pool % 3 == 0 ? owner_.handed_back() : pool % 3 == 1 ? owner_.held() : owner_.settled();
        if (seqs.empty()) break;
        const std::uint64_t seq = seqs[which % seqs.size()];
        owner_.redeliver(seq, ++deliveries_[seq] + 1);
        break;
      }
      case 7: {  // read what jetfan sent
        const std::uint8_t which = in.byte();
        if (which == 255) {
          for (auto& p : peers_) read(p);
        } else if (Peer* p = peer(which)) {
          read(*p);
        }
        break;
      }
      case 8: {  // time passes
        const std::uint8_t by = in.byte();
        owner_.advance(by == 255 ? Duration(90000) : Duration(by * 250));
        break;
      }
      case 9: {  // a peer hangs up, or only stops writing
        const std::uint8_t which = in.byte();
        const std::uint8_t how = in.byte();
        if (peers_.empty()) break;
        const std::size_t index = which % peers_.size();
        if (how & 1) {
          ::shutdown(peers_[index].fd, SHUT_WR);
        } else {
          read(peers_[index]);
          ::close(peers_[index].fd);
          peers_.erase(peers_.begin() + static_cast<std::ptrdiff_t>(index));
        }
        break;
      }
      case 10: {  // the server says something other than a message
        const std::uint8_t what = in.byte();
        owner_.server_says(what, in.byte());
        break;
      }
      case 11:
        owner_.begin_drain();
        break;
      case 12: {  // a burst of frames in one write
        Peer* p = peer(in.byte());
        const std::uint8_t count = in.byte() % 8;
        std::string burst;
        for (std::uint8_t i = 0; i < count && p; ++i)
          burst += "ACK " + std::to_string(pick_id(p, i, in.byte())) + "\r\nPING\r\n";
        send(p, burst, in.byte());
        break;
      }
    }
  }

  // Destroyed in reverse: the owner's dispatcher closes its sessions, the io_context drops what is
  // still queued (each holding a session), and the config every session refers to goes last.
  Config config_;
  boost::asio::io_context io_;
  FuzzOwner owner_;
  bool small_buffers_;
  std::vector<Peer> peers_;
  std::uint64_t next_seq_ = 1;
  std::unordered_map<std::uint64_t, std::uint64_t> deliveries_;
};

// Descriptors this process has open.
std::size_t open_descriptors() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (!dir) broken("cannot list /proc/self/fd");
  std::size_t count = 0;
  while (::readdir(dir)) ++count;
  ::closedir(dir);
  return count;
}

// With JETFAN_FUZZ_DIGEST set, each input prints a line "session_fuzz digest <input> <digest>".
bool digest_inputs = false;

}  // namespace

// NOLINTNEXTLINE(readability-identifier-naming): libFuzzer's name
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spdlog::set_level(spdlog::level::off);  // the dispatcher logs what it does; the checks are the output here
  digest_inputs = std::getenv("JETFAN_FUZZ_DIGEST") != nullptr;
  return 0;
}

// NOLINTNEXTLINE(readability-identifier-naming): libFuzzer's name
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::size_t descriptors = open_descriptors();
  Input in(data, size);
  MessageBytesArena arena;  // outlives the io_context, whose pending operations may hold message bytes
  std::uint64_t digest = 0;
  {
    Driver driver(in.byte(), arena);
    driver.run(in);
    digest = driver.digest();
  }
  require(arena.messages == 0 && arena.bytes == 0, "message bytes outlived every session");
  require(open_descriptors() == descriptors, "a descriptor was left open");
  if (digest_inputs) {
    // Which input (FNV-1a of its bytes), and what it made happen: compared across runs in other orders.
    std::uint64_t input = 14695981039346656037ULL;
    for (std::size_t i = 0; i < size; ++i) input = (input ^ data[i]) * 1099511628211ULL;
    std::printf("session_fuzz digest %016llx %016llx\n", static_cast<unsigned long long>(input),
                static_cast<unsigned long long>(digest));
  }
  return 0;
}
