#pragma once
// NodePool: a std::pmr::memory_resource for the small nodes every held message needs (its entry in
// the core's maps, a flight per delivery, the dispatcher's record, the shared MessageBytes). Each
// 16-byte size class up to 256 bytes is a free list (a boost::pool); larger or over-aligned requests
// go to `upstream`.
//
// Why not std::pmr::unsynchronized_pool_resource: in `bench/run.sh --instructions`, libstdc++ 12's
// took about 330 instructions per node allocated and freed, more than malloc; a free list takes a
// few dozen.
//
// Memory is kept for reuse until the pool is destroyed, so a pool's footprint is its peak; the
// peak is bounded by max_held. Every allocation from a pool must be returned to it, or be dropped
// with it.
//
// Thread: none of its own and no locking; every allocate and deallocate on one thread (the owner's).

#include <array>
#include <boost/pool/pool.hpp>
#include <cstddef>
#include <memory_resource>
#include <optional>

namespace jetfan {

class NodePool final : public std::pmr::memory_resource {
 public:
  explicit NodePool(std::pmr::memory_resource* upstream = std::pmr::new_delete_resource()) : upstream_(upstream) {}
  NodePool(const NodePool&) = delete;
  NodePool& operator=(const NodePool&) = delete;

  static constexpr std::size_t kClassBytes = 16;
  static constexpr std::size_t kLargestPooled = 256;

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override;
  void do_deallocate(void* pointer, std::size_t bytes, std::size_t alignment) override;
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override { return this == &other; }

  static bool pooled(std::size_t bytes, std::size_t alignment);

  std::pmr::memory_resource* upstream_;
  std::array<std::optional<boost::pool<>>, kLargestPooled / kClassBytes> classes_;  // made on first use
};

}  // namespace jetfan
