#pragma once
// Durations as written in jetfan.yaml (and in jetfan exec's flags): Go's time.ParseDuration syntax,
// the way NATS and its tools write durations ("250ms", "1.5s", "1m30s", "2h45m", "500µs"), so that a
// value copied from `nats consumer info` or a nats-server config means the same here.
// Pure functions; no state.
//
// The grammar, exactly (docs/jetfan.schema.json's "$defs/duration" pattern is the same language):
//
//   duration  = component { component }           "1m30s", "1h0m0s"
//   component = number unit
//   number    = digits [ "." [ digits ] ]          "30", "1.5", "1."
//             | "." digits                         ".5"
//   digits    = "0"..."9" { "0"..."9" }
//   unit      = "ns" | "us" | "µs" | "μs" | "ms" | "s" | "m" | "h"
//
// "µs" is accepted with either the micro sign (U+00B5, which Go prints) or the Greek mu (U+03BC).
// Components may repeat a unit and come in any order ("1s1s" is 2s, "30s1m" 90s), as in Go.
//
// Refused, where Go would accept:
// - a sign: every duration here is a timeout, a wait or a delay, for which a negative value means
//   nothing, and "+" adds a second spelling of the same value;
// - a number without a unit, even "0": every value reads the same way, the schema stays one rule,
//   and NATS never writes a bare 0 (Go prints zero as "0s");
// - a component that is not a whole number of nanoseconds ("0.5ns", "1.0000000001s"): Go cannot hold
//   it either and silently drops the excess; refusing it keeps the arithmetic below exact.
// Refused as in Go: empty text, spaces anywhere, unknown units ("1d", "30sec"), and units in upper
// case ("30S", "5M": with "M" a reader cannot tell minutes from months; duration_refusal says
// "write s, not S"). Refused beyond Go: more than 10 years in all (87600h), far past any timeout
// that makes sense, which keeps later arithmetic on time points away from overflow.
//
// Rounding: Duration counts whole milliseconds, so a value that is not a whole number of them is
// rounded UP to the next millisecond ("500us" is 1ms, "1.0001s" 1001ms, "100ns" 1ms). Every duration
// in the config is a bound ("wait at least", "give up after", "no sooner than"): rounding up keeps
// each of them at least as long as written, never more than 1ms longer, and never turns a nonzero
// value into 0, which for some keys would mean "no wait at all". Refusing such values instead would
// refuse the microsecond values NATS itself prints. The rounding applies to the exact total, not to
// each component: "1ms500us" is 2ms.

#include <optional>
#include <string>
#include <string_view>

#include "time.hpp"

namespace jetfan {

// The duration `text` spells, rounded up to a whole millisecond; nullopt for anything the grammar
// above refuses, and for totals over 10 years.
std::optional<Duration> parse_duration(std::string_view text);

// Why parse_duration refuses `text`, as a short phrase for the end of an error message, e.g.
// "write the unit in lower case: s, not S" or "a number needs a unit (ns, us, ms, s, m or h)";
// nullopt when it accepts `text`. It names the first fault of the grammar from the left, and a fault
// of the value (over 10 years, finer than a nanosecond) only when the grammar has none.
std::optional<std::string> duration_refusal(std::string_view text);

}  // namespace jetfan
