#pragma once
// ConsumerWatch: the server's view of jetfan's consumer, read while jetfan serves. It asks for the
// consumer's info ($JS.API.CONSUMER.INFO) through the Upstream every kPollEvery, and at once when
// someone asks (`jetfan status`), keeps the last answer for the metrics and status, and hands each
// answer asked for to the one who asked.
//
// It never waits: a request goes out with Upstream::api_request and its answer comes back through
// on_reply, with ids of its own (kIdBit set) so that the Dispatcher can tell them from the
// dead-letter jobs' requests. A poll not answered by the next one is given up; a late answer still
// counts.
//
// Thread: the io_context thread only (the Dispatcher's). `upstream` must outlive it. The answer
// sink, when set, is called from inside on_reply and must not destroy the watch.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <variant>

#include "config.hpp"
#include "consumer_info.hpp"
#include "status_snapshot.hpp"
#include "time.hpp"
#include "upstream.hpp"

namespace jetfan {

// What `jetfan status` shows of the server's consumer info, or why there is none.
using ConsumerAnswer = std::variant<ServerConsumerView, std::string>;
ConsumerAnswer server_view(const std::variant<jetstream::ConsumerInfo, jetstream::ApiError>& parsed);

class ConsumerWatch {
 public:
  // Requests of the watch have this bit set in their id; the dead-letter jobs' ids never do.
  static constexpr std::uint64_t kIdBit = std::uint64_t{1} << 62;
  static constexpr Duration kPollEvery{2000};
  // A view older than this is not shown (the server has not answered three polls).
  static constexpr Duration kStale{3 * kPollEvery};

  // Answers to ask(): the token given there, and the view or why there is none.
  using Sink = std::function<void(std::uint64_t token, const ConsumerAnswer& answer)>;

  ConsumerWatch(const Config& config, Upstream& upstream);

  static bool owns(std::uint64_t id) { return (id & kIdBit) != 0; }

  // Sends the periodic request when it is due. Called often (the dispatcher's housekeeping).
  void tick(TimePoint now);
  // Asks now; the answer goes to the sink with `token`. False when the request could not go out
  // (no connection): no answer will come.
  bool ask(std::uint64_t token);
  // Where answers to ask() go; nullptr: nowhere (its owner goes). Set once or reset.
  void set_sink(Sink sink) { sink_ = std::move(sink); }
  // What an answer said: the consumer's info, or the server's error (or why there was no answer).
  struct Heard {
    const jetstream::ConsumerInfo* info = nullptr;  // valid until the next on_reply
    std::optional<jetstream::ApiError> error;
  };
  // An answer to one of this watch's requests (owns(id)).
  Heard on_reply(std::uint64_t id, const ApiReply& reply, TimePoint now);

  // The last view the server gave, if not older than kStale, and its age.
  void fill(StatusSnapshot& snapshot, TimePoint now) const;
  const std::optional<jetstream::ConsumerInfo>& last() const { return last_; }

 private:
  bool send(std::uint64_t token);

  Upstream& upstream_;
  std::string subject_;
  Sink sink_;
  std::uint64_t next_id_ = 1;
  std::map<std::uint64_t, std::uint64_t> asked_;  // request id (without kIdBit) -> token; 0: a poll
  std::optional<TimePoint> next_poll_;
  std::optional<jetstream::ConsumerInfo> last_;
  TimePoint last_at_{};
};

}  // namespace jetfan
