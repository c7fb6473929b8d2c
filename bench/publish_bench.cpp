// jetfan-publish-bench: the C++ pieces bench/publish.sh puts together, publishing through jetfan
// (protocol version 3's PUB) against a direct cnats publisher. Every time printed is
// CLOCK_MONOTONIC in nanoseconds, as jetfan-bench's are.
//
//   jetfan-publish-bench stream URL STREAM SUBJECT
//       deletes STREAM if there is one and creates it afresh on SUBJECT (file storage): empty, and
//       remembering no Nats-Msg-Id of an earlier run (a tied publish's id repeats when the same
//       input is handled again, and a remembered one would be answered as a cheap duplicate)
//   jetfan-publish-bench messages URL STREAM
//       prints how many messages STREAM holds
//   jetfan-publish-bench publish URL PREFIX COUNT SIZE WINDOW
//       P-A: a cnats JetStream publisher, js_PublishAsync of COUNT messages of SIZE bytes to
//       PREFIX k0..k7 in turn, at most WINDOW unacknowledged (jsOptions.PublishAsync.MaxPending),
//       then js_PublishAsyncComplete. Prints ready_ns= (connected), done_ns= (every ack in) and
//       errors= (publishes the server refused or that timed out); exits 1 if there was one
//   jetfan-publish-bench publisher SOCKET NAME PREFIX COUNT SIZE WINDOW
//       P-C: a handler NAME with no NATS connection, over jetfan's socket in protocol version 3
//       (raw frames, proto/'s parser and encoder: no client library), that PUBs COUNT messages of
//       SIZE bytes to PREFIX k0..k7 in turn, untied, with at most WINDOW unanswered, and counts the
//       answers. Prints ready_ns= (READY read), done_ns= (the last answer read), pubok=, puberr=,
//       duplicates=; exits 1 unless every PUB was answered PUBOK and none was a duplicate
//   jetfan-publish-bench chain SOCKET NAME PREFIX COUNT
//       Chain-C: a handler NAME that, for each MSG, PUBs its payload tied to it (`<id> 0`) to
//       PREFIX<key> and ACKs it at once, in one write; jetfan holds the ACK until the follow-up is
//       stored. Prints ready_ns=, then stored_ns= once COUNT PUBOKs are in; runs on until jetfan
//       closes the connection or SIGTERM (so that no held ACK is cut off), then prints received=,
//       pubok=, puberr=, duplicates= and exits 1 if a PUBERR came or fewer than COUNT PUBOKs
//
// The handlers are single-threaded: one non-blocking socket, poll(), whatever is ready is read and
// parsed whole, and everything they have to say goes out in as few writes as the socket takes. A
// PUBERR's code and reason go to stderr (the first few).

#include <fcntl.h>
#include <nats/nats.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "delivery_parser.hpp"
#include "encoder.hpp"
#include "mesh_controller.hpp"
#include "nats_handles.hpp"
#include "unique_fd.hpp"

namespace {

std::uint64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000ULL + static_cast<std::uint64_t>(t.tv_nsec);
}

void print_time(const char* name, std::uint64_t ns) {
  std::printf("%s=%llu\n", name, static_cast<unsigned long long>(ns));
  std::fflush(stdout);
}

void check(natsStatus status, const char* what) {
  if (status != NATS_OK) throw std::runtime_error(std::string(what) + ": " + natsStatus_GetText(status));
}

constexpr int kKeys = 8;  // k0..k7, as jetfan-bench publish is given them

std::atomic<bool> stopping{false};

int fresh_stream(const std::vector<std::string>& a) {
  jetfan::example::MeshController controller(a[0]);
  controller.delete_stream(a[1]);
  controller.create_stream(a[1], {a[2]});
  return 0;
}

int messages(const std::vector<std::string>& a) {
  jetfan::example::MeshController controller(a[0]);
  std::printf("%llu\n", static_cast<unsigned long long>(controller.stream_messages(a[1])));
  return 0;
}

// P-A. cnats's own window: js_PublishAsync waits (up to StallWait) while MaxPending are unacked.
void count_error(jsCtx*, jsPubAckErr* error, void* closure) {
  auto& errors = *static_cast<std::atomic<long>*>(closure);
  if (errors++ < 5) std::fprintf(stderr, "jetfan-publish-bench publish: %s\n", natsStatus_GetText(error->Err));
}

// The subjects a run publishes to, in turn: PREFIX k0 .. k<kKeys - 1>.
std::vector<std::string> key_subjects(const std::string& prefix) {
  std::vector<std::string> subjects;
  subjects.reserve(kKeys);
  for (int k = 0; k < kKeys; ++k) subjects.push_back(prefix + "k" + std::to_string(k));
  return subjects;
}

