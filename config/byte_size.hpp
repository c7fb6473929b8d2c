#pragma once
// Sizes as written in jetfan.yaml: a whole number of bytes, alone or with a unit. Pure.
//
// The grammar, exactly (docs/jetfan.schema.json's "$defs/size" pattern is the same language):
//
//   size   = digits [ unit ]                    "4096", "64MiB", "32MB", "500K"
//   digits = "0"..."9" { "0"..."9" }
//   unit   = "B" | prefix [ "i" ] [ "B" ]       B; K, KB, Ki, KiB; M, MB, Mi, MiB; G, GB, Gi, GiB
//   prefix = "K" | "M" | "G"
//
// What the units mean follows nats-server's config parser, the file the same operator writes next
// to this one (conf/parse.go; docs.nats.io: "1K for 1000, 1KB for 1024"):
//   K, M, G                          powers of 1000: 1K = 1000, 1M = 1000000, 1G = 10^9
//   KB, MB, GB; Ki, Mi, Gi; KiB, ...   powers of 1024: 1MB = 1Mi = 1MiB = 1048576
// So "max_held_bytes: 32MB" is 32MiB, as in nats-server's "max_payload: 8MB", and not the SI
// megabyte. Reading MB as 10^6 instead would make the same text mean two sizes in two files of one
// deployment; the difference (4.9% at M, 7.4% at G) is small enough to go unnoticed, which is why
// agreeing with NATS matters more than agreeing with SI here. Kubernetes quantities agree with the
// table wherever they overlap (M = 10^6, Mi = 2^20; Kubernetes has no MB), so a value copied from a
// pod's resources means the same too. Whoever wants an unambiguous size writes KiB, MiB or GiB.
//
// Units are case-sensitive, which nats-server's are not: lower case is refused, because in a
// Kubernetes quantity "m" is milli (64m is 0.064), and "kb"/"Mb" read as bits to many. Kubernetes'
// lower-case "k" is refused with them, so that the rule stays "units in upper case".
// Also refused: fractions ("1.5MiB": a size is a whole number of bytes), signs, spaces, units larger
// than G, and any value over 2^64 - 1 bytes.

#include <cstdint>
#include <optional>
#include <string_view>

namespace jetfan {

// The number of bytes `text` spells; nullopt for anything the grammar above refuses, and on overflow.
std::optional<std::uint64_t> parse_byte_size(std::string_view text);

}  // namespace jetfan
