#include "ledger_reader.hpp"

#include <chrono>
#include <string_view>

#include "ledger_record.hpp"
#include "logging.hpp"
#include "nats_handles.hpp"

namespace jetfan {

std::optional<std::vector<LedgerRecord>> LedgerReader::read(std::size_t limit, Duration budget) {
  const LedgerConfig& ledger = *config_.ledger;
  const std::string& durable = config_.consumer.durable;
  std::vector<LedgerRecord> records;
  std::string why;
  const auto call = [&] {
    jsCtx* raw_js = nullptr;
    if (const natsStatus status = natsConnection_JetStream(&raw_js, nats_.connection(), nullptr); status != NATS_OK) {
      why = nats_last_error(status);
      return;
    }
    JsCtxPtr js(raw_js);
    kvStore* raw_kv = nullptr;
    if (const natsStatus status = js_KeyValue(&raw_kv, js.get(), ledger.bucket.c_str()); status != NATS_OK) {
      why = nats_last_error(status);
      return;
    }
    KvStorePtr kv(raw_kv);
    // Deletes are passed over here, not by the watcher's IgnoreDeletes: cnats 3.4.1's kvWatcher_Next,
    // skipping them itself, takes the time since the call began off its timeout once per delete,
    // so a run of a few thousand delete markers (every settled record leaves one until the TTL)
    // ends in a timeout.
    kvWatcher* raw_watcher = nullptr;
    const std::string keys = durable + ".>";
    if (const natsStatus status = kvStore_Watch(&raw_watcher, kv.get(), keys.c_str(), nullptr); status != NATS_OK) {
      why = nats_last_error(status);
      return;
    }
    KvWatcherPtr watcher(raw_watcher);
    const auto deadline = std::chrono::steady_clock::now() + budget;
    for (;;) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        why = "reading took longer than " + std::to_string(budget.count()) + "ms";
        return;
      }
      kvEntry* raw_entry = nullptr;
      if (const natsStatus status = kvWatcher_Next(&raw_entry, watcher.get(), left.count()); status != NATS_OK) {
        why = nats_last_error(status);
        return;
      }
      if (raw_entry == nullptr) return;  // every initial value came
      KvEntryPtr entry(raw_entry);
      if (kvEntry_Operation(raw_entry) != kvOp_Put) continue;  // a message settled: nothing to remember
      const std::string subject = "$KV." + ledger.bucket + "." + kvEntry_Key(raw_entry);
      const auto seq = jetstream::ledger_seq_of(subject, ledger.bucket, durable);
      const auto handlers = jetstream::parse_ledger_value(std::string_view(
          static_cast<const char*>(kvEntry_Value(raw_entry)), static_cast<std::size_t>(kvEntry_ValueLen(raw_entry))));
      if (!seq || !handlers) {
        ++unreadable_;
        continue;
      }
      records.push_back(LedgerRecord{*seq, *handlers});
      if (records.size() > limit) {
        why = "more than " + std::to_string(limit) + " records (ledger.max_records)";
        return;
      }
    }
  };
  nats_.wait_off_thread(call, Duration(0));
  if (!why.empty()) {
    log_warn("ledger.unread", {{"bucket", ledger.bucket}, {"consumer", durable}, {"reason", why}},
             "ledger: cannot read the records of consumer \"{}\" from bucket \"{}\": {}. Messages handlers confirmed "
             "before may come to them again (a duplicate, never a loss)",
             durable, ledger.bucket, why);
    return std::nullopt;
  }
  if (unreadable_ > 0) {
    log_warn("ledger.unreadable_records", {{"bucket", ledger.bucket}, {"records", unreadable_}},
             "ledger: {} record(s) of bucket \"{}\" could not be read and were skipped", unreadable_, ledger.bucket);
  }
  return records;
}

}  // namespace jetfan