int direct(const std::vector<std::string>& a) {
  natsConnection* raw = nullptr;
  check(natsConnection_ConnectTo(&raw, a[0].c_str()), "connect");
  jetfan::NatsConnectionPtr connection(raw);
  const long count = std::stol(a[2]);
  const std::size_t size = std::stoul(a[3]);
  std::atomic<long> errors{0};
  jsOptions options;
  jsOptions_Init(&options);
  options.PublishAsync.MaxPending = std::stol(a[4]);
  options.PublishAsync.StallWait = 10000;  // a stall is a wait for acks, not an error, on a loaded machine
  options.PublishAsync.ErrHandler = count_error;
  options.PublishAsync.ErrHandlerClosure = &errors;
  jsCtx* js = nullptr;
  check(natsConnection_JetStream(&js, raw, &options), "jetstream");
  jetfan::JsCtxPtr owned_js(js);
  const std::vector<std::string> subjects = key_subjects(a[1]);
  const std::string payload(size, 'x');
  print_time("ready_ns", now_ns());
  for (long i = 0; i < count; ++i) {
    check(js_PublishAsync(js, subjects[static_cast<std::size_t>(i % kKeys)].c_str(), payload.data(),
                          static_cast<int>(payload.size()), nullptr),
          "publish");
  }
  jsPubOptions done;
  jsPubOptions_Init(&done);
  done.MaxWait = 120000;
  check(js_PublishAsyncComplete(js, &done), "publish complete");
  print_time("done_ns", now_ns());
  std::printf("errors=%ld\n", errors.load());
  return errors == 0 ? 0 : 1;
}

// A handler connection over the raw socket: HELLO in version 3, READY read blocking; then
// non-blocking, driven by turn().
class RawHandler {
 public:
  RawHandler(const std::string& socket_path, const std::string& name)
      : fd_(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, socket_path.c_str(), sizeof(address.sun_path) - 1);
    if (::connect(fd_.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      throw std::runtime_error("connect " + socket_path + ": " + std::strerror(errno));
    }
    jetfan::proto::append_hello(out_, name, jetfan::proto::kVersion3);
    while (!out_.empty()) {
      flush();
      if (!out_.empty()) wait(POLLOUT);
    }
    jetfan::proto::Frame frame;
    while (!read_frame(frame)) {
      if (closed_) throw std::runtime_error("jetfan closed the connection before READY");
      wait(POLLIN);
    }
    if (frame.kind == jetfan::proto::Frame::Kind::kErr)
      throw std::runtime_error("jetfan refused HELLO: " + frame.error);
    if (frame.kind != jetfan::proto::Frame::Kind::kReady || frame.ready.version != jetfan::proto::kVersion3) {
      throw std::runtime_error("no READY in version 3 from jetfan");
    }
    ::fcntl(fd_.get(), F_SETFL, ::fcntl(fd_.get(), F_GETFL) | O_NONBLOCK);
  }

  // What to send: the caller appends frames (proto/encoder.hpp); turn() writes them.
  std::string& out() { return out_; }
  bool closed() const { return closed_; }

  // Writes what it can of out(); waits until the socket is readable (or writable, while out() has
  // bytes left, or a signal); reads what is there and hands each frame to on_frame. False once the
  // connection is closed.
  template <typename OnFrame>
  bool turn(OnFrame&& on_frame) {
    flush();
    if (closed_) return false;
    // What came with READY in the same read is parsed first, without waiting.
    if (input_.empty()) {
      pollfd p{fd_.get(), static_cast<short>(POLLIN | (out_.empty() ? 0 : POLLOUT)), 0};
      if (::poll(&p, 1, -1) < 0) {
        if (errno == EINTR) return !closed_;
        throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
      }
      if ((p.revents & (POLLIN | POLLHUP | POLLERR)) == 0) return true;
      if (!receive()) return false;
    }
    jetfan::proto::Frame frame;
    while (parse(frame)) {
      if (frame.kind == jetfan::proto::Frame::Kind::kPing) {
        jetfan::proto::append_pong(out_);
      } else if (frame.kind == jetfan::proto::Frame::Kind::kErr) {
        throw std::runtime_error("jetfan: ERR " + frame.error);
      } else {
        on_frame(frame);
      }
    }
    return true;
  }

