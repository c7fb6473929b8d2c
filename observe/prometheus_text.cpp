#include "prometheus_text.hpp"

#include "format.hpp"

namespace jetfan {
namespace {

class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}

  void family(const char* name, const char* type, const char* help) {
    out_.append("# HELP ").append(name).append(" ").append(help).append("\n");
    out_.append("# TYPE ").append(name).append(" ").append(type).append("\n");
  }
  void sample(const std::string& name, const std::string& labels, double value) {
    out_.append(name);
    if (!labels.empty()) out_.append("{").append(labels).append("}");
    out_.append(" ").append(format::number(value)).append("\n");
  }
  void sample(const std::string& name, const std::string& labels, std::uint64_t value) {
    out_.append(name);
    if (!labels.empty()) out_.append("{").append(labels).append("}");
    out_.append(" ").append(std::to_string(value)).append("\n");
  }
  void attempts(const std::string& labels, const AttemptsHistogram& h) {
    const std::string name = "jetfan_handler_attempts";
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < AttemptsHistogram::kBounds.size(); ++i) {
      cumulative += h.bucket(i);
      sample(name + "_bucket", labels + ",le=\"" + std::to_string(AttemptsHistogram::kBounds[i]) + "\"", cumulative);
    }
    sample(name + "_bucket", labels + ",le=\"+Inf\"", h.count());
    sample(name + "_sum", labels, h.sum());
    sample(name + "_count", labels, h.count());
  }
  // One series of a histogram family: cumulative buckets, sum and count.
  void histogram(const std::string& name, const std::string& labels, const LatencyHistogram& h) {
    const std::string prefix = labels.empty() ? "" : labels + ",";
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < LatencyHistogram::kBoundsMicros.size(); ++i) {
      cumulative += h.bucket(i);
      const double bound = static_cast<double>(LatencyHistogram::kBoundsMicros[i]) / 1e6;
      sample(name + "_bucket", prefix + "le=\"" + format::number(bound) + "\"", cumulative);
    }
    sample(name + "_bucket", prefix + "le=\"+Inf\"", h.count());
    sample(name + "_sum", labels, h.sum_seconds());
    sample(name + "_count", labels, h.count());
  }

 private:
  std::string& out_;
};

std::string label(std::string_view name, std::string_view value) {
  return std::string(name) + "=\"" + escape_label_value(value) + "\"";
}

std::string handler_label(const HandlerView& h) { return label("handler", h.name); }

}  // namespace

