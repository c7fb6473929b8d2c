#include "nats_auth.hpp"

#include <sys/stat.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "startup_error.hpp"

using namespace jetfan;

namespace {

// A throwaway user NKey made by tests/auth/make_auth_fixtures.py for this test only; no server
// trusts it. It is here because a seed cnats accepts cannot be made with cnats's public API.
const std::string kSeed = "SUALRYWDBE53UDHUV4ZKIV3H2UYVXZY4D4ZESVMTTDRW4ZEPWGYSUENMHI";
const std::string kPublic = "UAEXVBWDILDMDOQKQMO6UL3TQVV6V25ERU4CAPHYXSTCMA2JGWC6VMCU";

struct TempDir {
  TempDir() {
    std::string pattern = std::filesystem::temp_directory_path().string() + "/jetfan-auth-unit.XXXXXX";
    path = ::mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string write(const std::string& name, const std::string& text, mode_t mode = 0600) const {
    std::string file = path + "/" + name;
    std::ofstream(file) << text;
    ::chmod(file.c_str(), mode);
    return file;
  }
  std::string path;
};

NatsSettings with_user() {
  NatsSettings nats;
  nats.servers = {"nats://127.0.0.1:4222"};
  nats.user = "builder";
  nats.password = "pa55word";
  return nats;
}

}  // namespace

TEST_CASE("a password or token in a server URL is never shown", "[unit]") {
  CHECK(redact_url("nats://builder:s3cret@host:4222") == "nats://builder:***@host:4222");
  CHECK(redact_url("tls://t0ken@host:4222") == "tls://***@host:4222");
  CHECK(redact_url("nats://host:4222") == "nats://host:4222");
  CHECK(redact_url("host:4222") == "host:4222");
  CHECK(redact_url("nats://a:b@c@host:4222") == "nats://a:***@host:4222");
  CHECK(url_has_secret("nats://x@h:1"));
  CHECK_FALSE(url_has_secret("nats://h:1/path@x"));
}

TEST_CASE("credentials are described by setting and file and never by their secret", "[unit]") {
  NatsSettings nats = with_user();
  CHECK(describe_credentials(nats) == "nats.user \"builder\" with nats.password");
  nats = {};
  nats.token = "t0psecret";
  CHECK(describe_credentials(nats) == "nats.token (its value is not shown)");
  nats = {};
  nats.creds = "/etc/jetfan/x.creds";
  nats.tls = TlsSettings{"/ca.pem", "/client.pem", "/client.key"};
  CHECK(describe_credentials(nats) ==
        "nats.creds /etc/jetfan/x.creds, and the client certificate nats.tls.cert /client.pem");
  nats = {};
  nats.nkey = kPublic;
  nats.nkey_seed = "/etc/jetfan/x.nk";
  CHECK(describe_credentials(nats) == "nats.nkey " + kPublic + " with its seed in nats.nkey_seed /etc/jetfan/x.nk");
  nats = {};
  nats.servers = {"nats://u:hidden@h:1"};
  CHECK(describe_credentials(nats) == "the credentials in the server URL nats://u:***@h:1");
  CHECK_THAT(describe_credentials(NatsSettings{}), Catch::StartsWith("no credentials"));
}

TEST_CASE("TLS is wanted with a nats.tls block or any tls:// URL", "[unit]") {
  NatsSettings nats;
  nats.servers = {"nats://a:1"};
  CHECK_FALSE(wants_tls(nats));
  nats.servers.push_back("TLS://b:1");
  CHECK(wants_tls(nats));
  nats.servers = {"nats://a:1"};
  nats.tls = TlsSettings{};
  CHECK(wants_tls(nats));
}

TEST_CASE("files holding a secret include the config file when it holds a password or token", "[unit]") {
  NatsSettings nats;
  nats.creds = "/c";
  nats.tls = TlsSettings{"/ca", "/cert", "/key"};
  auto files = secret_files(nats, "/etc/jetfan.yaml");
  REQUIRE(files.size() == 2);
  CHECK(files[0].setting == "nats.creds");
  CHECK(files[1].setting == "nats.tls.key");
  CHECK(files[1].path == "/key");
  files = secret_files(with_user(), "/etc/jetfan.yaml");
  REQUIRE(files.size() == 1);
  CHECK(files[0].path == "/etc/jetfan.yaml");
  CHECK(files[0].holds == "nats.password");
  CHECK(secret_files(NatsSettings{}, "/etc/jetfan.yaml").empty());
}

TEST_CASE("a secret file that group or others can read or write is warned about with its mode", "[unit]") {
  const SecretFile file{"nats.creds", "/etc/jetfan/x.creds", "a user JWT and its NKey seed"};
  CHECK_FALSE(exposure_warning(file, S_IFREG | 0600));
  CHECK_FALSE(exposure_warning(file, S_IFREG | 0400));
  const auto group = exposure_warning(file, S_IFREG | 0640);
  REQUIRE(group);
  CHECK_THAT(*group, Catch::StartsWith("nats.creds /etc/jetfan/x.creds has mode 0640: its group can read it") &&
                         Catch::Contains("chmod 600 /etc/jetfan/x.creds"));
  const auto world = exposure_warning(file, S_IFREG | 0644);
  REQUIRE(world);
  CHECK_THAT(*world, Catch::Contains("0644") && Catch::Contains("its group can read it, others can read it"));
  const auto writable = exposure_warning(file, S_IFREG | 0602);
  REQUIRE(writable);
  CHECK_THAT(*writable, Catch::Contains("others can write it"));
}

TEST_CASE("exposed secret files are found by their real mode", "[unit]") {
  TempDir dir;
  NatsSettings nats;
  nats.nkey = kPublic;
  nats.nkey_seed = dir.write("user.nk", kSeed + "\n", 0644);
  nats.tls = TlsSettings{"", dir.write("c.pem", "x", 0644), dir.write("c.key", "x", 0600)};
  const auto warnings = exposed_secret_file_warnings(nats, dir.path + "/missing.yaml");
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Catch::StartsWith("nats.nkey_seed " + nats.nkey_seed + " has mode 0644"));
  CHECK_THAT(warnings[0], !Catch::Contains(kSeed));
}

