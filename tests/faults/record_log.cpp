#include "record_log.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace jetfan::faults {
namespace {

constexpr std::size_t kChunk = 32u << 20;  // 1M records

std::runtime_error failure(const std::string& what, const std::string& path) {
  return std::runtime_error(what + " " + path + ": " + std::strerror(errno));
}

}  // namespace

std::uint64_t monotonic_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000ULL + static_cast<std::uint64_t>(t.tv_nsec);
}

RecordLog::RecordLog(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw failure("cannot create", path);
  map(kChunk);
}

RecordLog::~RecordLog() {
  if (base_) ::munmap(base_, mapped_);
  // A clean exit leaves no zero tail; a killed process leaves one, which readers skip.
  if (fd_ >= 0) {
    if (::ftruncate(fd_, static_cast<off_t>(used_)) != 0) {
      // Nothing to do about it: readers stop at the first zero record anyway.
    }
    ::close(fd_);
  }
}

void RecordLog::map(std::size_t bytes) {
  if (base_) ::munmap(base_, mapped_);
  base_ = nullptr;
  if (::ftruncate(fd_, static_cast<off_t>(bytes)) != 0) throw failure("cannot grow", path_);
  void* address = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (address == MAP_FAILED) throw failure("cannot map", path_);
  base_ = static_cast<char*>(address);
  mapped_ = bytes;
}

void RecordLog::append(Record record) {
  if (record.t_ns == 0) record.t_ns = monotonic_ns();
  std::lock_guard lock(mutex_);
  if (used_ + sizeof record > mapped_) map(mapped_ + kChunk);
  // The time goes in last: a reader watching the file live takes t_ns != 0 to mean "complete".
  const std::uint64_t stamp = std::exchange(record.t_ns, 0);
  auto* slot = reinterpret_cast<Record*>(base_ + used_);
  std::memcpy(slot, &record, sizeof record);
  std::atomic_ref<std::uint64_t>(slot->t_ns).store(stamp, std::memory_order_release);
  used_ += sizeof record;
}

}  // namespace jetfan::faults
