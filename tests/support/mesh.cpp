#include "mesh.hpp"

#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace jetfan::testing {

Mesh::Mesh(MeshOptions options) : options_(std::move(options)) {
  std::string pattern = std::filesystem::temp_directory_path().string() + "/jetfan-test.XXXXXX";
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp");
  dir_ = pattern;
  start_server();
  if (!options_.start_server) {
    // The test starts the server later, on a port jetfan must know now: the one it just chose.
    stop_server();
    return;
  }
  if (!options_.jetstream) return;
  controller().create_stream("EVENTS", {"events.>", "other.>"});
  if (options_.create_consumer) {
    example::ConsumerSpec spec;
    spec.durable = "node1_builder";
    spec.ack_policy = options_.ack_policy;
    spec.ack_wait = options_.ack_wait;
    spec.max_deliver = options_.max_deliver;
    spec.max_ack_pending = options_.max_ack_pending;
    controller().create_consumer("EVENTS", spec);
  }
}

Mesh::~Mesh() {
  handlers_.clear();
  jetfan_.reset();
  controller_.reset();
  server_.reset();
  std::error_code ignored;
  if (!std::getenv("JETFAN_KEEP_TEST_DIRS")) std::filesystem::remove_all(dir_, ignored);
}

std::string nats_server_binary() {
  const char* chosen = std::getenv("JETFAN_NATS_SERVER");
  return chosen != nullptr && *chosen != '\0' ? chosen : "nats-server";
}

ServerVersion nats_server_version() {
  const std::string command = "'" + nats_server_binary() + "' --version 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
  std::string text;
  if (pipe) {
    char buffer[256];
    while (std::fgets(buffer, sizeof buffer, pipe.get()) != nullptr) text += buffer;
  }
  static const std::regex kVersion("v([0-9]+)\\.([0-9]+)\\.([0-9]+)");
  std::smatch match;
  if (!std::regex_search(text, match, kVersion)) return {};
  return {std::stoi(match[1]), std::stoi(match[2]), std::stoi(match[3])};
}

std::string Mesh::url() const { return options_.scheme + "://127.0.0.1:" + std::to_string(port_); }

void Mesh::start_server() {
  // The first start lets the server choose a free port (-p -1), so tests running side by side never
  // race for one; restarts reuse it.
  std::vector<std::string> argv = {nats_server_binary(), "-a", "127.0.0.1", "-p",
                                   port_ == 0 ? "-1" : std::to_string(port_)};
  if (options_.jetstream) {
    for (const char* word : {"-js", "-sd"}) argv.push_back(word);
    argv.push_back(dir_ + "/jetstream");
  }
  if (!options_.token.empty()) {
    argv.push_back("--auth");
    argv.push_back(options_.token);
  }
  if (!options_.server_conf.empty()) {
    std::ofstream(dir_ + "/nats.conf") << options_.server_conf;
    argv.push_back("-c");
    argv.push_back(dir_ + "/nats.conf");
  }
  const std::string log = dir_ + "/nats.log";
  const std::size_t before = count_lines_containing(read_file(log), "Server is ready");
  server_ = std::make_unique<Process>(argv, log);
  if (!wait_until([&] { return count_lines_containing(read_file(log), "Server is ready") > before; })) {
    throw std::runtime_error("nats-server did not start: " + read_file(log));
  }
  if (port_ == 0) {
    static const std::regex kListening("Listening for client connections on 127\\.0\\.0\\.1:([0-9]+)");
    const std::string text = read_file(log);
    std::smatch match;
    if (!std::regex_search(text, match, kListening))
      throw std::runtime_error("nats-server did not say its port: " + text);
    port_ = std::stoi(match[1]);
  }
}

void Mesh::stop_server() {
  controller_.reset();
  if (!server_) return;
  server_->signal(SIGTERM);
  server_->wait(20s);
  server_.reset();
}

void Mesh::kill_server() {
  controller_.reset();
  if (!server_) return;
  server_->kill_now();
  server_.reset();
}

void Mesh::signal_server(int signal) {
  if (server_) server_->signal(signal);
}

example::MeshController& Mesh::controller() {
  if (!controller_) {
    std::string where = url();
    if (!options_.controller_credentials.empty()) {
      where.insert(options_.scheme.size() + 3, options_.controller_credentials + "@");
    }
    example::ControllerAuth auth = options_.controller_auth;
    if (auth.token.empty()) auth.token = options_.token;
    controller_ = std::make_unique<example::MeshController>(where, auth);
  }
  return *controller_;
}

