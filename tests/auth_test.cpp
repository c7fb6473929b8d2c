// Authenticated and encrypted NATS, against a real nats-server configured for each way jetfan can
// authenticate: user and password, token, NKey, creds file (operator -> account -> user JWTs),
// TLS with server verification, and mutual TLS. For each: the right credential connects, binds the
// consumer and delivers to a real handler; a wrong one makes jetfan exit with the documented
// status, naming what was refused and never the secret. Secret files that others may read are
// warned about. Keys, certificates and JWTs are made fresh for each test by
// tests/auth/make_auth_fixtures.py (Python's standard library and openssl; see tests/auth/README.md).

#include <sys/stat.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "mesh.hpp"

using namespace jetfan::testing;

namespace {

const std::string kBuilder = "  - name: builder\n    patterns: [\"a.>\"]\n";

// The keys, certificates and credentials of one test, in a temp dir of its own (the server's
// config names them before the Mesh, and its dir, exist).
class AuthFixtures {
 public:
  AuthFixtures() {
    std::string pattern = std::filesystem::temp_directory_path().string() + "/jetfan-auth.XXXXXX";
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp");
    dir_ = pattern;
    Process make({"python3", JETFAN_AUTH_FIXTURE_SCRIPT, dir_}, dir_ + "/make.log");
    if (make.wait(120s) != 0) {
      throw std::runtime_error("make_auth_fixtures.py failed: " + read_file(dir_ + "/make.log"));
    }
    manifest_ = nlohmann::json::parse(read_file(dir_ + "/manifest.json"));
  }
  ~AuthFixtures() {
    std::error_code ignored;
    if (!std::getenv("JETFAN_KEEP_TEST_DIRS")) std::filesystem::remove_all(dir_, ignored);
  }
  std::string path(const std::string& relative) const { return dir_ + "/" + relative; }
  std::string operator[](const std::string& key) const { return manifest_.at(key).get<std::string>(); }
  // The lines of a file that are secret: everything but its BEGIN/END markers and blank lines.
  std::vector<std::string> secret_lines(const std::string& relative) const {
    std::vector<std::string> lines;
    std::istringstream text(read_file(path(relative)));
    for (std::string line; std::getline(text, line);) {
      if (line.size() > 16 && line.find("-----") == std::string::npos && line.find(' ') == std::string::npos) {
        lines.push_back(line);
      }
    }
    if (lines.empty()) throw std::runtime_error("no secret found in " + relative);
    return lines;
  }

 private:
  std::string dir_;
  nlohmann::json manifest_;
};

std::string random_secret(const std::string& prefix) {
  std::random_device random;
  std::ostringstream out;
  out << prefix << std::hex << random() << random();
  return out.str();
}

// jetfan starts with `nats_extra`, binds the consumer, and a real handler gets an event, acked at the server.
void check_delivers(Mesh& mesh, const std::string& nats_extra) {
  mesh.start_jetfan(mesh.config(kBuilder, "", nats_extra));
  mesh.start_handler("builder");
  const std::size_t before = mesh.seen("builder").size();
  mesh.publish("a.b", "authenticated");
  REQUIRE(mesh.wait_seen("builder", before + 1));
  CHECK(mesh.seen("builder").back().payload == "authenticated");
  REQUIRE(mesh.wait_settled());
  mesh.jetfan().signal(SIGTERM);
  REQUIRE(mesh.jetfan().wait(20s) == 0);
}

// jetfan starts with `nats_extra` and exits with `status` at once. Returns the log of this run.
std::string check_exits(Mesh& mesh, const std::string& nats_extra, int status) {
  const std::size_t before = mesh.jetfan_log().size();
  auto& jetfan = mesh.start_jetfan(mesh.config(kBuilder, "", nats_extra), false);
  REQUIRE(jetfan.wait(30s) == status);
  std::string log = mesh.jetfan_log().substr(before);
  CHECK(count_lines_containing(log, "serving consumer") == 0);
  return log;
}

void check_secret_absent(const std::string& log, const std::vector<std::string>& secrets) {
  for (const auto& secret : secrets) {
    INFO("secret: " << secret);
    CHECK(log.find(secret) == std::string::npos);
  }
}

std::string tls_block(const AuthFixtures& fx, const std::string& ca, const std::string& cert = "",
                      const std::string& key = "") {
  std::string block = "  tls:\n    ca: " + fx.path(ca) + "\n";
  if (!cert.empty()) block += "    cert: " + fx.path(cert) + "\n    key: " + fx.path(key) + "\n";
  return block;
}

}  // namespace

