#pragma once
// ReaderHealth: whether jetfan is consuming its durable as its only reader, said where an operator
// looks. It owns the pure judgements (core/ConsumingHealth, core/OtherReaderCheck), hears what the
// dispatcher hears (the connection going and coming back, each consumer info answer with jetfan's
// own figures, moments that excuse a gap), and logs each change once: an error when another reader
// is seen or the consumer is gone, a line when it ends.
//
// What it decides shows in `jetfan status` (problems first; exit 1 while serving but not
// consuming), `/ready`, the gauges jetfan_nats_connected and jetfan_other_reader, and so in a
// container's health check. With consumer.on_other_reader: exit, seeing another reader asks the
// dispatcher to stop (exit_code() becomes 78).
//
// Thread: the io_context thread (the Dispatcher's). `config` must outlive it.

#include <optional>
#include <string>
#include <vector>

#include "config.hpp"
#include "consumer_info.hpp"
#include "consuming_health.hpp"
#include "other_reader.hpp"
#include "status_snapshot.hpp"
#include "time.hpp"

namespace jetfan {

class ReaderHealth {
 public:
  // `pinned`: the consumer has a pinned_client group, so other readers are standbys the server
  // keeps waiting: no other reader is looked for.
  ReaderHealth(const Config& config, Duration poll, bool pinned);

  void bound(std::uint64_t delivered_consumer_seq, TimePoint now) { others_.bound(delivered_consumer_seq, now); }
  void disconnected(TimePoint now, std::string_view why);
  void reconnected();
  // A possible leader change, or time jetfan did not run: a gap then is no evidence.
  void excuse() { others_.excuse(); }
  // A consumer info answer: the info, or the server's error.
  void heard(TimePoint now, const jetstream::ConsumerInfo& info, const OtherReaderCheck::Own& own);
  void heard(const jetstream::ApiError& error);

  // Why jetfan is not consuming now; empty: it is.
  std::vector<std::string> reasons(TimePoint now) const { return health_.reasons(now); }
  void fill(StatusSnapshot& snapshot, TimePoint now) const;
  // Set when on_other_reader: exit asked jetfan to stop: the status to exit with.
  std::optional<int> exit_code() const { return exit_code_; }

 private:
  std::string describe(const OtherReaderVerdict& verdict) const;

  const Config& config_;
  ConsumingHealth health_;
  OtherReaderCheck others_;
  bool pinned_;
  std::optional<std::string> missing_;  // as last logged
  std::optional<int> exit_code_;
};

}  // namespace jetfan
