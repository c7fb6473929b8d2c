#pragma once
// StreamReader: reads messages straight from the consumer's stream ($JS.API.STREAM.MSG.GET), one
// request per message and many in flight, waiting for them. A read of the stream, not of the
// consumer: it changes nothing there. At startup, for what an earlier reader may have left unacked
// (Dispatcher::expect_outstanding).
//
// Thread: the io_context thread, before the Dispatcher starts. `config` and `nats` must outlive it.

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "config.hpp"
#include "nats_blocking.hpp"
#include "stream_message.hpp"

namespace jetfan {

class StreamReader {
 public:
  StreamReader(const Config& config, NatsBlocking& nats) : config_(config), nats_(nats) {}

  // The messages of the consumer's stream in (after, through] whose subjects match `filter` (empty:
  // all), in stream order, without their payloads. Sequences gone from the stream are skipped.
  // nullopt (logged) when more than `limit` match, one cannot be read, or it takes longer than
  // `budget`.
  std::optional<std::vector<jetstream::StoredMessage>> read(std::uint64_t after, std::uint64_t through,
                                                            std::string_view filter, std::size_t limit,
                                                            Duration budget);

 private:
  const Config& config_;
  NatsBlocking& nats_;
};

}  // namespace jetfan
