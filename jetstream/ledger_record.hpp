#pragma once
// A record of the confirmation ledger (issue 39; core/confirmation_ledger.hpp) as it lies in its
// JetStream key-value bucket. Bucket B is stream KV_B. The record of stream sequence S, held by
// durable D, is key "D.S", that is subject "$KV.B.D.S"; its value is JSON naming the handlers that
// confirmed the message, {"confirmed":["audit","mailer"]}. A record is deleted as the key-value
// API deletes: a message on its subject with header "KV-Operation: DEL" (a purge says PURGE).
// Pure: text in, values out.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jetfan::jetstream {

// The header block of a delete of a record.
inline constexpr std::string_view kLedgerDeleteHeaders = "NATS/1.0\r\nKV-Operation: DEL\r\n\r\n";

// Whether `bucket` can name a key-value bucket: letters, digits, '-' and '_'.
bool valid_bucket_name(std::string_view bucket);
std::string ledger_stream(std::string_view bucket);
std::string ledger_subject(std::string_view bucket, std::string_view durable, std::uint64_t seq);
// The subjects of every record of `durable`: "$KV.B.D.>".
std::string ledger_filter(std::string_view bucket, std::string_view durable);
// The stream sequence a record's subject is for; nullopt when it is not one of `durable`'s.
std::optional<std::uint64_t> ledger_seq_of(std::string_view subject, std::string_view bucket, std::string_view durable);

std::string ledger_value(const std::vector<std::string>& handlers);
// The handlers a record's value names; nullopt when it is not a record's value.
std::optional<std::vector<std::string>> parse_ledger_value(std::string_view value);
// Whether a message of the bucket with this header block deletes its record (DEL or PURGE).
bool is_ledger_delete(std::string_view header_block);

}  // namespace jetfan::jetstream
