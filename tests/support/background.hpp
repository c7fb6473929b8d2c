#pragma once
// Test support: a function run on its own thread for the length of a scope. join() waits for it
// and rethrows what it threw; if the scope ends first (a failed REQUIRE), `on_exit` runs (to make
// the function return, e.g. client.stop()) and the thread is joined, so a failing test fails
// instead of aborting the test program.

#include <exception>
#include <functional>
#include <thread>
#include <utility>

namespace jetfan::testing {

class Background {
 public:
  explicit Background(std::function<void()> body, std::function<void()> on_exit = {})
      : on_exit_(std::move(on_exit)), thread_([this, body = std::move(body)] {
          try {
            body();
          } catch (...) {
            error_ = std::current_exception();
          }
        }) {}
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;
  ~Background() {
    if (!thread_.joinable()) return;
    if (on_exit_) on_exit_();
    thread_.join();
  }
  void join() {
    thread_.join();
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  std::function<void()> on_exit_;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace jetfan::testing
