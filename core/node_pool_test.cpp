#include "node_pool.hpp"

#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <memory_resource>
#include <unordered_map>
#include <vector>

namespace jetfan {
namespace {

// Counts what reaches it, so a test can tell pooled requests from passed-on ones.
class CountingResource final : public std::pmr::memory_resource {
 public:
  std::size_t allocations = 0;
  std::size_t deallocations = 0;

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    ++allocations;
    return std::pmr::new_delete_resource()->allocate(bytes, alignment);
  }
  void do_deallocate(void* pointer, std::size_t bytes, std::size_t alignment) override {
    ++deallocations;
    std::pmr::new_delete_resource()->deallocate(pointer, bytes, alignment);
  }
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override { return this == &other; }
};

TEST_CASE("node pool: a freed node is the next one handed out in its size class", "[unit][node_pool]") {
  NodePool pool;
  void* first = pool.allocate(40, 8);
  void* second = pool.allocate(48, 8);  // same 16-byte class as 40
  CHECK(first != second);
  pool.deallocate(first, 40, 8);
  CHECK(pool.allocate(33, 8) == first);
  pool.deallocate(second, 48, 8);
}

TEST_CASE("node pool: every pooled node is aligned for any type and distinct from the others", "[unit][node_pool]") {
  NodePool pool;
  std::vector<std::pair<void*, std::size_t>> nodes;
  for (std::size_t bytes = 1; bytes <= NodePool::kLargestPooled; bytes += 7) {
    for (int i = 0; i < 300; ++i) {  // past the first block of each class
      void* node = pool.allocate(bytes, alignof(std::max_align_t));
      CHECK(reinterpret_cast<std::uintptr_t>(node) % alignof(std::max_align_t) == 0);
      nodes.emplace_back(node, bytes);
    }
  }
  std::map<std::uintptr_t, std::size_t> by_address;
  for (const auto& [node, bytes] : nodes) by_address.emplace(reinterpret_cast<std::uintptr_t>(node), bytes);
  REQUIRE(by_address.size() == nodes.size());
  for (auto it = by_address.begin(); std::next(it) != by_address.end(); ++it) {
    CHECK(it->first + it->second <= std::next(it)->first);  // no two overlap
  }
  for (const auto& [node, bytes] : nodes) pool.deallocate(node, bytes, alignof(std::max_align_t));
}

TEST_CASE("node pool: large and over-aligned requests go to the upstream resource", "[unit][node_pool]") {
  CountingResource upstream;
  NodePool pool(&upstream);
  void* large = pool.allocate(NodePool::kLargestPooled + 1, 8);
  void* aligned = pool.allocate(64, 64);
  CHECK(reinterpret_cast<std::uintptr_t>(aligned) % 64 == 0);
  CHECK(upstream.allocations == 2);
  pool.deallocate(large, NodePool::kLargestPooled + 1, 8);
  pool.deallocate(aligned, 64, 64);
  CHECK(upstream.deallocations == 2);
  void* small = pool.allocate(24, 8);
  CHECK(upstream.allocations == 2);
  pool.deallocate(small, 24, 8);
}

TEST_CASE("node pool: a pmr map keeps its contents through churn", "[unit][node_pool]") {
  NodePool pool;
  std::pmr::unordered_map<std::uint64_t, std::uint64_t> map(&pool);
  std::uint64_t next = 0;
  for (int round = 0; round < 50; ++round) {
    for (int i = 0; i < 200; ++i, ++next) map.emplace(next, next * 3);
    for (std::uint64_t seq = next - 200; seq < next - 50; ++seq) map.erase(seq);
  }
  for (const auto& [key, value] : map) CHECK(value == key * 3);
  CHECK(map.size() == 50 * 50);
}

}  // namespace
}  // namespace jetfan
