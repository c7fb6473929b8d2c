#include "duration.hpp"

#include <array>
#include <cstdint>
#include <utility>

namespace jetfan {

namespace {

// Ten years (see the header), also in the nanoseconds the components are summed in: 3.2e17, so
// that adding a component that passed the check to a total that did cannot overflow 64 bits.
constexpr std::uint64_t kMaxMs = 10ULL * 365 * 24 * 3'600'000;
constexpr std::uint64_t kNsPerMs = 1'000'000;
constexpr std::uint64_t kMaxNs = kMaxMs * kNsPerMs;

// Both spellings of micro: U+00B5 MICRO SIGN (what Go prints) and U+03BC GREEK SMALL LETTER MU.
constexpr std::array<std::pair<std::string_view, std::uint64_t>, 8> kUnits = {{
    {"ns", 1},
    {"us", 1'000},
    {"\xC2\xB5s", 1'000},
    {"\xCE\xBCs", 1'000},
    {"ms", 1'000'000},
    {"s", 1'000'000'000},
    {"m", 60'000'000'000},
    {"h", 3'600'000'000'000},
}};

enum class Fault { kNone, kEmpty, kSign, kSpace, kNoNumber, kNoUnit, kUpperCase, kUnknownUnit, kFiner, kTooLong };

struct Scan {
  Fault fault = Fault::kNone;
  std::string_view unit;  // the offending unit, for kUpperCase and kUnknownUnit
  Duration value{0};
};

bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::optional<std::uint64_t> unit_ns(std::string_view unit) {
  for (const auto& [name, ns] : kUnits) {
    if (name == unit) return ns;
  }
  return std::nullopt;
}

std::string lower_case(std::string_view text) {
  std::string lowered(text);
  for (char& c : lowered) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return lowered;
}

// A unit that is known once its ASCII letters are lowered: "S", "MS", "Ns", "H".
bool is_upper_case_unit(std::string_view unit) {
  const std::string lowered = lower_case(unit);
  return lowered != unit && unit_ns(lowered).has_value();
}

// fraction * unit / 10^digits for the fraction's digits, exactly, or nullopt when that is not a
// whole number of nanoseconds. Long division from the last digit: each step adds digit * unit to
// the carry and divides by ten, and the total is whole exactly when every division is (a step that
// leaves a remainder leaves the total with a fractional part). The carry never exceeds the unit, so
// a step stays below 10 hours in nanoseconds (3.6e13) however many digits there are.
std::optional<std::uint64_t> fraction_ns(std::string_view digits, std::uint64_t unit) {
  std::uint64_t carry = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    const std::uint64_t step = static_cast<std::uint64_t>(*it - '0') * unit + carry;
    if (step % 10 != 0) return std::nullopt;
    carry = step / 10;
  }
  return carry;
}

Scan scan(std::string_view text) {
  if (text.empty()) return {Fault::kEmpty};
  if (text.front() == '-' || text.front() == '+') return {Fault::kSign};
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') return {Fault::kSpace};
  }
  // A fault of the value (too long, finer than a nanosecond) is kept while the rest of the text is
  // read, so that a fault of the grammar further on is the one reported: it is the one to fix first.
  Fault value_fault = Fault::kNone;
  std::uint64_t total_ns = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    // The whole part, capped as it is read: past kMaxNs it is too long whatever the unit.
    const std::size_t whole_begin = i;
    std::uint64_t whole = 0;
    for (; i < text.size() && is_digit(text[i]); ++i) {
      if (whole <= kMaxNs) whole = whole * 10 + static_cast<std::uint64_t>(text[i] - '0');
    }
    const bool has_whole = i > whole_begin;
    std::string_view fraction;
    if (i < text.size() && text[i] == '.') {
      const std::size_t fraction_begin = ++i;
      while (i < text.size() && is_digit(text[i])) ++i;
      fraction = text.substr(fraction_begin, i - fraction_begin);
    }
    if (!has_whole && fraction.empty()) return {Fault::kNoNumber};
    // The unit runs to the next digit or point, as in Go, so that "30sec" is the unknown unit "sec"
    // rather than "s" followed by garbage.
    const std::size_t unit_begin = i;
    while (i < text.size() && !is_digit(text[i]) && text[i] != '.') ++i;
    const std::string_view unit = text.substr(unit_begin, i - unit_begin);
    if (unit.empty()) return {Fault::kNoUnit};
    const auto ns = unit_ns(unit);
    if (!ns) return {is_upper_case_unit(unit) ? Fault::kUpperCase : Fault::kUnknownUnit, unit};
    if (value_fault != Fault::kNone) continue;
    const auto part = fraction_ns(fraction, *ns);
    if (whole > kMaxNs / *ns) {
      value_fault = Fault::kTooLong;
    } else if (!part) {
      value_fault = Fault::kFiner;
    } else {
      total_ns += whole * *ns + *part;  // each term is at most kMaxNs, so no overflow
      if (total_ns > kMaxNs) value_fault = Fault::kTooLong;
    }
  }
  if (value_fault != Fault::kNone) return {value_fault};
  // Rounded up to a whole millisecond (see the header for why up).
  return {Fault::kNone, {}, Duration(static_cast<Duration::rep>((total_ns + kNsPerMs - 1) / kNsPerMs))};
}

}  // namespace

std::optional<Duration> parse_duration(std::string_view text) {
  const Scan result = scan(text);
  if (result.fault != Fault::kNone) return std::nullopt;
  return result.value;
}

std::optional<std::string> duration_refusal(std::string_view text) {
  const Scan result = scan(text);
  switch (result.fault) {
    case Fault::kNone:
      return std::nullopt;
    case Fault::kEmpty:
      return "it is empty";
    case Fault::kSign:
      return "a duration takes no sign, and cannot be negative";
    case Fault::kSpace:
      return "write it without spaces, e.g. 1m30s";
    case Fault::kNoNumber:
      return "each part is a number and a unit, e.g. 1m30s or 1.5s";
    case Fault::kNoUnit:
      return "a number needs a unit (ns, us, ms, s, m or h), even 0: write 0s";
    case Fault::kUpperCase:
      return "write the unit in lower case: " + lower_case(result.unit) + ", not " + std::string(result.unit);
    case Fault::kUnknownUnit:
      return "\"" + std::string(result.unit) + "\" is not a unit; the units are ns, us (or µs), ms, s, m and h";
    case Fault::kFiner:
      return "it is not a whole number of nanoseconds";
    case Fault::kTooLong:
      return "it is longer than 10 years (87600h)";
  }
  return "it is not a duration";
}

}  // namespace jetfan