TEST_CASE("creds and seed files are checked before connecting and named by file but never by secret", "[unit]") {
  TempDir dir;
  NatsSettings nats;
  nats.nkey = kPublic;
  nats.nkey_seed = dir.write("user.nk", kSeed + "\n");
  CHECK_FALSE(check_credential_files(nats));

  nats.nkey_seed = dir.path + "/missing.nk";
  CHECK(check_credential_files(nats) ==
        "nats.nkey_seed " + nats.nkey_seed + ": cannot be read: No such file or directory");

  const std::string broken = kSeed.substr(0, kSeed.size() - 1) + (kSeed.back() == 'A' ? "B" : "A");
  nats.nkey_seed = dir.write("broken.nk", broken + "\n");
  const auto problem = check_credential_files(nats);
  REQUIRE(problem);
  CHECK_THAT(*problem, Catch::StartsWith("nats.nkey_seed " + nats.nkey_seed + ": does not hold a valid NKey seed"));
  CHECK_THAT(*problem, !Catch::Contains(broken));

  nats = {};
  const std::string jwt = "eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJl";  // shape only: cnats checks it at connect
  nats.creds = dir.write("good.creds", "-----BEGIN NATS USER JWT-----\n" + jwt +
                                           "\n------END NATS USER JWT------\n\n"
                                           "-----BEGIN USER NKEY SEED-----\n" +
                                           kSeed + "\n------END USER NKEY SEED------\n");
  CHECK_FALSE(check_credential_files(nats));
  nats.creds = dir.write("garbage.creds", "nothing here\n");
  CHECK_THAT(*check_credential_files(nats), Catch::Contains(nats.creds + ": holds no user JWT"));
  nats.creds =
      dir.write("jwt-only.creds", "-----BEGIN NATS USER JWT-----\n" + jwt + "\n------END NATS USER JWT------\n");
  CHECK_THAT(*check_credential_files(nats), Catch::Contains(": holds no NKey seed"));
  nats.creds = dir.write("bad-seed.creds", "-----BEGIN NATS USER JWT-----\n" + jwt +
                                               "\n-----END-----\n"
                                               "-----BEGIN USER NKEY SEED-----\n" +
                                               broken + "\n-----END-----\n");
  const auto bad_seed = check_credential_files(nats);
  REQUIRE(bad_seed);
  CHECK_THAT(*bad_seed,
             Catch::Contains(": its NKey seed is not valid") && !Catch::Contains(broken) && !Catch::Contains(jwt));
}

