#include "pinned_reader.hpp"

#include "consumer_info.hpp"
#include "logging.hpp"

namespace jetfan {

namespace {
constexpr std::size_t kMaxCarried = 256;
// After a step-down, jetfan pulls again this long after its own requests have ended: the standby's
// requests, waiting already, are pinned first.
constexpr Duration kAfterHold{1000};
}  // namespace

PinnedReader::PinnedReader(const Config& config, PinSettings settings, Upstream& upstream, PinHost& host)
    : config_(config), pin_(std::move(settings)), upstream_(upstream), host_(host) {
  unpin_subject_ = "$JS.API.CONSUMER.UNPIN." + config.consumer.stream + "." + config.consumer.durable;
  unpin_body_ = "{\"group\":\"" + pin_.group() + "\"}";
  info_subject_ = jetstream::consumer_info_subject(config.consumer.stream, config.consumer.durable);
}

void PinnedReader::decorate(PullRequest& request, TimePoint now) {
  request.group = pin_.group();
  request.pin_id = pin_.pin_id();
  if (request.pin_id.empty()) return;
  pin_.pulled(now);
  if (carried_.size() >= kMaxCarried) {
    // Requests of an id no longer held cannot matter any more; the map stays small.
    std::erase_if(carried_, [&](const auto& entry) { return entry.second != pin_.pin_id(); });
  }
  carried_[request.id] = pin_.pin_id();
}

void PinnedReader::act(PinTracker::Change change, TimePoint now, std::string_view why, bool refused) {
  const std::string& group = pin_.group();
  if (change == PinTracker::Change::kGained) {
    log_info("pin.gained", {{"group", group}, {"consumer", config_.consumer.durable}, {"pin", pin_.pin_id()}},
             "pin: jetfan is the pinned client of group \"{}\" of consumer \"{}\" ({}); holding order for what the "
             "former reader left, then serving",
             group, config_.consumer.durable, why);
    host_.take_over(now);
  } else if (change == PinTracker::Change::kLost) {
    log_warn("pin.lost", {{"group", group}, {"consumer", config_.consumer.durable}, {"reason", why}},
             "pin: jetfan is no longer the pinned client of group \"{}\" of consumer \"{}\" ({}); handing back what "
             "it holds and standing by",
             group, config_.consumer.durable, why);
    host_.stand_by(now, refused);
  }
}

void PinnedReader::on_message(std::string_view pin_id, TimePoint now) {
  if (pin_id.empty()) return;
  if (stepping_down_until_ && now < *stepping_down_until_ && !pin_.active() && pin_id != pin_.given_up()) {
    // The server pinned a request jetfan sent before it stepped down: released again, not taken.
    // What came with it is handed back, as by any standby.
    pin_.give_up(pin_id);
    if (send_unpin()) {
      log_info("pin.released", {{"group", pin_.group()}, {"consumer", config_.consumer.durable}},
               "pin: the server pinned a pull request jetfan sent before its step-down; released it again");
    }
    return;
  }
  const bool repinning = pin_.role() == PinTracker::Role::kRepinning || pin_.role() == PinTracker::Role::kChecking;
  const auto change = pin_.on_message(pin_id, now);
  if (repinning && pin_.role() == PinTracker::Role::kActive) {
    log_info("pin.kept", {{"group", pin_.group()}, {"pin", pin_.pin_id()}},
             "pin: pinned again in group \"{}\" after the consumer's leader changed", pin_.group());
  }
  act(change, now, "a delivery carried its pin id");
}

void PinnedReader::on_status(const PullStatus& status, TimePoint now) {
  if (open_claim_ == status.pull && status.code != "100") open_claim_.reset();
  const auto carried = carried_.find(status.pull);
  std::string carried_id;
  if (carried != carried_.end()) {
    carried_id = std::move(carried->second);
    if (status.code != "100") carried_.erase(carried);  // any other status ends the request
  }
  if (status.code == "423") {
    // Only a refusal of the id held now says something; one of an id already dropped (a request
    // sent before a leader change, answered by the new leader) says nothing new. It says the pin
    // moved, or that a new leader pins no one: the consumer is asked which.
    if (carried_id.empty() || carried_id != pin_.pin_id()) return;
    pin_.on_refused(now);
    open_check_ = kUnpinBit | next_unpin_++;
    if (!upstream_.api_request(*open_check_, info_subject_, "")) open_check_.reset();  // kCheckWait decides
    log_info("pin.refused", {{"group", pin_.group()}, {"reason", status.description}},
             "pin: the server refused jetfan's pin id of group \"{}\" ({}); asking the consumer whether another "
             "client holds the pin or a new leader holds none",
             pin_.group(), status.description);
    return;
  }
  if (status.code == "409" && status.description.find("Leadership Change") != std::string_view::npos) {
    // The new leader has no pin: the owner asks again at once, a standby a moment later.
    pin_.on_leader_change(now);
    open_claim_.reset();  // the old leader's requests are gone
  }
}

void PinnedReader::on_api_reply(std::uint64_t id, const ApiReply& reply, TimePoint now) {
  if (id == open_check_) {
    open_check_.reset();
    on_pin_check(reply, now);
    return;
  }
  if (reply.json.empty() || reply.json.find("\"error\"") != std::string_view::npos) {
    const std::string why = reply.json.empty() ? std::string(reply.error) : std::string(reply.json.substr(0, 200));
    log_warn("pin.unpin_failed", {{"group", pin_.group()}, {"reason", why}},
             "pin: the server did not release the pin of group \"{}\": {}; the pin moves once it times out",
             pin_.group(), why);
  }
}

void PinnedReader::on_pin_check(const ApiReply& reply, TimePoint now) {
  const auto answer = jetstream::parse_consumer_info(reply.json);
  const auto* info = std::get_if<jetstream::ConsumerInfo>(&answer);
  if (reply.json.empty() || info == nullptr) return;  // no answer: jetfan re-pins after kCheckWait
  std::string holder;
  for (const auto& state : info->group_states) {
    if (state.group == pin_.group()) holder = state.pinned_client_id;
  }
  const bool checking = pin_.role() == PinTracker::Role::kChecking;
  act(pin_.on_pin_holder(holder, now), now, "the consumer says another client holds the pin", true);
  if (holder.empty() && checking) {
    log_info("pin.repinning", {{"group", pin_.group()}},
             "pin: group \"{}\" is pinned to no one (its consumer has a new leader): pulling to be pinned again",
             pin_.group());
    // Its requests sent to the old leader wait nowhere now: told by no 409, the ledger would count
    // them for seconds, and neither pull nor claim while the standby is pinned.
    host_.leader_changed(now);
  }
}

void PinnedReader::tick(TimePoint now) {
  if (stepping_down_until_ && now >= *stepping_down_until_) stepping_down_until_.reset();
  act(pin_.tick(now), now,
      "not pinned again within " + std::to_string(PinTracker::kRepinWait.count()) + "ms of a leader change");
  const auto due = pin_.keepalive_due();
  if (!due || now < *due) return;
  // Only a new pull carrying the id keeps the pin; this one asks for nothing it could get.
  PullRequest keepalive;
  keepalive.id = kKeepAliveBit | next_keepalive_++;
  keepalive.batch = 1;
  keepalive.max_bytes = 1;
  keepalive.expires = kKeepAliveExpires;
  decorate(keepalive, now);
  if (upstream_.send_pull(keepalive)) ++keepalives_sent_;
}

void PinnedReader::claim(TimePoint now, bool pulls_waiting) {
  if (pin_.role() != PinTracker::Role::kRepinning || pulls_waiting || open_claim_ || !pin_.may_pull(now)) return;
  PullRequest claim;
  claim.id = kKeepAliveBit | next_keepalive_++;
  claim.batch = 1;
  claim.expires = kKeepAliveExpires;
  decorate(claim, now);
  if (!upstream_.send_pull(claim)) return;
  open_claim_ = claim.id;
  ++claims_sent_;
}

bool PinnedReader::send_unpin() {
  return upstream_.api_request(kUnpinBit | next_unpin_++, unpin_subject_, unpin_body_);
}

std::optional<std::string> PinnedReader::step_down(TimePoint now) {
  if (!pin_.active()) return std::nullopt;
  if (!send_unpin()) return std::string("not connected to the server: nothing was released");
  // Until jetfan's requests at the server have ended (pull_expires), a new pin given to one of them
  // is released again (on_message); jetfan pulls again only after that.
  const Duration hold = config_.consumer.pull_expires + kAfterHold;
  stepping_down_until_ = now + hold;
  act(pin_.step_down(now, hold), now, "jetfan step-down");
  return "stepped down: jetfan delivers nothing new and hands back what it holds; the pin of group \"" + pin_.group() +
         "\" is released, and jetfan pulls again in " + std::to_string(hold.count() / 1000) +
         "s, as a standby, so that a standby takes it";
}

void PinnedReader::release() {
  if (!pin_.active() || !send_unpin()) return;
  log_info("pin.released", {{"group", pin_.group()}, {"consumer", config_.consumer.durable}},
           "pin: released the pin of group \"{}\" of consumer \"{}\" on stopping, for a standby to take at once",
           pin_.group(), config_.consumer.durable);
}

void PinnedReader::fill(StatusSnapshot& s) const {
  s.pin_group = pin_.group();
  s.pin_role = to_string(pin_.role());
  s.pin_gained = pin_.gained();
  s.pin_lost = pin_.lost();
  s.pin_keepalives = keepalives_sent_;
  s.pin_claims = claims_sent_;
}

}  // namespace jetfan
