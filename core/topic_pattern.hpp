#pragma once
// Topic patterns and keys.
//
// A key is a sequence of tokens separated by '.'. A pattern is the same, where a token may also be
//   '*'  exactly one token,
//   '#'  zero or more tokens, anywhere in the pattern (AMQP topic exchange semantics),
//   '>'  one or more tokens, only as the last token (NATS semantics).
//
// TopicMatcher compiles many patterns, each tagged with a handler index, into one trie and answers
// "which handlers match this key" in time that does not grow with the number of literal patterns.
// It is pure and single-threaded: one owner, no locking.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace jetfan {

// One bit per handler index; jetfan allows at most 64 declared handlers.
using HandlerMask = std::uint64_t;
inline constexpr std::size_t kMaxHandlers = 64;

// Returns nullopt when the pattern is valid, otherwise why it is not.
std::optional<std::string> pattern_error(std::string_view pattern);

// Reference matcher for one pattern against one key. Precondition: pattern is valid.
bool topic_matches(std::string_view pattern, std::string_view key);

// Hash for unordered maps keyed by std::string that can be probed with a std::string_view
// without building a string.
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view text) const noexcept { return std::hash<std::string_view>{}(text); }
};
template <typename Value>
using StringMap = std::unordered_map<std::string, Value, StringHash, std::equal_to<>>;

class TopicMatcher {
 public:
  // Precondition: pattern is valid and handler < kMaxHandlers.
  void add(std::string_view pattern, std::size_t handler);

  // The handlers whose patterns match key. Results are cached per key, up to a bound.
  HandlerMask match(std::string_view key);

 private:
  struct Node {
    StringMap<std::uint32_t> literal;
    std::int32_t star = -1;  // child reached by '*'
    std::int32_t hash = -1;  // child reached by '#'
    std::int32_t tail = -1;  // child reached by a final '>'
    bool loops = false;      // reached by '#': stays active on any token
    HandlerMask accept = 0;  // handlers whose pattern ends here
  };

  HandlerMask match_uncached(std::string_view key);
  std::uint32_t child(std::int32_t Node::*edge, std::uint32_t from);
  void activate(std::uint32_t node, std::vector<std::uint32_t>& set);

  std::vector<Node> nodes_{Node{}};
  std::vector<std::uint32_t> current_, next_;
  std::vector<std::uint32_t> seen_in_step_;
  std::uint32_t step_ = 0;
  StringMap<HandlerMask> cache_;
};

}  // namespace jetfan