TEST_CASE("user and password: the right pair delivers and a wrong password exits 77 naming the user but no password",
          "[integration]") {
  const std::string password = random_secret("pw-");
  const std::string wrong = random_secret("wrong-");
  Mesh mesh({.server_conf = "authorization { users = [ {user: builder, password: \"" + password +
                            "\"}, {user: admin, password: admin} ] }\n",
             .controller_credentials = "admin:admin"});
  check_delivers(mesh, "  user: builder\n  password: " + password + "\n");
  // The config file holds the password and the test wrote it 0644: warned about, served anyway.
  CHECK_THAT(mesh.jetfan_log(), Catch::Contains("the config file " + mesh.dir() + "/jetfan.yaml has mode 0644") &&
                                    Catch::Contains("holds nats.password"));

  std::string log = check_exits(mesh, "  user: builder\n  password: " + wrong + "\n", 77);
  CHECK_THAT(log, Catch::Contains("refused jetfan's credentials, nats.user \"builder\" with nats.password") &&
                      Catch::Contains(mesh.dir() + "/jetfan.yaml"));

  // The same, with the password in the server URL: the URL is logged with it masked.
  std::string config = mesh.config(kBuilder);
  const std::string url = mesh.url();
  config.replace(config.find(url), url.size(), "nats://builder:" + wrong + "@" + url.substr(7));
  const std::size_t before = mesh.jetfan_log().size();
  auto& jetfan = mesh.start_jetfan(config, false);
  REQUIRE(jetfan.wait(30s) == 77);
  const std::string url_log = mesh.jetfan_log().substr(before);
  CHECK_THAT(url_log, Catch::Contains("nats://builder:***@127.0.0.1"));
  check_secret_absent(mesh.jetfan_log(), {password, wrong});
}

TEST_CASE("token: the right one delivers and a wrong one exits 77 naming nats.token but no token", "[integration]") {
  const std::string token = random_secret("tok-");
  const std::string wrong = random_secret("bad-");
  Mesh mesh({.token = token});
  check_delivers(mesh, "  token: " + token + "\n");
  const std::string log = check_exits(mesh, "  token: " + wrong + "\n", 77);
  CHECK_THAT(log, Catch::Contains("refused jetfan's credentials, nats.token (its value is not shown)"));
  check_secret_absent(mesh.jetfan_log(), {token, wrong});
}

