#pragma once
// Time as the pure core sees it: values the caller passes in. Nothing in core/ reads a clock; the
// daemon reads std::chrono::steady_clock and hands the result to every call that needs "now".

#include <chrono>

namespace jetfan {

using Duration = std::chrono::milliseconds;
using TimePoint = std::chrono::steady_clock::time_point;

}  // namespace jetfan
