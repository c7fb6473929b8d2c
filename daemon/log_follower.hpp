#pragma once
// LogFollower: hands each line appended to a file, as it is written, to a callback: `jetfan dev`
// shows what jetfan says of the handler (its warnings, a NAK's or a TERM's reason, connections)
// while the handler author types events, as `tail -f | grep` would.
//
// Thread: a thread of its own polls the file every `every` and calls `on_line` there, one line at
// a time, without its '\n'; a line still being written is handed over once it is whole. The
// destructor stops the thread, after handing over what is whole by then. `on_line` must be safe to
// call from that thread, and outlive the follower. The file may not exist yet: it is looked for
// again at each poll.

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

namespace jetfan {

class LogFollower {
 public:
  using OnLine = std::function<void(std::string_view line)>;

  LogFollower(std::string path, OnLine on_line, std::chrono::milliseconds every = std::chrono::milliseconds(100));
  ~LogFollower();
  LogFollower(const LogFollower&) = delete;
  LogFollower& operator=(const LogFollower&) = delete;

 private:
  // Reads what was added since the last call and hands over its whole lines.
  void poll();

  std::string path_;
  OnLine on_line_;
  std::uintmax_t offset_ = 0;  // bytes of the file read so far
  std::string partial_;        // the start of a line whose '\n' has not come yet
  std::jthread thread_;        // last: it starts once the rest is in place
};

}  // namespace jetfan
