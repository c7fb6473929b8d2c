#pragma once
// DeadLetterJobs: `jetfan dlq list` and `jetfan redrive` while they run (daemon/CONTROL.md). Each job
// is a small state machine that reads its handler's dead letters from their stream one at a time
// by sequence, with one JetStream API request out at a time:
//
//   names (which stream captures the dead_letter subject)
//     -> last (redrive --all: where the stream ends now)
//     -> get (the next dead letter at or after a sequence)      <-+
//          list or dry run: one line per dead letter -------------+
//          redrive: -> redriving (the core has it as a Redrive) -> delete (once it is settled) -+
//          not redrivable (redriven_message.hpp): one line, left in the stream -----------------+
//     -> done (no dead letter left in range, an error, jetfan stopping, or nobody reading)
//
// A redriven dead letter is deleted from its stream only after the core said kRedriveSettled, so a
// redrive cut short (a restart, a crash) has deleted nothing unconfirmed: the worst it leaves is a
// dead letter confirmed but not yet deleted, redriven again next time. The requests and answers are
// jetstream/'s (stream_names.hpp, stream_message.hpp); what a job needs of the running jetfan is DeadLetterJobHost.
//
// Thread: the io_context thread only. `config` and `host` must outlive the jobs.

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config.hpp"
#include "dispatch_core.hpp"
#include "stream_message.hpp"
#include "time.hpp"
#include "upstream.hpp"

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
  std::uint64_t refused = 0;    // not redrivable (why_not_redrivable: forged?): left in the stream
};

// What a job needs of the running jetfan.
class DeadLetterJobHost {
 public:
  virtual TimePoint now() const = 0;
  virtual bool serving() const = 0;
  virtual std::size_t instances(std::size_t handler) const = 0;
  // Sends a JetStream API request, answered by DeadLetterJobs::on_api_reply(id, ...). False: it
  // could not be sent.
  virtual bool api_request(std::uint64_t id, const std::string& subject, const std::string& body) = 0;
  // Gives `letter` to `handler` (an index of the config's handlers) as a redrive (DispatchCore::
  // redrive). False: the core did not take it (jetfan is stopping); nothing was kept of it.
  virtual bool redrive(std::size_t handler, const jetstream::StoredMessage& letter) = 0;

 protected:
  ~DeadLetterJobHost() = default;
};

class DeadLetterJobs {
 public:
  DeadLetterJobs(const Config& config, DeadLetterJobHost& host) : config_(config), host_(host) {}

  // Starts a job for `job.handler`, which reports through `out` as it goes. A refusal (no such
  // handler, no dead_letter, not serving, no instance to redrive to, a redrive of it under way) is
  // returned in words, and `out` is never called.
  std::optional<std::string> start(const DeadLetterJob& job, DeadLetterJobOutput out);
  // The answer to an api_request of a job; an answer to none (timed out already) is dropped.
  void on_api_reply(std::uint64_t id, const ApiReply& reply);
  // The core's kRedriveSettled or kRedriveDropped for a redrive of a job.
  void redrive_ended(const Effect& effect);
  // Ends the jobs whose request has waited too long (JetStream answers in milliseconds).
  void time_out(TimePoint now);
  // Ends every job, saying why.
  void end_all(const std::string& why);

  std::size_t running() const { return runs_.size(); }
  // Per handler name: its redrives since start.
  const std::map<std::string, RedriveCounts>& counts() const { return counts_; }

 private:
  struct Run {
    enum class Step { kNames, kLast, kGet, kRedriving, kDelete, kDone };
    DeadLetterJob job;
    DeadLetterJobOutput out;
    std::string subject;  // the handler's dead_letter subject
    std::string stream;   // the stream that captures it
    Step step = Step::kNames;
    std::uint64_t next = 1;      // the next sequence to read from
    std::uint64_t awaiting = 0;  // the api request outstanding; 0: none
    TimePoint asked{};
    jetstream::StoredMessage current;  // being redriven, or deleted
    bool again = false;                // current was dead-lettered anew
    bool stop = false;                 // nobody listens: stop after current
    std::uint64_t seen = 0, confirmed = 0, redead = 0, kept = 0, refused = 0;
    std::vector<std::string> json_items;
  };

  const HandlerSettings* find_handler(const std::string& name) const;
  void ask(std::uint64_t id, Run& run, const std::string& subject, const std::string& body);
  void read_next(std::uint64_t id, Run& run);
  void on_letter(std::uint64_t id, Run& run, jetstream::StoredMessage letter);
  void on_deleted(std::uint64_t id, Run& run, std::string_view json);
  void begin_redrive(std::uint64_t id, Run& run);
  void end_run(std::uint64_t id, bool ok, const std::string& why);

  const Config& config_;
  DeadLetterJobHost& host_;
  std::map<std::uint64_t, Run> runs_;  // by id
  std::uint64_t next_run_ = 1;
  std::uint64_t next_api_ = 1;
  std::map<std::string, RedriveCounts> counts_;
};

}  // namespace jetfan