 private:
  void wait(short events) {
    pollfd p{fd_.get(), events, 0};
    ::poll(&p, 1, 10000);
  }
  void flush() {
    while (!out_.empty()) {
      const ssize_t n = ::send(fd_.get(), out_.data(), out_.size(), MSG_NOSIGNAL);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
      if (n <= 0) {
        closed_ = true;
        out_.clear();
        return;
      }
      out_.erase(0, static_cast<std::size_t>(n));
    }
  }
  // Reads into in_, which input_ then views; only once the parser has taken all of input_.
  bool receive() {
    const ssize_t n = ::recv(fd_.get(), in_.data(), in_.size(), 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
    if (n <= 0) {
      closed_ = true;
      return false;
    }
    input_ = std::string_view(in_.data(), static_cast<std::size_t>(n));
    return true;
  }
  // The next frame of what receive() read; false when it is used up (the parser keeps a part).
  bool parse(jetfan::proto::Frame& frame) {
    const auto result = parser_.parse(input_, frame);
    if (result == jetfan::proto::DeliveryParser::Result::kError) {
      throw std::runtime_error("jetfan sent what the protocol does not allow: " + parser_.error());
    }
    return result == jetfan::proto::DeliveryParser::Result::kFrame;
  }
  bool read_frame(jetfan::proto::Frame& frame) {
    if (parse(frame)) return true;
    return receive() && parse(frame);
  }

  jetfan::UniqueFd fd_;
  jetfan::proto::DeliveryParser parser_;
  std::string out_;
  std::vector<char> in_ = std::vector<char>(256 * 1024);
  std::string_view input_;
  bool closed_ = false;
};

// The answers to PUBs, as the handlers count them.
struct Answers {
  long pubok = 0, puberr = 0, duplicates = 0;
  long total() const { return pubok + puberr; }
  bool take(const jetfan::proto::Frame& frame, const char* who) {
    if (frame.kind == jetfan::proto::Frame::Kind::kPubOk) {
      ++pubok;
      if (frame.publish.duplicate) ++duplicates;
      return true;
    }
    if (frame.kind == jetfan::proto::Frame::Kind::kPubErr) {
      if (puberr++ < 5) {
        std::fprintf(stderr, "jetfan-publish-bench %s: PUBERR %s %s\n", who, frame.publish.code.c_str(),
                     frame.publish.reason.c_str());
      }
      return true;
    }
    return false;
  }
  void print() const { std::printf("pubok=%ld\npuberr=%ld\nduplicates=%ld\n", pubok, puberr, duplicates); }
};

int publisher(const std::vector<std::string>& a) {
  RawHandler handler(a[0], a[1]);
  const long count = std::stol(a[3]);
  const std::string payload(std::stoul(a[4]), 'x');
  const long window = std::stol(a[5]);
  const std::vector<std::string> subjects = key_subjects(a[2]);
  print_time("ready_ns", now_ns());
  Answers answers;
  long sent = 0;
  while (answers.total() < count && !stopping) {
    // Refill the window in one go: one write carries every PUB it has room for.
    for (; sent < count && sent - answers.total() < window; ++sent) {
      jetfan::proto::append_pub(handler.out(), static_cast<std::uint64_t>(sent + 1),
                                subjects[static_cast<std::size_t>(sent % kKeys)], {}, payload);
    }
    if (!handler.turn([&](const jetfan::proto::Frame& frame) { answers.take(frame, "publisher"); })) break;
  }
  print_time("done_ns", now_ns());
  answers.print();
  return answers.pubok == count && answers.duplicates == 0 ? 0 : 1;
}

int chain(const std::vector<std::string>& a) {
  RawHandler handler(a[0], a[1]);
  const std::string& prefix = a[2];
  const long count = std::stol(a[3]);
  print_time("ready_ns", now_ns());
  Answers answers;
  long received = 0;
  std::uint64_t next_request = 1;
  std::string subject;
  bool stored = false;
  while (!stopping) {
    const bool open = handler.turn([&](const jetfan::proto::Frame& frame) {
      if (frame.kind == jetfan::proto::Frame::Kind::kMsg) {
        ++received;
        const auto& d = frame.delivery;
        subject.assign(prefix).append(d.key);
        jetfan::proto::append_pub(handler.out(), next_request++, subject, {}, d.payload, d.id, 0);
        jetfan::proto::append_ack(handler.out(), d.id);
      } else {
        answers.take(frame, "chain");
      }
    });
    if (!stored && answers.pubok >= count) {
      stored = true;
      print_time("stored_ns", now_ns());
    }
    if (!open) break;
  }
  std::printf("received=%ld\n", received);
  answers.print();
  return answers.puberr == 0 && answers.pubok >= count ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  // Not SA_RESTART's business: poll() is never restarted, so a handler sees the stop at once.
  std::signal(SIGTERM, [](int) { stopping = true; });
  std::signal(SIGINT, [](int) { stopping = true; });
  try {
    const std::string command = args.empty() ? "" : args[0];
    const std::vector<std::string> rest(args.begin() + (args.empty() ? 0 : 1), args.end());
    if (command == "stream" && rest.size() == 3) return fresh_stream(rest);
    if (command == "messages" && rest.size() == 2) return messages(rest);
    if (command == "publish" && rest.size() == 5) return direct(rest);  // as bench/go/publisher.go's
    if (command == "publisher" && rest.size() == 6) return publisher(rest);
    if (command == "chain" && rest.size() == 4) return chain(rest);
    std::fprintf(stderr, "usage: see the comment at the top of bench/publish_bench.cpp\n");
    return 64;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "jetfan-publish-bench: %s\n", e.what());
    return 1;
  }
}
