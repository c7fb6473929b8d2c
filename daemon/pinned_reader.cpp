#include "pinned_reader.hpp"

#include "logging.hpp"

namespace jetfan {

PinnedReader::PinnedReader(const Config& config, PinSettings settings, Upstream& upstream, PinHost& host)
    : config_(config), pin_(std::move(settings)), upstream_(upstream), host_(host) {
  unpin_subject_ = "$JS.API.CONSUMER.UNPIN." + config.consumer.stream + "." + config.consumer.durable;
  unpin_body_ = "{\"group\":\"" + pin_.group() + "\"}";
}

void PinnedReader::decorate(PullRequest& request, TimePoint now) {
  request.group = pin_.group();
  request.pin_id = pin_.pin_id();
  if (!request.pin_id.empty()) pin_.pulled(now);
}

void PinnedReader::act(PinTracker::Change change, TimePoint now, std::string_view why) {
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
    host_.stand_by(now);
  }
}

void PinnedReader::on_message(std::string_view pin_id, TimePoint now) {
  if (pin_id.empty()) return;
  const bool repinning = pin_.role() == PinTracker::Role::kRepinning;
  const auto change = pin_.on_message(pin_id, now);
  if (repinning && pin_.role() == PinTracker::Role::kActive) {
    log_info("pin.kept", {{"group", pin_.group()}, {"pin", pin_.pin_id()}},
             "pin: pinned again in group \"{}\" after the consumer's leader changed", pin_.group());
  }
  act(change, now, "a delivery carried its pin id");
}

void PinnedReader::on_status(const PullStatus& status, TimePoint now) {
  if (status.code == "423") {
    act(pin_.on_refused(now), now, "the server refused its pin id: " + std::string(status.description));
    return;
  }
  if (status.code == "409" && status.description.find("Leadership Change") != std::string_view::npos) {
    // The new leader has no pin: the owner asks again at once, a standby a moment later.
    pin_.on_leader_change(now);
  }
}

void PinnedReader::on_api_reply(const ApiReply& reply) {
  if (reply.json.empty() || reply.json.find("\"error\"") != std::string_view::npos) {
    const std::string why = reply.json.empty() ? std::string(reply.error) : std::string(reply.json.substr(0, 200));
    log_warn("pin.unpin_failed", {{"group", pin_.group()}, {"reason", why}},
             "pin: the server did not release the pin of group \"{}\": {}; the pin moves once it times out",
             pin_.group(), why);
  }
}

void PinnedReader::tick(TimePoint now) {
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

std::string PinnedReader::step_down(TimePoint now) {
  const Duration hold = config_.consumer.pull_expires + Duration(1000);
  const bool was_active = pin_.active();
  if (!upstream_.api_request(kUnpinBit | next_unpin_++, unpin_subject_, unpin_body_)) {
    return "not connected to the server: nothing was released";
  }
  act(pin_.step_down(now, hold), now, "jetfan step-down");
  return std::string(was_active ? "stepped down" : "was standing by") + ": the pin of group \"" + pin_.group() +
         "\" is released and jetfan pulls again in " + std::to_string(hold.count() / 1000) +
         "s, so that a standby takes it";
}

void PinnedReader::fill(StatusSnapshot& s) const {
  s.pin_group = pin_.group();
  s.pin_role = to_string(pin_.role());
  s.pin_gained = pin_.gained();
  s.pin_lost = pin_.lost();
  s.pin_keepalives = keepalives_sent_;
}

}  // namespace jetfan
