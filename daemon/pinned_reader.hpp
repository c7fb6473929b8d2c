#pragma once
// PinnedReader: jetfan as a reader of a consumer's `pinned_client` priority group. The server gives
// the consumer's messages to the pinned client alone; every other jetfan on the durable is a hot
// standby whose pulls wait at the server. This type does the talking for core/PinTracker, which
// decides: it names the group and the pin id in every pull (decorate), reads the id the server gives
// with a delivery, sends keep-alive pulls while jetfan is full, acts on 423 (the pin moved) and on a
// consumer leader change, and sends UNPIN for `jetfan step-down`. Becoming pinned and losing the pin
// are the host's to carry out (PinHost): the restart hold for what the former owner left unacked,
// and handing back what jetfan held.
//
// Keep-alive pulls ({"batch":1,"max_bytes":1}, answered by 409 "Message Size Exceeds MaxBytes" or
// 408, never by a message) carry ids with kKeepAliveBit, so their answers are told from the
// ledger's; so do claim pulls. UNPIN requests and the pin checks (CONSUMER.INFO, after a 423: did the
// pin move, or does a new leader hold none?) carry kUnpinBit among the API requests.
//
// A claim pull ({"batch":1}, no id) goes out while jetfan re-pins after a leader change but has no
// request of its own waiting at the server (it is full): the server pins a client only by
// delivering a message to it (measured on 2.15.1: a pull it answers "Message Size Exceeds MaxBytes",
// as a keep-alive, pins nobody), so a full jetfan would otherwise lose its pin to the standby. The
// message it brings is one above max_held, as an ordered or slow handler may briefly see.
//
// Thread: the io_context thread (the Dispatcher's). `upstream`, `host` and `config` outlive it.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "config.hpp"
#include "pin_tracker.hpp"
#include "pull_ledger.hpp"
#include "status_snapshot.hpp"
#include "time.hpp"
#include "upstream.hpp"

namespace jetfan {

class PinHost {
 public:
  // jetfan became the pinned client: hold order for what the former owner left, and deliver again.
  virtual void take_over(TimePoint now) = 0;
  // The pin is another's: hand back what is held, deliver nothing new. `refused`: the server refused
  // the current pin id, so no pull of jetfan's can be given what is handed back; otherwise jetfan's
  // requests may still carry a valid id until they expire, and hand-backs must outlast them.
  virtual void stand_by(TimePoint now, bool refused) = 0;
  // The consumer has a new leader (it pins no one): jetfan's requests at the old one are gone.
  virtual void leader_changed(TimePoint now) = 0;

 protected:
  ~PinHost() = default;
};

class PinnedReader {
 public:
  static constexpr std::uint64_t kKeepAliveBit = std::uint64_t{1} << 61;
  static constexpr std::uint64_t kUnpinBit = std::uint64_t{1} << 60;
  static constexpr Duration kKeepAliveExpires{1000};

  PinnedReader(const Config& config, PinSettings settings, Upstream& upstream, PinHost& host);

  static bool owns_pull(std::uint64_t id) { return (id & kKeepAliveBit) != 0; }
  static bool owns_request(std::uint64_t id) { return (id & kUnpinBit) != 0; }

  // Names the group, and the pin id while jetfan has one, in a pull about to go out.
  void decorate(PullRequest& request, TimePoint now);
  bool may_pull(TimePoint now) const { return pin_.may_pull(now); }
  // A delivery's Nats-Pin-Id header (empty: none). Before the message is routed.
  void on_message(std::string_view pin_id, TimePoint now);
  // A status reply to a pull, the ledger's or a keep-alive's (owns_pull).
  void on_status(const PullStatus& status, TimePoint now);
  // The answer to an UNPIN or a pin check (owns_request).
  void on_api_reply(std::uint64_t id, const ApiReply& reply, TimePoint now);
  // Keep-alives, the end of a re-pin wait or of a quiet spell. Called often (housekeeping).
  void tick(TimePoint now);
  // Sends a claim pull if one is needed: re-pinning, none open, and `pulls_waiting` false (no request
  // of the ledger's is open at the server, and the ledger is not waiting for the consumer's leader to
  // answer). Cheap; called after every top-up.
  void claim(TimePoint now, bool pulls_waiting);
  // jetfan step-down: releases the pin at the server (UNPIN), stands by at once and pulls no more
  // until its requests there have ended and a second more; should the server pin one of those
  // requests meanwhile, that pin is released again. What was done, in words, for the operator;
  // nullopt while standing by (an UNPIN then would move another's pin).
  std::optional<std::string> step_down(TimePoint now);
  // Asks the server to release jetfan's pin, if it has one, changing nothing here: a draining or
  // stopping jetfan, so that a standby need not wait priority_timeout.
  void release();

  bool active() const { return pin_.active(); }
  void fill(StatusSnapshot& snapshot) const;

 private:
  void act(PinTracker::Change change, TimePoint now, std::string_view why, bool refused = false);
  bool send_unpin();
  void on_pin_check(const ApiReply& reply, TimePoint now);

  const Config& config_;
  PinTracker pin_;
  Upstream& upstream_;
  PinHost& host_;
  std::string unpin_subject_, unpin_body_, info_subject_;
  std::uint64_t next_keepalive_ = 1;
  std::uint64_t next_unpin_ = 1;
  std::uint64_t keepalives_sent_ = 0;
  std::uint64_t claims_sent_ = 0;
  // The claim pull open at the server, until its status (or a leader change) ends it.
  std::optional<std::uint64_t> open_claim_;
  // The pin check open at the server.
  std::optional<std::uint64_t> open_check_;
  // Set from a step-down until jetfan's requests sent before it have ended.
  std::optional<TimePoint> stepping_down_until_;
  // The pin id each open pull carried, by pull id: a 423 means the pin moved only when it refused
  // the id jetfan holds now (one for an id dropped at a leader change, or replaced, is stale).
  std::unordered_map<std::uint64_t, std::string> carried_;
};

}  // namespace jetfan
