#include "log_follower.hpp"

#include <catch2/catch.hpp>

#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <vector>

using jetfan::LogFollower;
using namespace std::chrono_literals;

namespace {

// The lines a follower handed over, and a wait for the next ones.
struct Seen {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::string> lines;

  void add(std::string_view line) {
    const std::lock_guard lock(mutex);
    lines.emplace_back(line);
    changed.notify_all();
  }
  bool wait_for(std::size_t count) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, 10s, [&] { return lines.size() >= count; });
  }
  std::vector<std::string> copy() {
    const std::lock_guard lock(mutex);
    return lines;
  }
};

std::string temp_path() {
  std::string pattern = (std::filesystem::temp_directory_path() / "log-follower.XXXXXX").string();
  REQUIRE(::mkdtemp(pattern.data()) != nullptr);
  return pattern + "/jetfan.log";
}

void append(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::app | std::ios::binary) << text << std::flush;
}

}  // namespace

TEST_CASE("a log follower hands over whole lines as they are written, from a file made after it", "[unit]") {
  const std::string path = temp_path();
  Seen seen;
  {
    LogFollower follower(
        path, [&](std::string_view line) { seen.add(line); }, 5ms);
    append(path, "first\nsecond half");
    REQUIRE(seen.wait_for(1));
    append(path, "way\n\nthird");
    REQUIRE(seen.wait_for(3));
    CHECK(seen.copy() == std::vector<std::string>{"first", "second halfway", ""});
    append(path, " and last\n");
  }  // the destructor hands over what is whole by then
  CHECK(seen.copy() == std::vector<std::string>{"first", "second halfway", "", "third and last"});
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

TEST_CASE("a log follower of a file that never appears hands over nothing and stops", "[unit]") {
  Seen seen;
  {
    LogFollower follower(
        "/nonexistent/jetfan.log", [&](std::string_view line) { seen.add(line); }, 1ms);
  }
  CHECK(seen.copy().empty());
}
