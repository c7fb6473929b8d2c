#pragma once
// DeadLetterJob: what `jetfan dlq list` and `jetfan redrive` ask the running jetfan, and the state
// of one such job while the dispatcher runs it (dispatcher_redrive.cpp; daemon/CONTROL.md). Plain
// data; the dispatcher owns every DeadLetterRun.
//
// Thread: the io_context thread.

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "dead_letter_stream.hpp"
#include "time.hpp"

namespace jetfan {

struct DeadLetterJob {
  enum class Kind { kList, kRedrive };
  Kind kind = Kind::kList;
  std::string handler;
  std::uint64_t from = 1;  // the dead letters' sequences in their stream, both ends included
  std::uint64_t to = std::numeric_limits<std::uint64_t>::max();
  bool all = false;  // redrive: every one there is when it starts (up to the stream's last of the subject)
  bool dry_run = false;
  bool json = false;  // list: one JSON object at the end instead of a line per dead letter
};

// Where a job's output goes. `line` returns false when nobody reads any more (the job stops after
// the dead letter it is at); `done` is called once, last.
struct DeadLetterJobOutput {
  std::function<bool(const std::string& line)> line;
  std::function<void(bool ok, const std::string& line)> done;
};

// A handler's redrives since jetfan started, for status and metrics.
struct RedriveCounts {
  std::uint64_t running = 0;    // redrives under way now (0 or 1)
  std::uint64_t confirmed = 0;  // dead letters the handler ACKed, deleted
  std::uint64_t again = 0;      // failed again: dead-lettered anew, the old one deleted
  std::uint64_t kept = 0;       // not settled, or not deleted: the dead letter stays
};

struct DeadLetterRun {
  enum class Step { kNames, kLast, kGet, kRedriving, kDelete, kDone };
  DeadLetterJob job;
  DeadLetterJobOutput out;
  std::string subject;  // the handler's dead_letter subject
  std::string stream;   // the stream that captures it
  Step step = Step::kNames;
  std::uint64_t next = 1;      // the next sequence to read from
  std::uint64_t awaiting = 0;  // the api request outstanding; 0: none
  TimePoint asked{};
  StoredLetter current;  // being redriven, or deleted
  bool again = false;    // current was dead-lettered anew
  bool stop = false;     // nobody listens: stop after current
  std::uint64_t seen = 0, confirmed = 0, redead = 0, kept = 0;
  std::vector<std::string> json_items;
};

}  // namespace jetfan
