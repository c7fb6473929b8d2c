#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "socket_place.hpp"
#include "startup_error.hpp"
#include "unique_fd.hpp"

using namespace jetfan;
namespace fs = std::filesystem;

namespace {

constexpr std::uint32_t kSelf = 1000;

DirectoryFacts dir(std::uint32_t owner, std::uint32_t mode) { return {"/run/x", owner, S_IFDIR | mode}; }

struct TempDir {
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "jf-place-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()));
    path = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::permissions(path, fs::perms::owner_all, fs::perm_options::add, ignored);
    fs::remove_all(path, ignored);
  }
  std::string path;
};

// A listening Unix socket at `path`, for as long as it lives.
struct Listener {
  explicit Listener(const std::string& path) : fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    REQUIRE(::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(::listen(fd.get(), 4) == 0);
  }
  UniqueFd fd;
};

std::string startup_error(const std::function<void()>& run) {
  try {
    run();
  } catch (const StartupError& error) {
    return std::to_string(error.exit_code()) + " " + error.what();
  }
  return {};
}

}  // namespace

TEST_CASE("a directory on the way to a socket: root's or jetfan's own, writable by others only if sticky") {
  CHECK(why_unsafe_directory(dir(0, 0755), kSelf).empty());
  CHECK(why_unsafe_directory(dir(kSelf, 0750), kSelf).empty());
  CHECK(why_unsafe_directory(dir(0, 01777), kSelf).empty());     // /tmp
  CHECK(why_unsafe_directory(dir(kSelf, 0770), kSelf).empty());  // the group's trust is the operator's
  CHECK_THAT(why_unsafe_directory(dir(0, 0777), kSelf),
             Catch::Contains("/run/x (mode 0777) may be written by anyone, without the sticky bit") &&
                 Catch::Contains("chmod +t /run/x"));
  CHECK_THAT(why_unsafe_directory(dir(kSelf, 0757), kSelf), Catch::Contains("may be written by anyone"));
  CHECK_THAT(why_unsafe_directory(dir(1001, 0700), kSelf),
             Catch::Contains("/run/x belongs to uid 1001, neither root nor jetfan's own uid (1000)"));
  CHECK_THAT(why_unsafe_directory(dir(1001, 01777), kSelf), Catch::Contains("belongs to uid 1001"));
  CHECK_THAT(why_unsafe_directory({"/run/x", 0, S_IFREG | 0644}, kSelf), Catch::Contains("is not a directory"));
}

TEST_CASE("the chain of directories runs from / down to the socket's own") {
  CHECK(directory_chain("/") == std::vector<std::string>{"/"});
  CHECK(directory_chain("/run/jetfan/s") == std::vector<std::string>{"/", "/run", "/run/jetfan", "/run/jetfan/s"});
}

TEST_CASE("missing directories are made 0750 before the socket and an unsafe parent refuses, making nothing") {
  TempDir temp;
  const std::string socket = temp.path + "/a/b/jetfan.sock";
  prepare_socket_directory("socket.path", socket);
  struct stat info {};
  REQUIRE(::stat((temp.path + "/a/b").c_str(), &info) == 0);
  CHECK((info.st_mode & 07777) == 0750);
  REQUIRE(::stat((temp.path + "/a").c_str(), &info) == 0);
  CHECK((info.st_mode & 07777) == 0750);

  // A parent anyone may write, not the socket's own directory: refused all the same.
  const std::string open = temp.path + "/open";
  REQUIRE(::mkdir(open.c_str(), 0700) == 0);
  REQUIRE(::chmod(open.c_str(), 0777) == 0);
  const std::string why = startup_error([&] { prepare_socket_directory("control.path", open + "/deep/x.ctl"); });
  CHECK_THAT(why, Catch::StartsWith("78 control.path: " + open + " (mode 0777) may be written by anyone"));
  CHECK_FALSE(fs::exists(open + "/deep"));
  REQUIRE(::chmod(open.c_str(), 01777) == 0);  // sticky: fine
  CHECK(startup_error([&] { prepare_socket_directory("control.path", open + "/deep/x.ctl"); }).empty());
}

TEST_CASE("a symlink on the way is checked as written and where it leads") {
  TempDir temp;
  const std::string open = temp.path + "/open";
  REQUIRE(::mkdir(open.c_str(), 0700) == 0);
  REQUIRE(::mkdir((open + "/real").c_str(), 0700) == 0);
  REQUIRE(::chmod(open.c_str(), 0777) == 0);
  REQUIRE(::symlink((open + "/real").c_str(), (temp.path + "/link").c_str()) == 0);
  CHECK_THAT(startup_error([&] { prepare_socket_directory("socket.path", temp.path + "/link/jetfan.sock"); }),
             Catch::Contains(open + " (mode 0777) may be written by anyone"));
}

TEST_CASE("a socket nobody listens on is removed but a served one, or a file, is never touched") {
  TempDir temp;
  const std::string path = temp.path + "/jetfan.sock";
  { Listener gone(path); }  // closed: the file stays, nobody listens
  REQUIRE(fs::exists(path));
  clear_stale_socket("socket.path", path);
  CHECK_FALSE(fs::exists(path));
  clear_stale_socket("socket.path", path);  // nothing there: nothing to do

  Listener live(path);
  CHECK_THAT(startup_error([&] { clear_stale_socket("socket.path", path); }),
             Catch::StartsWith("69 socket.path: another process is serving " + path));
  CHECK(fs::exists(path));

  const std::string file = temp.path + "/file";
  { std::ofstream(file) << "x"; }
  CHECK_THAT(startup_error([&] { clear_stale_socket("control.path", file); }),
             Catch::StartsWith("78 control.path: " + file + " exists and is not a socket"));
  // One jetfan may not connect to (another user's): tests/edges_test.cpp, which can run jetfan as
  // another user where this test runs as root (root may connect to any socket).
}

TEST_CASE("the socket appears at its path only with its mode, and nothing is left when binding fails") {
  TempDir temp;
  const std::string path = temp.path + "/jetfan.sock";
  UniqueFd fd;
  make_socket_in_place("socket.path", path, {0640, std::nullopt, std::nullopt}, [&](const std::string& staged) {
    CHECK_FALSE(fs::exists(path));
    fd = UniqueFd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, staged.c_str(), staged.size() + 1);
    CHECK(::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
    return boost::system::error_code{};
  });
  struct stat info {};
  REQUIRE(::lstat(path.c_str(), &info) == 0);
  CHECK(S_ISSOCK(info.st_mode));
  CHECK((info.st_mode & 07777) == 0640);
  CHECK(std::distance(fs::directory_iterator(temp.path), fs::directory_iterator()) == 1);  // no staging left

  const std::string other = temp.path + "/other.sock";
  CHECK_THAT(startup_error([&] {
               make_socket_in_place("control.path", other, {}, [](const std::string&) {
                 return boost::system::errc::make_error_code(boost::system::errc::address_in_use);
               });
             }),
             Catch::StartsWith("69 control.path: cannot create " + other));
  CHECK(std::distance(fs::directory_iterator(temp.path), fs::directory_iterator()) == 1);
}
