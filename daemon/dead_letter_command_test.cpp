// The words of DLQ and REDRIVE, read into the job they ask for, or refused with what is wrong.

#include <catch2/catch.hpp>

#include "dead_letter_command.hpp"

using namespace jetfan;

TEST_CASE("DLQ reads a handler, an optional range and JSON, in any case", "[unit]") {
  DeadLetterJob job;
  CHECK_FALSE(parse_dead_letter_command("builder", false, job));
  CHECK(job.kind == DeadLetterJob::Kind::kList);
  CHECK(job.handler == "builder");
  CHECK(job.from == 1);
  CHECK_FALSE(job.json);

  DeadLetterJob ranged;
  CHECK_FALSE(parse_dead_letter_command("  builder\t7-9 json ", false, ranged));
  CHECK(ranged.from == 7);
  CHECK(ranged.to == 9);
  CHECK(ranged.json);

  DeadLetterJob one;
  CHECK_FALSE(parse_dead_letter_command("builder 5", false, one));
  CHECK(one.from == 5);
  CHECK(one.to == 5);
}

TEST_CASE("REDRIVE needs ALL or a range, and takes DRY-RUN", "[unit]") {
  DeadLetterJob job;
  CHECK_FALSE(parse_dead_letter_command("builder all dry-run", true, job));
  CHECK(job.kind == DeadLetterJob::Kind::kRedrive);
  CHECK(job.all);
  CHECK(job.dry_run);
  DeadLetterJob missing;
  CHECK(parse_dead_letter_command("builder", true, missing) == "needs ALL or a sequence range A[-B]");
  DeadLetterJob dry;
  CHECK(parse_dead_letter_command("builder DRY-RUN", true, dry) == "needs ALL or a sequence range A[-B]");
}

TEST_CASE("DLQ and REDRIVE refuse what fits no place, naming it", "[unit]") {
  const char* bad[][2] = {
      {"", "needs a handler name"},
      {"builder 9-3", "unexpected \"9-3\""},
      {"builder 0", "unexpected \"0\""},
      {"builder 1-2 3", "unexpected \"3\""},
      {"builder x1", "unexpected \"x1\""},
      {"builder 18446744073709551616", "unexpected \"18446744073709551616\""},
      {"builder DRY-RUN", "unexpected \"DRY-RUN\""},  // a list has no dry run
  };
  for (const auto& [rest, why] : bad) {
    INFO(rest);
    DeadLetterJob job;
    CHECK(parse_dead_letter_command(rest, false, job) == std::string(why));
  }
  DeadLetterJob twice;
  CHECK(parse_dead_letter_command("builder ALL 1-2", true, twice) == std::string("unexpected \"1-2\""));
  DeadLetterJob json;
  CHECK(parse_dead_letter_command("builder ALL JSON", true, json) == std::string("unexpected \"JSON\""));
}
