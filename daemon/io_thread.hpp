#pragma once
// IoThread: which thread owns an object. Classes whose methods must run on the daemon's one
// io_context thread hold one and call check() at the top of each such method. The check is
// compiled in debug builds and in builds with JETFAN_CHECKS (the sanitizer build); elsewhere it
// costs nothing. A failed check names the file and line and aborts: calling across threads is a
// bug, never an input to handle.

#include <cstdio>
#include <cstdlib>
#include <thread>

namespace jetfan {

#if !defined(NDEBUG) || defined(JETFAN_CHECKS)
inline constexpr bool kThreadChecks = true;
#else
inline constexpr bool kThreadChecks = false;
#endif

class IoThread {
 public:
  // The first check() binds the owner, unless bind() did before.
  void bind() { owner_ = std::this_thread::get_id(); }
  void check(const char* file, int line) {
    if constexpr (kThreadChecks) {
      const auto me = std::this_thread::get_id();
      if (owner_ == std::thread::id()) owner_ = me;
      if (owner_ != me) {
        std::fprintf(stderr, "jetfan: %s:%d: called off its owning io_context thread\n", file, line);
        std::abort();
      }
    }
  }

 private:
  std::thread::id owner_;
};

#define JETFAN_ON_IO_THREAD(owner) (owner).check(__FILE__, __LINE__)

}  // namespace jetfan
