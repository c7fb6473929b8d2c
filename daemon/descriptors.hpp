#pragma once
// File descriptors: how many jetfan may have, and how many handler connections that leaves room for.
// A handler connection costs one; the NATS connection and jetfan's own files need a few more, and
// must never be the ones that run out.

#include <cstddef>

namespace jetfan {

// Raises the soft RLIMIT_NOFILE to the hard limit (logged) and returns the soft limit now in force.
std::size_t raise_descriptor_limit();
// Descriptors open in this process now.
std::size_t open_descriptors();
// How many handler connections fit: the limit less what is open and `reserve` kept free.
std::size_t connection_budget(std::size_t limit, std::size_t open, std::size_t reserve);

// How the descriptor limit is shared at start: the metrics port and the control socket have caps
// of their own, and those caps are kept out of the handlers' share, so that neither a flood of
// scrapers nor one of control connections can take a descriptor a handler needs.
struct DescriptorPlan {
  std::size_t limit = 0, open = 0;
  std::size_t metrics = 0, control = 0, reserved = 0;  // caps and what NATS and files keep
  std::size_t handlers = 0;                            // room for handler connections
};
DescriptorPlan plan_descriptors(std::size_t limit, std::size_t open, std::size_t metrics_cap, std::size_t control_cap,
                                std::size_t reserved);

}  // namespace jetfan
