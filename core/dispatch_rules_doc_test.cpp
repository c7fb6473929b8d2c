// docs/dispatch-rules.md numbers the dispatch core's rules, and DispatchChecker's messages begin
// with the number of the rule they found broken. This holds the two together: the rules are
// numbered R1, R2, ... without a hole, every number the checker names is a rule of the document
// marked "checked" (or an invariant I<n>), and every rule marked "checked" is one the checker names.
#include <catch2/catch.hpp>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace {

std::string read_file(const char* path) {
  std::ifstream in(path);
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::set<std::string> matches(const std::string& text, const std::regex& pattern) {
  std::set<std::string> found;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), pattern); it != std::sregex_iterator(); ++it) {
    found.insert((*it)[1].str());
  }
  return found;
}

}  // namespace

TEST_CASE("dispatch rules: the document numbers the rules the checker names, and marks them checked", "[unit]") {
  const std::string doc = read_file(JETFAN_DISPATCH_RULES);
  const std::string checker = read_file(JETFAN_DISPATCH_CHECKER);

  const std::set<std::string> rules = matches(doc, std::regex(R"(\*\*(R\d+)\*\*)"));
  const std::set<std::string> invariants = matches(doc, std::regex(R"(\*\*(I\d+)\*\*)"));
  const std::set<std::string> checked = matches(doc, std::regex(R"(\*\*(R\d+)\*\* \(checked\))"));
  const std::set<std::string> named = matches(checker, std::regex(R"re("([RI]\d+): )re"));

  REQUIRE(rules.size() > 40);
  for (std::size_t n = 1; n <= rules.size(); ++n) {
    INFO("R" << n);
    CHECK(rules.count("R" + std::to_string(n)) == 1);
  }
  REQUIRE(!named.empty());
  for (const std::string& rule : named) {
    INFO("the checker names " << rule);
    CHECK((checked.count(rule) == 1 || invariants.count(rule) == 1));
  }
  for (const std::string& rule : checked) {
    INFO(rule << " is marked checked");
    CHECK(named.count(rule) == 1);
  }
}