TEST_CASE("token_file and password_file: secrets read from files, as systemd credentials, deliver", "[integration]") {
  const std::string token = random_secret("tok-");
  const std::string password = random_secret("pw-");
  Mesh mesh({.server_conf = "authorization { users = [ {user: builder, password: \"" + password +
                            "\"}, {user: admin, password: admin} ] }\n",
             .controller_credentials = "admin:admin"});
  // As LoadCredential= gives them: a directory named by $CREDENTIALS_DIRECTORY, files ending in a newline.
  const std::string credentials = mesh.dir() + "/credentials";
  std::filesystem::create_directory(credentials);
  std::ofstream(credentials + "/nats-password") << password << "\n";
  ::chmod((credentials + "/nats-password").c_str(), 0600);
  ::setenv("CREDENTIALS_DIRECTORY", credentials.c_str(), 1);  // jetfan inherits it
  check_delivers(mesh, "  user: builder\n  password_file: ${CREDENTIALS_DIRECTORY}/nats-password\n");
  ::unsetenv("CREDENTIALS_DIRECTORY");
  // Not in the config file, so no warning about the config file's mode, and none about the file's.
  CHECK_THAT(mesh.jetfan_log(), !Catch::Contains("has mode"));

  // A wrong password in a readable file: refused by the server, named by its file.
  std::ofstream(mesh.dir() + "/wrong") << random_secret("wrong-") << "\n";
  ::chmod((mesh.dir() + "/wrong").c_str(), 0644);
  const std::string log = check_exits(mesh, "  user: builder\n  password_file: " + mesh.dir() + "/wrong\n", 77);
  CHECK_THAT(log, Catch::Contains("nats.user \"builder\" with nats.password_file " + mesh.dir() + "/wrong"));
  CHECK_THAT(log, Catch::Contains("nats.password_file " + mesh.dir() + "/wrong has mode 0644"));
  // A missing file is a config error (78) naming it, before any connect.
  const std::string missing = check_exits(mesh, "  token_file: " + mesh.dir() + "/absent\n", 78);
  CHECK_THAT(missing, Catch::Contains("nats.token_file " + mesh.dir() + "/absent: cannot be read"));
  check_secret_absent(mesh.jetfan_log(), {password});

  Mesh token_mesh({.token = token});
  std::ofstream(token_mesh.dir() + "/token") << token << "\n";
  ::chmod((token_mesh.dir() + "/token").c_str(), 0600);
  check_delivers(token_mesh, "  token_file: " + token_mesh.dir() + "/token\n");
  check_secret_absent(token_mesh.jetfan_log(), {token});
}

TEST_CASE("jetfan check reads token_file and password_file as serve does: missing, unreadable, empty, too open",
          "[integration]") {
  Mesh mesh({.start_server = false});
  const std::string dir = mesh.dir();
  std::string output;
  auto check = [&](const std::string& nats_extra) {
    const std::string file = dir + "/check.yaml";
    std::ofstream(file) << mesh.config(kBuilder, "", nats_extra);
    return run_jetfan({"check", "--config", file}, dir, output);
  };
  CHECK(check("  token_file: " + dir + "/absent\n") == 78);
  CHECK_THAT(output, Catch::Contains("nats.token_file " + dir + "/absent: cannot be read"));
  // Unreadable even for root, who runs the tests: a directory.
  std::filesystem::create_directory(dir + "/a-directory");
  CHECK(check("  user: builder\n  password_file: " + dir + "/a-directory\n") == 78);
  CHECK_THAT(output, Catch::Contains("nats.password_file " + dir + "/a-directory: cannot be read"));
  std::ofstream(dir + "/empty") << "\n";
  ::chmod((dir + "/empty").c_str(), 0600);
  CHECK(check("  token_file: " + dir + "/empty\n") == 78);
  CHECK_THAT(output, Catch::Contains("nats.token_file " + dir + "/empty: is empty"));
  // Others may read it: the warning serve logs, and the file is good.
  std::ofstream(dir + "/token") << random_secret("tok-") << "\n";
  ::chmod((dir + "/token").c_str(), 0644);
  CHECK(check("  token_file: " + dir + "/token\n") == 0);
  CHECK_THAT(output, Catch::Contains("warning: nats.token_file " + dir + "/token has mode 0644") &&
                         Catch::Contains("chmod 600 " + dir + "/token"));
  ::chmod((dir + "/token").c_str(), 0600);
  CHECK(check("  token_file: " + dir + "/token\n") == 0);
  CHECK_THAT(output, !Catch::Contains("has mode") && Catch::Contains(": OK: "));
}