std::string escape_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string render_prometheus(const StatusSnapshot& s) {
  std::string out;
  out.reserve(8192 + s.handlers.size() * 4096);
  Writer w(out);
  const auto& t = s.totals;

  w.family("jetfan_info", "gauge", "Always 1; the labels say which jetfan serves which consumer.");
  w.sample("jetfan_info",
           label("version", s.version) + "," + label("stream", s.stream) + "," + label("durable", s.durable),
           std::uint64_t{1});
  w.family("jetfan_build_info", "gauge", "Always 1; the labels say how this jetfan was built.");
  w.sample("jetfan_build_info",
           label("version", s.version) + "," + label("cnats", s.cnats_version) + "," + label("compiler", s.compiler),
           std::uint64_t{1});
  w.family("jetfan_ready", "gauge",
           "1 while jetfan serves and consumes as its durable's only reader (as /ready), else 0.");
  w.sample("jetfan_ready", "", std::uint64_t{s.ready ? 1u : 0u});
  w.family("jetfan_nats_connected", "gauge", "1 while the connection to the NATS server is up, else 0.");
  w.sample("jetfan_nats_connected", "", std::uint64_t{s.nats_connected ? 1u : 0u});
  w.family("jetfan_other_reader", "gauge", "1 while another client is seen reading jetfan's durable, else 0.");
  w.sample("jetfan_other_reader", "", std::uint64_t{s.other_reader ? 1u : 0u});
  if (!s.pin_group.empty()) {
    w.family("jetfan_pinned", "gauge", "1 while jetfan is the pinned client of its consumer's group, 0 on standby.");
    w.sample("jetfan_pinned", "", std::uint64_t{s.pin_role == "standby" ? 0u : 1u});
    w.family("jetfan_pin_gained_total", "counter", "Times jetfan became the pinned client.");
    w.sample("jetfan_pin_gained_total", "", s.pin_gained);
    w.family("jetfan_pin_lost_total", "counter", "Times jetfan lost the pin and stood by.");
    w.sample("jetfan_pin_lost_total", "", s.pin_lost);
  }

  if (s.tracing) {
    const auto& tr = *s.tracing;
    w.family("jetfan_traced_messages_total", "counter", "Message arrivals traced (tracing.sample_ratio, traceparent).");
    w.sample("jetfan_traced_messages_total", "", tr.traced_messages);
    w.family("jetfan_trace_spans_total", "counter",
             "Spans finished, by what became of them: exported, or dropped (queue_full, export_failed).");
    w.sample("jetfan_trace_spans_total", "outcome=\"exported\"", tr.exported);
    w.sample("jetfan_trace_spans_total", "outcome=\"queue_full\"", tr.dropped_queue_full);
    w.sample("jetfan_trace_spans_total", "outcome=\"export_failed\"", tr.dropped_export_failed);
    w.family("jetfan_trace_export_requests_total", "counter", "OTLP export requests, by result.");
    w.sample("jetfan_trace_export_requests_total", "result=\"ok\"",
             tr.export_requests - std::min(tr.failed_requests, tr.export_requests));
    w.sample("jetfan_trace_export_requests_total", "result=\"failed\"", tr.failed_requests);
  }
  if (s.ledger) {
    const auto& l = *s.ledger;
    w.family("jetfan_ledger_writes_total", "counter",
             "Confirmation ledger records written (put), and deleted once their message settled (delete).");
    w.sample("jetfan_ledger_writes_total", "kind=\"put\"", l.puts);
    w.sample("jetfan_ledger_writes_total", "kind=\"delete\"", l.deletes);
    w.family("jetfan_ledger_write_failures_total", "counter",
             "Ledger writes the server did not take or did not answer; each is tried again.");
    w.sample("jetfan_ledger_write_failures_total", "", l.failed);
    w.family("jetfan_ledger_dropped_total", "counter",
             "Confirmations not recorded in the ledger: past ledger.max_records, or too many handler names.");
    w.sample("jetfan_ledger_dropped_total", "", l.dropped);
    w.family("jetfan_ledger_loaded_total", "counter", "Ledger records read at start or at a takeover.");
    w.sample("jetfan_ledger_loaded_total", "", l.loaded);
    w.family("jetfan_ledger_tracked", "gauge",
             "Messages the ledger tracks now: partly confirmed, or with a record to delete.");
    w.sample("jetfan_ledger_tracked", "", static_cast<std::uint64_t>(l.tracked));
    w.family("jetfan_ledger_waiting", "gauge", "Ledger writes waiting for the server's answer.");
    w.sample("jetfan_ledger_waiting", "", static_cast<std::uint64_t>(l.waiting));
    // A gauge rather than the reason: an alert needs a number, and the reason is in jetfan status.
    w.family("jetfan_ledger_writing", "gauge",
             "1 while the confirmation ledger is being written, 0 while it is not (a restart then costs duplicates).");
    w.sample("jetfan_ledger_writing", "", std::uint64_t{l.not_written.empty() ? 1u : 0u});
  }

  struct Counter {
    const char* name;
    const char* help;
    std::uint64_t value;
  };
  const Counter counters[] = {
      {"jetfan_messages_arrived_total", "Message copies the server delivered to jetfan.", t.arrived},
      {"jetfan_messages_redelivered_total", "Arrivals the server had delivered before (delivery count above 1).",
       t.redelivered},
      {"jetfan_messages_acked_total", "Messages acked at the server (+ACK): every recipient confirmed.", t.acked},
      {"jetfan_messages_nakked_total", "Messages handed back for redelivery (-NAK): a delivery failed, or a drain.",
       t.nakked},
      {"jetfan_messages_terminated_total", "Messages terminated (+TERM) because a handler said TERM.", t.terminated},
      {"jetfan_messages_no_recipient_total", "Messages no declared handler matched; acked at once.", t.no_recipient},
      {"jetfan_messages_unroutable_total", "Messages whose subject lacks the key prefix; terminated at once.",
       t.unroutable},
      {"jetfan_messages_unreadable_subject_total",
       "Messages whose subject the NATS client cannot read, found after their delivery broke the connection; "
       "terminated.",
       s.unreadable_total},
      {"jetfan_messages_duplicate_total", "Copies of a message jetfan still held or had already settled.",
       t.already_held + t.already_settled},
      {"jetfan_unknown_confirmations_total", "Confirmations naming no delivery in flight (late, after a timeout).",
       t.unknown_confirmations},
      {"jetfan_deliveries_skipped_total",
       "Deliveries not made: the message came again and the handler had confirmed it before.", t.skipped_confirmed},
      {"jetfan_order_retries_total",
       "Failed deliveries of messages an ordered handler owed, given again by jetfan rather than handed back.",
       t.order_retries},
      {"jetfan_order_gave_up_total",
       "Messages handed back for room that did not come back in time: their order keys went on without them.",
       t.order_gave_up},
      {"jetfan_delivery_gaps_total",
       "Jumps in the consumer's delivery numbers: deliveries lost on the way (a broken connection, a leader that "
       "went); later messages of ordered handlers, and acks under AckPolicy all, waited for them.",
       t.delivery_gaps},
      {"jetfan_deliveries_lost_total", "Deliveries of the consumer that never arrived (in those jumps).",
       t.deliveries_lost},
      {"jetfan_gap_holds_let_go_total",
       "Holds after deliveries were lost that ended after three AckWaits without proof the lost ones came back.",
       t.gap_holds_let_go},
      {"jetfan_messages_handed_back_for_room_total",
       "Messages nak'd so that others could be held: the oldest a stalled handler kept from settling.",
       t.handed_back_for_room},
      {"jetfan_nats_reconnects_total", "Reconnections to the NATS server.", s.reconnects},
      {"jetfan_tail_dropped_messages_total", "Messages tail observers missed because they read too slowly.",
       s.tail_dropped},
  };
  for (const auto& c : counters) {
    w.family(c.name, "counter", c.help);
    w.sample(c.name, "", c.value);
  }
  w.family("jetfan_reloads_total", "counter", "Config reloads, by result.");
  w.sample("jetfan_reloads_total", "result=\"applied\"", s.reloads_applied);
  w.sample("jetfan_reloads_total", "result=\"refused\"", s.reloads_refused);

  w.family("jetfan_messages_held", "gauge", "Messages jetfan holds: arrived, not yet settled or handed back.");
  w.sample("jetfan_messages_held", "", static_cast<std::uint64_t>(s.held));
  w.family("jetfan_messages_held_bytes", "gauge",
           "Bytes of the messages jetfan keeps alive: held, in flight, queued for handlers' sockets.");
  w.sample("jetfan_messages_held_bytes", "", s.held_bytes);
  w.family("jetfan_messages_held_limit", "gauge", "Messages jetfan holds at most: consumer.max_held.");
  w.sample("jetfan_messages_held_limit", "", static_cast<std::uint64_t>(s.max_held));
  w.family("jetfan_messages_held_limit_bytes", "gauge",
           "Bytes of messages jetfan keeps alive at most: consumer.max_held_bytes; 0: no bound.");
  w.sample("jetfan_messages_held_limit_bytes", "", s.max_held_bytes);
  w.family("jetfan_messages_oldest_held_age_seconds", "gauge", "Age of the oldest message held; 0 when none is.");
  w.sample("jetfan_messages_oldest_held_age_seconds", "", s.oldest_held_seconds.value_or(0));
  w.family("jetfan_deliveries_in_flight", "gauge", "Deliveries sent to handlers and not yet confirmed.");
  w.sample("jetfan_deliveries_in_flight", "", static_cast<std::uint64_t>(s.in_flight));
  w.family("jetfan_pull_requests_outstanding", "gauge", "Pull requests jetfan has open at the server.");
  w.sample("jetfan_pull_requests_outstanding", "", static_cast<std::uint64_t>(s.pulls_outstanding));
  w.family("jetfan_pull_batch", "gauge", "Messages one pull request asks for: consumer.batch, or its default.");
  w.sample("jetfan_pull_batch", "", static_cast<std::uint64_t>(s.pull_batch));
  w.family("jetfan_tail_observers", "gauge", "Connected `jetfan tail` observers.");
  w.sample("jetfan_tail_observers", "", static_cast<std::uint64_t>(s.tails.size()));

  struct PerHandler {
    const char* name;
    const char* type;
    const char* help;
  };
  auto each_handler = [&](const PerHandler& family, auto value) {
    w.family(family.name, family.type, family.help);
    for (const auto& h : s.handlers) w.sample(family.name, handler_label(h), value(h));
  };
  each_handler({"jetfan_handler_connections", "gauge", "Connected instances of the handler."},
               [](const HandlerView& h) { return static_cast<std::uint64_t>(h.instances.size()); });
  each_handler({"jetfan_handler_in_flight", "gauge", "Deliveries to the handler not yet confirmed."},
               [](const HandlerView& h) { return static_cast<std::uint64_t>(h.in_flight); });
  each_handler({"jetfan_handler_queued", "gauge", "Messages held for the handler, waiting for an instance with room."},
               [](const HandlerView& h) { return static_cast<std::uint64_t>(h.queued); });
  each_handler({"jetfan_handler_backlog", "gauge",
                "Held messages the handler has not yet confirmed: queued, in flight, waiting for order or a retry."},
               [](const HandlerView& h) { return static_cast<std::uint64_t>(h.backlog); });
  each_handler({"jetfan_handler_max_rate", "gauge", "The handler's max_rate, deliveries a second; 0 when it has none."},
               [](const HandlerView& h) { return h.max_rate; });
  each_handler({"jetfan_handler_rate_waiting", "gauge", "1 while messages for the handler wait for its max_rate."},
               [](const HandlerView& h) { return std::uint64_t{h.rate_waiting ? 1u : 0u}; });
  each_handler({"jetfan_handler_inflight_limit", "gauge",
                "Deliveries the handler's connected instances may have unconfirmed now, summed: max_inflight each, "
                "or with adaptive_inflight their adaptive limits."},
               [](const HandlerView& h) { return static_cast<std::uint64_t>(h.inflight_limit); });
  each_handler({"jetfan_handler_oldest_unconfirmed_age_seconds", "gauge",
                "Age of the oldest held message the handler has not confirmed; 0 when none."},
               [](const HandlerView& h) { return h.oldest_unconfirmed_seconds.value_or(0); });
  each_handler({"jetfan_handler_order_blocked_keys", "gauge",
                "Ordered handlers: order keys with a message waiting behind an older one; 0 when unordered."},
               [](const HandlerView& h) { return static_cast<std::uint64_t>(h.order_blocked_keys); });
  each_handler({"jetfan_handler_order_waiting", "gauge",
                "Ordered handlers: held messages waiting behind an older one of their order key."},
               [](const HandlerView& h) { return static_cast<std::uint64_t>(h.order_waiting); });
  each_handler({"jetfan_handler_order_oldest_wait_seconds", "gauge",
                "Ordered handlers: age of the oldest message waiting behind its order key; 0 when none."},
               [](const HandlerView& h) { return h.order_oldest_wait_seconds.value_or(0); });
  each_handler({"jetfan_handler_without_order_key_total", "counter",
                "Ordered handlers: messages delivered unordered because they had no order key."},
               [](const HandlerView& h) { return h.without_order_key; });
  each_handler({"jetfan_handler_deliveries_total", "counter", "Deliveries (MSG) sent to the handler's instances."},
               [](const HandlerView& h) { return h.stats.delivered; });
  each_handler({"jetfan_handler_socket_writes_total", "counter",
                "Writes (sendmsg) to the handler's instances; deliveries_total over this is MSGs per write."},
               [](const HandlerView& h) { return h.socket_writes; });
  each_handler({"jetfan_handler_socket_written_bytes_total", "counter", "Bytes written to the handler's instances."},
               [](const HandlerView& h) { return h.socket_written_bytes; });
  each_handler({"jetfan_handler_socket_reads_total", "counter",
                "Reads from the handler's instances that brought bytes; confirmations over this are per read."},
               [](const HandlerView& h) { return h.socket_reads; });
  each_handler({"jetfan_handler_socket_read_bytes_total", "counter", "Bytes read from the handler's instances."},
               [](const HandlerView& h) { return h.socket_read_bytes; });
  each_handler({"jetfan_handler_acks_total", "counter", "ACKs the handler sent."},
               [](const HandlerView& h) { return h.stats.acked; });
  each_handler({"jetfan_handler_terms_total", "counter", "TERMs (poison) the handler sent."},
               [](const HandlerView& h) { return h.stats.termed; });
  w.family("jetfan_handler_delivery_failures_total", "counter",
           "Deliveries to the handler that failed, by cause: nak, timeout (ack_timeout passed), disconnect.");
  for (const auto& h : s.handlers) {
    w.sample("jetfan_handler_delivery_failures_total", handler_label(h) + ",cause=\"nak\"", h.stats.failed_nak);
    w.sample("jetfan_handler_delivery_failures_total", handler_label(h) + ",cause=\"timeout\"", h.stats.failed_timeout);
    w.sample("jetfan_handler_delivery_failures_total", handler_label(h) + ",cause=\"disconnect\"",
             h.stats.failed_disconnect);
  }
  w.family("jetfan_handler_inflight_limit_cuts_total", "counter",
           "adaptive_inflight: cuts of an instance's in-flight limit, by cause: nak, timeout, latency.");
  for (const auto& h : s.handlers) {
    for (const auto cause : {AdaptiveLimit::Cut::kNak, AdaptiveLimit::Cut::kTimeout, AdaptiveLimit::Cut::kLatency}) {
      w.sample("jetfan_handler_inflight_limit_cuts_total", handler_label(h) + ",cause=\"" + cut_name(cause) + "\"",
               h.stats.inflight_cuts[static_cast<std::size_t>(cause)]);
    }
  }
  w.family("jetfan_handler_confirmation_latency_seconds", "histogram",
           "Time from sending a delivery to the handler's ACK, NAK or TERM.");
  for (const auto& h : s.handlers) {
    w.histogram("jetfan_handler_confirmation_latency_seconds", handler_label(h), h.stats.confirmation_latency);
  }
  each_handler({"jetfan_handler_paused", "gauge", "1 while the handler is paused: it gets nothing new."},
               [](const HandlerView& h) { return static_cast<std::uint64_t>(h.paused ? 1 : 0); });
  each_handler({"jetfan_handler_redrive_running", "gauge", "1 while a redrive of the handler's dead letters runs."},
               [](const HandlerView& h) { return h.redrive_running; });
  w.family("jetfan_handler_redrives_total", "counter",
           "Dead letters redriven to the handler, by outcome: confirmed (ACKed, deleted), again (failed again: "
           "dead-lettered anew, the old one deleted), kept (not settled or not deleted: it stays), refused (not "
           "redrivable: a subject no server takes, or a key not the handler's; it stays).");
  for (const auto& h : s.handlers) {
    w.sample("jetfan_handler_redrives_total", handler_label(h) + ",outcome=\"confirmed\"", h.redrive_confirmed);
    w.sample("jetfan_handler_redrives_total", handler_label(h) + ",outcome=\"again\"", h.redrive_again);
    w.sample("jetfan_handler_redrives_total", handler_label(h) + ",outcome=\"kept\"", h.redrive_kept);
    w.sample("jetfan_handler_redrives_total", handler_label(h) + ",outcome=\"refused\"", h.redrive_refused);
  }
  w.family("jetfan_handler_attempts", "histogram",
           "Deliveries the handler needed per message it settled (ACK, TERM, dead letter, or given up).");
  for (const auto& h : s.handlers) w.attempts(handler_label(h), h.stats.attempts);
  w.family("jetfan_handler_dead_letters_total", "counter",
           "Messages the handler gave up, by reason: used_up (max_attempts, dead letter stored), term (its TERM, "
           "dead letter stored), gave_up (max_attempts without a dead_letter subject: a TERM for it).");
  for (const auto& h : s.handlers) {
    w.sample("jetfan_handler_dead_letters_total", handler_label(h) + ",reason=\"used_up\"",
             h.stats.dead_lettered_used_up);
    w.sample("jetfan_handler_dead_letters_total", handler_label(h) + ",reason=\"term\"", h.stats.dead_lettered_term);
    w.sample("jetfan_handler_dead_letters_total", handler_label(h) + ",reason=\"gave_up\"", h.stats.gave_up);
  }
  each_handler({"jetfan_handler_dead_letter_publish_failures_total", "counter",
                "Dead-letter publishes of the handler's messages that failed; each is tried again."},
               [](const HandlerView& h) { return h.stats.dead_letter_failures; });
  w.family("jetfan_handler_publishes_total", "counter",
           "The handler's publishes through jetfan (PUB), by outcome: stored, duplicate (the stream had it: a tied "
           "publish made again), refused (by jetfan: not allowed, malformed, too large, ...), failed (no stream, "
           "refused by the stream, server down), timeout (no answer in time: it may be stored).");
  for (const auto& h : s.handlers) {
    const PublishStats& p = h.publishes;
    w.sample("jetfan_handler_publishes_total", handler_label(h) + ",outcome=\"stored\"", p.stored);
    w.sample("jetfan_handler_publishes_total", handler_label(h) + ",outcome=\"duplicate\"", p.duplicates);
    w.sample("jetfan_handler_publishes_total", handler_label(h) + ",outcome=\"refused\"", p.refused);
    w.sample("jetfan_handler_publishes_total", handler_label(h) + ",outcome=\"failed\"", p.failed);
    w.sample("jetfan_handler_publishes_total", handler_label(h) + ",outcome=\"timeout\"", p.timed_out);
  }
  each_handler({"jetfan_handler_publishes_in_flight", "gauge",
                "The handler's publishes sent to the server and waiting for its answer."},
               [](const HandlerView& h) { return h.publishes.in_flight; });
  w.family("jetfan_handler_publish_latency_seconds", "histogram",
           "Time from sending a handler's publish to the server's answer (stored or not; timeouts not included).");
  for (const auto& h : s.handlers) {
    w.histogram("jetfan_handler_publish_latency_seconds", handler_label(h), h.publishes.latency);
  }
  w.family("jetfan_message_publish_age_seconds", "histogram",
           "Time from a message's publication (its JetStream timestamp) to its arrival at jetfan.");
  w.histogram("jetfan_message_publish_age_seconds", "", s.publish_age);

  if (s.polled) {
    w.family("jetfan_consumer_num_pending", "gauge",
             "Messages of the stream the server has not yet delivered to the consumer (its consumer info).");
    w.sample("jetfan_consumer_num_pending", "", s.polled->num_pending);
    w.family("jetfan_consumer_num_ack_pending", "gauge",
             "Messages the server delivered to the consumer and awaits an ack for (its consumer info).");
    w.sample("jetfan_consumer_num_ack_pending", "", s.polled->num_ack_pending);
    w.family("jetfan_consumer_info_age_seconds", "gauge", "Age of the consumer info the two above come from.");
    w.sample("jetfan_consumer_info_age_seconds", "", s.polled_age_seconds);
  }

  w.family("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.");
  w.sample("process_cpu_seconds_total", "", s.cpu_seconds);
  if (s.open_fds >= 0) {
    w.family("process_open_fds", "gauge", "Number of open file descriptors.");
    w.sample("process_open_fds", "", static_cast<std::uint64_t>(s.open_fds));
  }
  if (s.max_fds >= 0) {
    w.family("process_max_fds", "gauge", "Maximum number of open file descriptors.");
    w.sample("process_max_fds", "", static_cast<std::uint64_t>(s.max_fds));
  }
  w.family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
  w.sample("process_resident_memory_bytes", "", s.resident_memory_bytes);
  if (s.heap_in_use_bytes >= 0) {
    w.family("jetfan_heap_in_use_bytes", "gauge",
             "Heap memory jetfan's allocations hold now; resident memory above it is kept by the allocator.");
    w.sample("jetfan_heap_in_use_bytes", "", static_cast<std::uint64_t>(s.heap_in_use_bytes));
  }
  w.family("process_start_time_seconds", "gauge", "Start time of the process since the Unix epoch in seconds.");
  w.sample("process_start_time_seconds", "", s.start_time_unix);
  return out;
}

}  // namespace jetfan
