// HandlerClient::run(): the callback API. The calling thread reads and queues deliveries; worker
// threads call the callback and confirm.

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "handler_client.hpp"
#include "handler_client_state.hpp"
#include "unique_fd.hpp"

namespace jetfan {
namespace {

// Deliveries read and not yet started. jetfan's max-unconfirmed bounds it; see run().
class WorkQueue {
 public:
  void push(Delivery delivery) {
    {
      std::lock_guard lock(mutex_);
      items_.push_back(std::move(delivery));
    }
    ready_.notify_one();
  }
  // The next delivery; nullopt once closed.
  std::optional<Delivery> pop() {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [&] { return closed_ || !items_.empty(); });
    if (closed_) return std::nullopt;
    Delivery delivery = std::move(items_.front());
    items_.pop_front();
    return delivery;
  }
  // Drops what is queued (a lost connection's deliveries cannot be confirmed any more).
  void clear() {
    std::lock_guard lock(mutex_);
    items_.clear();
  }
  // Closes the queue; returns what was never started.
  std::deque<Delivery> close() {
    std::deque<Delivery> left;
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
      left.swap(items_);
    }
    ready_.notify_all();
    return left;
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Delivery> items_;
  bool closed_ = false;
};

}  // namespace

void HandlerClient::run(const Callback& callback, RunOptions options) {
  State& state = *state_;
  WorkQueue queue;
  auto confirm = [&](const Delivery& delivery, const Outcome& outcome) {
    switch (outcome.kind) {
      case Outcome::Kind::kAck:
        ack(delivery);
        break;
      case Outcome::Kind::kNak:
        nak(delivery, outcome.delay_ms, outcome.reason);
        break;
      case Outcome::Kind::kTerm:
        term(delivery, outcome.reason);
        break;
    }
  };
  auto call = [&](const Delivery& delivery) {
    const auto where = [&] {
      return delivery.key + " (stream seq " + std::to_string(delivery.stream_seq) + ", delivery " +
             std::to_string(delivery.deliveries) + ")";
    };
    try {
      return callback(delivery);
    } catch (const Term& poison) {
      return Outcome::term(poison.what());
    } catch (const Nak& failed) {
      return Outcome::nak(failed.delay_ms(), failed.what());
    } catch (const std::exception& e) {
      state.log("the callback threw for " + where() + ": " + e.what() + "; NAK'd");
      return Outcome::nak(std::nullopt, e.what());  // what was thrown is the NAK's reason
    } catch (...) {
      state.log("the callback threw something that is not a std::exception for " + where() + "; NAK'd");
    }
    return Outcome::nak();
  };
  std::vector<std::thread> workers;
  const unsigned count = std::max(1u, options.workers);
  // Readable once every worker has returned.
  const UniqueFd workers_done(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  std::atomic<unsigned> running{count};
  for (unsigned i = 0; i < count; ++i) {
    workers.emplace_back([&] {
      while (auto delivery = queue.pop()) {
        // stop() may come before the reading thread closes the queue: once it has, nothing new starts.
        if (state.stopping) {
          nak(*delivery);
          continue;
        }
        confirm(*delivery, call(*delivery));
      }
      if (running.fetch_sub(1) == 1) {
        const std::uint64_t one = 1;
        [[maybe_unused]] const auto ignored = ::write(workers_done.get(), &one, sizeof one);
      }
    });
  }
  // Whatever ends the loop: the callbacks in progress finish and their confirmations go out. A
  // callback may be waiting for a publish's answer, which only reading brings: this thread reads
  // on until the last has returned, NAK'ing what arrives meanwhile (it will not be started).
  auto finish = [&] {
    for (const auto& never_started : queue.close()) nak(never_started);
    std::exception_ptr failed;
    {
      State::ReadTurn turn(state);
      bool reading = static_cast<bool>(workers_done);
      while (reading && state.connected) {
        std::optional<Delivery> delivery;
        try {
          switch (state.step(workers_done.get(), delivery)) {
            case State::Step::kDelivery:
              state.nak_unstarted(*delivery);
              break;
            case State::Step::kWoken:
            case State::Step::kLost:
              reading = false;
              break;
            case State::Step::kHandled:
              break;
          }
        } catch (const ClientError&) {
          failed = std::current_exception();  // the connection is dropped: the callbacks' publishes fail
        }
      }
      for (const auto& unstarted : state.early) state.nak_unstarted(unstarted);  // a callback's wait() read them
      state.early.clear();
    }
    for (auto& worker : workers) worker.join();
    flush();
    return failed;
  };
  try {
    std::uint64_t connection = connections();
    for (;;) {
      // Hold no more than jetfan allows unconfirmed; while we hold that many, nothing is read.
      state.wait_below_limit();
      auto delivery = state.next();
      if (!delivery) break;
      if (const auto now = connections(); now != connection) {
        queue.clear();
        connection = now;
      }
      queue.push(std::move(*delivery));
    }
  } catch (...) {
    finish();
    throw;
  }
  if (const auto failed = finish()) std::rethrow_exception(failed);
}

}  // namespace jetfan
