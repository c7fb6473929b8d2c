#pragma once
// RecordLog: an append-only file of fixed-size binary records, written through a shared memory
// mapping of the file.
//
// Why a mapping: the harness kills these processes with SIGKILL at random moments, and a record
// must never be lost once the process has acted on it (a handler must not confirm a delivery whose
// receipt is not on record, or the checker would call it lost). A store into a MAP_SHARED page is
// in the kernel's page cache the moment it is made, so it survives the process being killed, and
// appending costs no system call. The file is grown in chunks; the unused tail is zero, and a
// record with t_ns == 0 marks the end for readers (tests/faults/records.py).
//
// Thread: append() may be called from several threads; it takes a lock.

#include <cstdint>
#include <mutex>
#include <string>

namespace jetfan::faults {

// 32 bytes, little-endian, no padding; records.py reads it as "<QQQIBBH".
struct Record {
  std::uint64_t t_ns = 0;  // CLOCK_MONOTONIC, shared by every process on the machine
  std::uint64_t stream_seq = 0;
  std::uint64_t id = 0;   // the workload's message number
  std::uint32_t aux = 0;  // deliveries (handler), status (publisher)
  std::uint8_t kind = 0;
  std::uint8_t flags = 0;
  std::uint16_t connection = 0;  // handler: which connection of this process, from 1
};
static_assert(sizeof(Record) == 32);

std::uint64_t monotonic_ns();

class RecordLog {
 public:
  // Creates or truncates `path`. Throws std::runtime_error saying what failed.
  explicit RecordLog(const std::string& path);
  ~RecordLog();
  RecordLog(const RecordLog&) = delete;
  RecordLog& operator=(const RecordLog&) = delete;

  // Stamps t_ns if it is 0, and appends.
  void append(Record record);

 private:
  void map(std::size_t bytes);

  std::mutex mutex_;
  std::string path_;
  int fd_ = -1;
  char* base_ = nullptr;
  std::size_t mapped_ = 0;
  std::size_t used_ = 0;
};

}  // namespace jetfan::faults