TEST_CASE(
    "NKey: the listed key delivers and an unknown or mismatched key exits 77 naming the seed file but not the seed",
    "[integration]") {
  AuthFixtures fx;
  Mesh mesh(
      {.server_conf = "authorization { users = [ {nkey: " + fx["nkey_user"] + "}, {user: admin, password: admin} ] }\n",
       .controller_credentials = "admin:admin"});
  const std::string seed = fx.path("nkey/user.seed");
  const std::string stranger_seed = fx.path("nkey/stranger.seed");
  ::chmod(seed.c_str(), 0640);
  check_delivers(mesh, "  nkey: " + fx["nkey_user"] + "\n  nkey_seed: " + seed + "\n");
  CHECK_THAT(mesh.jetfan_log(), Catch::Contains("nats.nkey_seed " + seed + " has mode 0640: its group can read it"));

  // A key the server does not list.
  std::string log = check_exits(mesh, "  nkey: " + fx["nkey_stranger"] + "\n  nkey_seed: " + stranger_seed + "\n", 77);
  CHECK_THAT(log, Catch::Contains("refused jetfan's credentials, nats.nkey " + fx["nkey_stranger"] +
                                  " with its seed in nats.nkey_seed " + stranger_seed));
  CHECK(count_lines_containing(log, "has mode") == 0);  // the stranger's seed is 0600
  // The listed public key, signed with another key's seed.
  log = check_exits(mesh, "  nkey: " + fx["nkey_user"] + "\n  nkey_seed: " + stranger_seed + "\n", 77);
  CHECK_THAT(log, Catch::Contains("nats.nkey_seed " + stranger_seed));
  // A seed file that is not there is a config error, not a retry loop.
  log = check_exits(mesh, "  nkey: " + fx["nkey_user"] + "\n  nkey_seed: " + fx.path("nkey/missing.seed") + "\n", 78);
  CHECK_THAT(log, Catch::Contains("nats.nkey_seed " + fx.path("nkey/missing.seed") + ": cannot be read"));
  check_secret_absent(mesh.jetfan_log(), fx.secret_lines("nkey/user.seed"));
  check_secret_absent(mesh.jetfan_log(), fx.secret_lines("nkey/stranger.seed"));
}

TEST_CASE(
    "creds with a user JWT: a user of the trusted account delivers and one of an unknown account exits 77 "
    "naming the file but not the JWT or seed",
    "[integration]") {
  AuthFixtures fx;
  // Operator mode: the server trusts the operator; the accounts' JWTs are preloaded in memory, and
  // the account's JWT gives it JetStream.
  const std::string conf = "operator: " + fx["operator_jwt_file"] + "\nsystem_account: " + fx["system_account"] +
                           "\nresolver: MEMORY\nresolver_preload: {\n  " + fx["system_account"] + ": " +
                           fx["system_account_jwt"] + "\n  " + fx["account"] + ": " + fx["account_jwt"] + "\n}\n";
  Mesh mesh({.server_conf = conf, .controller_auth = {.creds = fx.path("jwt/controller.creds")}});
  const std::string creds = fx.path("jwt/jetfan.creds");
  ::chmod(creds.c_str(), 0644);
  check_delivers(mesh, "  creds: " + creds + "\n");
  CHECK_THAT(mesh.jetfan_log(),
             Catch::Contains("nats.creds " + creds + " has mode 0644: its group can read it, others can read it"));

  const std::string stranger = fx.path("jwt/stranger.creds");
  std::string log = check_exits(mesh, "  creds: " + stranger + "\n", 77);
  CHECK_THAT(log, Catch::Contains("refused jetfan's credentials, nats.creds " + stranger));
  const std::string missing = fx.path("jwt/missing.creds");
  log = check_exits(mesh, "  creds: " + missing + "\n", 78);
  CHECK_THAT(log, Catch::Contains("nats.creds " + missing + ": cannot be read: No such file or directory"));
  check_secret_absent(mesh.jetfan_log(), fx.secret_lines("jwt/jetfan.creds"));
  check_secret_absent(mesh.jetfan_log(), fx.secret_lines("jwt/stranger.creds"));
}