TEST_CASE("a failed connect is retried or exits 77 or 78 saying what was refused", "[unit]") {
  const NatsSettings user = with_user();
  auto judge = [](natsStatus status, const NatsSettings& nats, bool before = false) {
    return judge_connect_failure(status, "cnats says why", nats, "/etc/j.yaml", "nats://h:1", before);
  };
  auto refused = judge(NATS_CONNECTION_AUTH_FAILED, user);
  CHECK(refused.exit_code == kExitNoPerm);
  CHECK_THAT(refused.message, Catch::Contains("nats://h:1 refused jetfan's credentials, nats.user \"builder\"") &&
                                  Catch::Contains("/etc/j.yaml") && !Catch::Contains(user.password));
  CHECK(judge(NATS_NOT_PERMITTED, user).exit_code == kExitNoPerm);

  CHECK(judge(NATS_NO_SERVER, user).exit_code == 0);
  CHECK(judge(NATS_TIMEOUT, user).exit_code == 0);
  CHECK(judge(NATS_ERR, user).exit_code == 0);
  // Without TLS a connection closed before PONG is a server going away: always retried.
  CHECK(judge(NATS_PROTOCOL_ERROR, user, true).exit_code == 0);

  NatsSettings tls;
  tls.tls = TlsSettings{"/ca.pem", "/client.pem", "/client.key"};
  const auto untrusted = judge(NATS_SSL_ERROR, tls);
  CHECK(untrusted.exit_code == kExitConfig);
  CHECK_THAT(untrusted.message, Catch::Contains("nats.tls.ca /ca.pem"));
  CHECK_THAT(judge(NATS_SSL_ERROR, NatsSettings{}).message, Catch::Contains("the system's trust store"));
  const auto wanted = judge(NATS_SECURE_CONNECTION_WANTED, tls);
  CHECK(wanted.exit_code == kExitConfig);
  CHECK_THAT(wanted.message, Catch::Contains("does not offer TLS"));
  CHECK(judge(NATS_SECURE_CONNECTION_REQUIRED, user).exit_code == kExitConfig);

  const auto first = judge(NATS_PROTOCOL_ERROR, tls);
  CHECK(first.exit_code == 0);
  CHECK(first.tls_closed);
  CHECK(judge(NATS_IO_ERROR, tls).tls_closed);  // "SSL_write error": closed while sending CONNECT
  CHECK(judge(NATS_IO_ERROR, user, true).exit_code == 0);
  const auto second = judge(NATS_PROTOCOL_ERROR, tls, true);
  CHECK(second.exit_code == kExitNoPerm);
  CHECK_THAT(second.message, Catch::Contains("refused jetfan's client certificate, nats.tls.cert /client.pem"));
  NatsSettings no_cert;
  no_cert.servers = {"tls://h:1"};
  CHECK_THAT(judge(NATS_PROTOCOL_ERROR, no_cert, true).message, Catch::Contains("none (nats.tls.cert is not set)"));
  CHECK_FALSE(judge(NATS_NO_SERVER, tls, true).tls_closed);  // only consecutive closes count
}

TEST_CASE("token_file and password_file: the first line is the secret, and a bad file is named but not shown",
          "[unit]") {
  TempDir dir;
  auto read = read_file_secret("nats.token_file", dir.write("token", "  s3cret-token \r\nsecond line\n"));
  REQUIRE(read.value);
  CHECK(*read.value == "s3cret-token");
  CHECK(read_file_secret("nats.password_file", dir.write("pw", "no-newline")).value == "no-newline");

  const std::string empty = dir.write("empty", "\n\n");
  read = read_file_secret("nats.token_file", empty);
  CHECK_FALSE(read.value);
  CHECK(read.error == "nats.token_file " + empty + ": is empty; its first line should hold the secret");
  read = read_file_secret("nats.password_file", dir.path + "/missing");
  CHECK(read.error == "nats.password_file " + dir.path + "/missing: cannot be read: No such file or directory");

  NatsSettings nats;
  nats.token_file = dir.write("exposed", "tok-in-file\n", 0640);
  CHECK_FALSE(check_credential_files(nats));
  CHECK(describe_credentials(nats) == "the token in nats.token_file " + nats.token_file);
  const auto warnings = exposed_secret_file_warnings(nats, dir.path + "/missing.yaml");
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Catch::StartsWith("nats.token_file " + nats.token_file + " has mode 0640") &&
                              Catch::Contains("chmod 600") && !Catch::Contains("tok-in-file"));
  nats = with_user();
  nats.password.clear();
  nats.password_file = empty;
  CHECK(check_credential_files(nats) ==
        "nats.password_file " + empty + ": is empty; its first line should hold the secret");
  CHECK(describe_credentials(nats) == "nats.user \"builder\" with nats.password_file " + empty);
}

TEST_CASE("a secret file path may start with ${CREDENTIALS_DIRECTORY}, as systemd's LoadCredential= sets it",
          "[unit]") {
  TempDir dir;
  dir.write("nats-token", "from-systemd\n");
  ::setenv("CREDENTIALS_DIRECTORY", dir.path.c_str(), 1);
  CHECK(expand_credentials_directory("${CREDENTIALS_DIRECTORY}/nats-token") == dir.path + "/nats-token");
  CHECK(expand_credentials_directory("/etc/jetfan/token") == "/etc/jetfan/token");
  CHECK(read_file_secret("nats.token_file", "${CREDENTIALS_DIRECTORY}/nats-token").value == "from-systemd");
  ::unsetenv("CREDENTIALS_DIRECTORY");
  CHECK_FALSE(expand_credentials_directory("${CREDENTIALS_DIRECTORY}/nats-token"));
  const auto read = read_file_secret("nats.token_file", "${CREDENTIALS_DIRECTORY}/nats-token");
  CHECK_FALSE(read.value);
  CHECK_THAT(read.error, Catch::Contains("$CREDENTIALS_DIRECTORY is not set"));
}
