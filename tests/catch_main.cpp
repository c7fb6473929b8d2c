// The tests' Catch2 runner: Catch's own, plus --every-case-asserts (the unit tests run with it): a
// case, or a section of one, that evaluates no assertion fails. Catch's --warn NoAssertions would,
// but Catch 2 takes one --warn only, and the tests take --warn NoTests.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

int main(int argc, char* argv[]) {
  Catch::Session session;
  bool every_case_asserts = false;
  session.cli(session.cli() | Catch::clara::Opt(every_case_asserts)["--every-case-asserts"](
                                  "fail a test case or section that evaluates no assertion"));
  if (const int status = session.applyCommandLine(argc, argv); status != 0) return status;
  if (every_case_asserts) {
    auto& config = session.configData();
    config.warnings = static_cast<Catch::WarnAbout::What>(config.warnings | Catch::WarnAbout::NoAssertions);
  }
  return session.run();
}
