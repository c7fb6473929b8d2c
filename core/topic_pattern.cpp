#include "topic_pattern.hpp"

#include <cassert>

namespace jetfan {
namespace {

std::vector<std::string_view> split_tokens(std::string_view text) {
  std::vector<std::string_view> tokens;
  std::size_t start = 0;
  for (;;) {
    const std::size_t dot = text.find('.', start);
    if (dot == std::string_view::npos) {
      tokens.push_back(text.substr(start));
      return tokens;
    }
    tokens.push_back(text.substr(start, dot - start));
    start = dot + 1;
  }
}

constexpr std::size_t kCacheLimit = 4096;

}  // namespace

std::optional<std::string> pattern_error(std::string_view pattern) {
  if (pattern.empty()) return "a pattern cannot be empty";
  for (char c : pattern) {
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\0') {
      return "a pattern cannot contain white space or NUL";
    }
  }
  const auto tokens = split_tokens(pattern);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const auto token = tokens[i];
    if (token.empty()) return "empty token (two dots in a row, or a leading or trailing dot)";
    const bool has_wild = token.find_first_of("*#>") != std::string_view::npos;
    if (has_wild && token.size() != 1) {
      return "'" + std::string(token) + "': '*', '#' and '>' must stand alone as a whole token";
    }
    if (token == ">" && i + 1 != tokens.size()) return "'>' may only be the last token";
  }
  return std::nullopt;
}

bool topic_matches(std::string_view pattern, std::string_view key) {
  const auto p = split_tokens(pattern);
  const auto k = split_tokens(key);
  // reachable[j]: the pattern prefix consumed so far can match the first j key tokens.
  std::vector<char> reachable(k.size() + 1, 0);
  reachable[0] = 1;
  for (const auto token : p) {
    std::vector<char> next(k.size() + 1, 0);
    for (std::size_t j = 0; j <= k.size(); ++j) {
      if (!reachable[j]) continue;
      if (token == "#") {
        for (std::size_t m = j; m <= k.size(); ++m) next[m] = 1;
      } else if (token == ">") {
        for (std::size_t m = j + 1; m <= k.size(); ++m) next[m] = 1;
      } else if (j < k.size() && (token == "*" || token == k[j])) {
        next[j + 1] = 1;
      }
    }
    reachable.swap(next);
  }
  return reachable[k.size()] != 0;
}

std::uint32_t TopicMatcher::child(std::int32_t Node::*edge, std::uint32_t from) {
  if (nodes_[from].*edge < 0) {
    nodes_.push_back(Node{});
    nodes_[from].*edge = static_cast<std::int32_t>(nodes_.size() - 1);
  }
  return static_cast<std::uint32_t>(nodes_[from].*edge);
}

void TopicMatcher::add(std::string_view pattern, std::size_t handler) {
  assert(!pattern_error(pattern) && handler < kMaxHandlers);
  std::uint32_t at = 0;
  for (const auto token : split_tokens(pattern)) {
    if (token == "*") {
      at = child(&Node::star, at);
    } else if (token == "#") {
      at = child(&Node::hash, at);
      nodes_[at].loops = true;
    } else if (token == ">") {
      at = child(&Node::tail, at);
    } else {
      auto found = nodes_[at].literal.find(token);
      if (found == nodes_[at].literal.end()) {
        nodes_.push_back(Node{});
        found = nodes_[at].literal.emplace(std::string(token), nodes_.size() - 1).first;
      }
      at = found->second;
    }
  }
  nodes_[at].accept |= HandlerMask{1} << handler;
  cache_.clear();
}

void TopicMatcher::activate(std::uint32_t node, std::vector<std::uint32_t>& set) {
  if (seen_in_step_[node] == step_) return;
  seen_in_step_[node] = step_;
  set.push_back(node);
  // A '#' may match zero tokens, so whatever follows it is active at the same position.
  if (nodes_[node].hash >= 0) activate(static_cast<std::uint32_t>(nodes_[node].hash), set);
}

HandlerMask TopicMatcher::match_uncached(std::string_view key) {
  seen_in_step_.resize(nodes_.size(), 0);
  HandlerMask matched = 0;
  current_.clear();
  ++step_;
  activate(0, current_);
  std::size_t start = 0;
  for (;;) {
    const std::size_t dot = key.find('.', start);
    const auto token = key.substr(start, dot == std::string_view::npos ? key.npos : dot - start);
    next_.clear();
    ++step_;
    for (const std::uint32_t at : current_) {
      const Node& node = nodes_[at];
      if (node.loops) activate(at, next_);
      if (node.tail >= 0) matched |= nodes_[static_cast<std::size_t>(node.tail)].accept;
      if (node.star >= 0) activate(static_cast<std::uint32_t>(node.star), next_);
      if (!node.literal.empty()) {
        const auto found = node.literal.find(token);
        if (found != node.literal.end()) activate(found->second, next_);
      }
    }
    current_.swap(next_);
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  for (const std::uint32_t at : current_) matched |= nodes_[at].accept;
  return matched;
}

HandlerMask TopicMatcher::match(std::string_view key) {
  if (auto found = cache_.find(key); found != cache_.end()) return found->second;
  const HandlerMask matched = match_uncached(key);
  if (cache_.size() >= kCacheLimit) cache_.clear();
  cache_.emplace(std::string(key), matched);
  return matched;
}

}  // namespace jetfan