std::uint64_t Mesh::publish(const std::string& key, const std::string& payload) {
  last_published_ = controller().publish("events." + key, payload);
  return last_published_;
}

example::ConsumerState Mesh::state() { return controller().state("EVENTS", "node1_builder"); }

std::string Mesh::config(const std::string& handlers, const std::string& extra, const std::string& nats_extra) const {
  std::ostringstream text;
  text << "nats:\n  servers: [\"" << url() << "\"]\n  retry_max: 500ms\n"
       << nats_extra << "consumer:\n  stream: EVENTS\n  durable: node1_builder\n"
       << "key:\n  strip_prefix: \"events.\"\n"
       << "socket:\n  path: " << socket_path() << "\n"
       << "handlers:\n"
       << handlers << extra;
  return text.str();
}

std::vector<std::string> Mesh::jetfan_command() const {
  return {JETFAN_BIN, "serve", "--config", dir_ + "/jetfan.yaml", "--log-level", "trace"};
}

Process& Mesh::start_jetfan(const std::string& config_text, bool wait_ready, const SpawnExtras& extras) {
  const std::string path = dir_ + "/jetfan.yaml";
  std::ofstream(path) << config_text;
  const std::size_t served_before = count_lines_containing(jetfan_log(), "serving consumer");
  jetfan_ = std::make_unique<Process>(jetfan_command(), dir_ + "/jetfan.log", "", extras);
  if (wait_ready && !wait_for_log("serving consumer", 20s, served_before + 1)) {
    throw std::runtime_error("jetfan did not start serving:\n" + jetfan_log());
  }
  return *jetfan_;
}

bool Mesh::wait_for_log(const std::string& part, std::chrono::milliseconds timeout, std::size_t occurrences) const {
  return wait_until([&] { return count_lines_containing(jetfan_log(), part) >= occurrences; }, timeout);
}

Process& Mesh::start_handler(const std::string& name, const std::vector<std::string>& flags,
                             const std::vector<std::string>& runner, bool wait_ready) {
  int instance = 1;
  for (const auto& [n, i] : handler_names_) instance += n == name;
  handler_names_.emplace_back(name, instance);
  const std::string base = dir_ + "/" + name + "-" + std::to_string(instance);
  std::vector<std::string> argv = runner;
  for (const auto& word : {std::string(TEST_HANDLER_BIN), socket_path(), name, base + ".seen"}) argv.push_back(word);
  argv.insert(argv.end(), flags.begin(), flags.end());
  handlers_.push_back(std::make_unique<Process>(argv, base + ".log"));
  // Connected once READY came back: the handler writes a marker first thing.
  if (wait_ready && !wait_until([&] { return read_file(base + ".log").find("ready") != std::string::npos; })) {
    throw std::runtime_error("handler " + name + " did not connect: " + read_file(base + ".log"));
  }
  return *handlers_.back();
}

std::string Mesh::handler_log(const std::string& name, int instance) const {
  return read_file(dir_ + "/" + name + "-" + std::to_string(instance) + ".log");
}

std::vector<Seen> Mesh::seen(const std::string& name, int instance) const {
  std::vector<Seen> out;
  std::istringstream lines(read_file(dir_ + "/" + name + "-" + std::to_string(instance) + ".seen"));
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    Seen s;
    words >> s.stream_seq >> s.key >> s.deliveries;
    std::getline(words >> std::ws, s.payload);
    out.push_back(s);
  }
  return out;
}

std::vector<SeenDetail> Mesh::details(const std::string& name, int instance) const {
  std::vector<SeenDetail> out;
  std::istringstream lines(read_file(dir_ + "/" + name + "-" + std::to_string(instance) + ".seen.details"));
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    SeenDetail d;
    std::string hex;
    words >> d.stream_seq >> d.deliveries >> d.server_deliveries >> hex;
    for (std::size_t i = 0; hex != "-" && i + 1 < hex.size(); i += 2) {
      d.headers.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    }
    out.push_back(d);
  }
  return out;
}

bool Mesh::wait_seen(const std::string& name, std::size_t count, int instance,
                     std::chrono::milliseconds timeout) const {
  return wait_until([&] { return seen(name, instance).size() >= count; }, timeout);
}

bool Mesh::wait_settled(std::chrono::milliseconds timeout) {
  return wait_until(
      [&] {
        const auto s = state();
        return s.num_pending == 0 && s.num_ack_pending == 0 && s.delivered_stream_seq >= last_published_;
      },
      timeout);
}

}  // namespace jetfan::testing
