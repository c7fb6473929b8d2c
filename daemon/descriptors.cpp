#include "descriptors.hpp"
#include "logging.hpp"

#include <sys/resource.h>

#include <spdlog/spdlog.h>

#include <filesystem>

namespace jetfan {

std::size_t raise_descriptor_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024;
  if (limit.rlim_cur < limit.rlim_max) {
    const rlim_t was = limit.rlim_cur;
    limit.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &limit) == 0) {
      log_info("fd_limit.raised", {{"from", was}, {"to", limit.rlim_cur}},
               "raised the file descriptor limit from {} to {}", was, limit.rlim_cur);
    } else {
      limit.rlim_cur = was;
    }
  }
  return limit.rlim_cur == RLIM_INFINITY ? static_cast<std::size_t>(1) << 20 : static_cast<std::size_t>(limit.rlim_cur);
}

std::size_t open_descriptors() {
  std::error_code error;
  std::size_t count = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", error);
       !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
    ++count;
  }
  return count > 0 ? count - 1 : 0;  // less the one the listing itself opened
}

std::size_t connection_budget(std::size_t limit, std::size_t open, std::size_t reserve) {
  return limit > open + reserve ? limit - open - reserve : 1;
}

DescriptorPlan plan_descriptors(std::size_t limit, std::size_t open, std::size_t metrics_cap, std::size_t control_cap,
                                std::size_t reserved) {
  DescriptorPlan plan{limit, open, metrics_cap, control_cap, reserved, 0};
  plan.handlers = connection_budget(limit, open, reserved + metrics_cap + control_cap);
  return plan;
}

}  // namespace jetfan