TEST_CASE("TLS: a server whose certificate the CA signed delivers and an untrusted one exits 78 naming nats.tls.ca",
          "[integration]") {
  AuthFixtures fx;
  Mesh mesh({.server_conf = "tls { cert_file: " + fx.path("tls/server.pem") +
                            ", key_file: " + fx.path("tls/server.key") + ", timeout: 5 }\n",
             .controller_auth = {.tls_ca = fx.path("tls/ca.pem")},
             .scheme = "tls"});
  check_delivers(mesh, tls_block(fx, "tls/ca.pem"));
  CHECK(count_lines_containing(mesh.jetfan_log(), "has mode") == 0);

  std::string log = check_exits(mesh, tls_block(fx, "tls/other-ca.pem"), 78);
  CHECK_THAT(log, Catch::Contains("TLS with " + mesh.url() + " failed") &&
                      Catch::Contains("against nats.tls.ca " + fx.path("tls/other-ca.pem")));
  // Without nats.tls, the system's trust store does not know the test CA either.
  log = check_exits(mesh, "", 78);
  CHECK_THAT(log, Catch::Contains("the system's trust store (nats.tls.ca is not set)"));
}

TEST_CASE("TLS: a tls:// server URL never falls back to plain text and a server without TLS exits 78",
          "[integration]") {
  Mesh mesh;
  std::string config = mesh.config(kBuilder);
  config.replace(config.find("nats://"), 7, "tls://");
  const std::size_t before = mesh.jetfan_log().size();
  auto& jetfan = mesh.start_jetfan(config, false);
  REQUIRE(jetfan.wait(30s) == 78);
  CHECK_THAT(mesh.jetfan_log().substr(before),
             Catch::Contains("does not offer TLS") && Catch::Contains("jetfan never falls back to plain text"));
}

TEST_CASE(
    "mutual TLS: the CA's client certificate delivers and none or another CA's exits 77 naming nats.tls.cert "
    "but not the key",
    "[integration]") {
  AuthFixtures fx;
  Mesh mesh({.server_conf = "tls { cert_file: " + fx.path("tls/server.pem") +
                            ", key_file: " + fx.path("tls/server.key") + ", ca_file: " + fx.path("tls/ca.pem") +
                            ", verify: true, timeout: 5 }\n",
             .controller_auth = {.tls_ca = fx.path("tls/ca.pem"),
                                 .tls_cert = fx.path("tls/client.pem"),
                                 .tls_key = fx.path("tls/client.key")},
             .scheme = "tls"});
  const std::string key = fx.path("tls/client.key");
  ::chmod(key.c_str(), 0604);
  check_delivers(mesh, tls_block(fx, "tls/ca.pem", "tls/client.pem", "tls/client.key"));
  CHECK_THAT(mesh.jetfan_log(), Catch::Contains("nats.tls.key " + key + " has mode 0604: others can read it"));

  // The server closes the connection; jetfan retries once (a server going down looks the same), then exits.
  std::string log = check_exits(mesh, tls_block(fx, "tls/ca.pem"), 77);
  CHECK_THAT(log, Catch::Contains("refused jetfan's client certificate, none (nats.tls.cert is not set)"));
  CHECK(count_lines_containing(log, "cannot reach") == 1);
  log = check_exits(mesh, tls_block(fx, "tls/ca.pem", "tls/other-client.pem", "tls/other-client.key"), 77);
  CHECK_THAT(log,
             Catch::Contains("refused jetfan's client certificate, nats.tls.cert " + fx.path("tls/other-client.pem")));
  CHECK(count_lines_containing(log, "cannot reach") == 1);
  check_secret_absent(mesh.jetfan_log(), fx.secret_lines("tls/client.key"));
  check_secret_absent(mesh.jetfan_log(), fx.secret_lines("tls/other-client.key"));
}
