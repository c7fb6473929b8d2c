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

}  // namespace jetfan
