#include "nats_auth.hpp"

#include <strings.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <utility>

#include "startup_error.hpp"

namespace jetfan {
namespace {

std::string octal_mode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// The part of a URL between "//" and "@", or empty.
std::string_view userinfo(std::string_view url, std::size_t* begin = nullptr) {
  const std::size_t scheme = url.find("://");
  const std::size_t start = scheme == std::string_view::npos ? 0 : scheme + 3;
  const std::size_t end = url.find_first_of("/?#", start);
  const std::size_t at = url.substr(0, end).rfind('@');
  if (at == std::string_view::npos || at < start) return {};
  if (begin) *begin = start;
  return url.substr(start, at - start);
}

// Overwrites a string that held a secret before its memory goes back to the allocator.
void wipe(std::string& secret) {
  explicit_bzero(secret.data(), secret.size());
  secret.clear();
}

std::string_view trimmed(std::string_view text) {
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  const std::size_t last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

// The contents of the blocks of a creds file, in order: the non-empty line after each
// "-----BEGIN ..." line (the user JWT first, then the NKey seed, as nsc writes them). Works on
// views, so that the only copies of the secrets are the ones returned (and wiped by the caller).
std::vector<std::string> block_contents(std::string_view text) {
  std::vector<std::string> blocks;
  bool in_block = false;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    const std::string_view item = trimmed(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (item.rfind("-----BEGIN", 0) == 0) {
      in_block = true;
    } else if (in_block && !item.empty()) {
      blocks.emplace_back(item);
      in_block = false;
    }
  }
  return blocks;
}

// Reads a whole secret file (at most 64 KiB: creds files are about 1 KiB) into one allocation;
// on failure, `error` says why.
std::optional<std::string> read_secret(const std::string& path, std::string& error) {
  constexpr std::streamoff kMaxBytes = 64 * 1024;
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file) {
    error = std::strerror(errno);
    return std::nullopt;
  }
  const std::streamoff size = file.tellg();
  if (size < 0 || size > kMaxBytes) {
    error = size < 0 ? "not a regular file" : "larger than 64 KiB: not a creds or seed file";
    return std::nullopt;
  }
  std::string text(static_cast<std::size_t>(size), '\0');
  file.seekg(0);
  if (!file.read(text.data(), size)) {
    wipe(text);
    error = "read error";
    return std::nullopt;
  }
  return text;
}

// Why `seed` is not a user NKey seed, or nullopt. An NKey seed is base32 (RFC 4648, no padding)
// of 36 bytes: two prefix bytes ('S' in the first 5 bits, the key's type in the next 5), the
// 32-byte ed25519 seed, and a CRC-16/XMODEM of those 34 bytes, little-endian. Checked here rather
// than with cnats's nats_Sign, which says only "invalid checksum" or "invalid seed len".
std::optional<std::string> seed_problem(const std::string& seed) {
  constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  std::vector<unsigned char> raw;
  unsigned bits = 0;
  int count = 0;
  for (const char c : seed) {
    const std::size_t value = kAlphabet.find(c);
    if (value == std::string_view::npos) return "it holds a character that is not base32";
    bits = (bits << 5) | static_cast<unsigned>(value);
    count += 5;
    if (count >= 8) {
      count -= 8;
      raw.push_back(static_cast<unsigned char>(bits >> count));
    }
  }
  const bool well_formed = raw.size() == 36;
  std::uint16_t crc = 0;
  for (std::size_t i = 0; well_formed && i < 34; ++i) {
    crc ^= static_cast<std::uint16_t>(raw[i] << 8);
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1;
  }
  std::optional<std::string> problem;
  if (!well_formed) {
    problem = "it is " + std::to_string(seed.size()) + " characters long; an NKey seed has 58";
  } else if (crc != (raw[34] | raw[35] << 8)) {
    problem = "its checksum does not match: a character is wrong or missing";
  } else if ((raw[0] & 0xF8) != (18 << 3)) {
    problem = "it does not start with 'S': it is not a seed (a public key, perhaps?)";
  } else if ((((raw[0] & 0x07) << 5) | ((raw[1] & 0xF8) >> 3)) != (20 << 3)) {
    problem = "it is the seed of another kind of key; a user's seed starts with \"SU\"";
  }
  explicit_bzero(raw.data(), raw.size());
  bits = 0;
  return problem;
}

}  // namespace

std::string redact_url(std::string_view url) {
  std::size_t begin = 0;
  const std::string_view info = userinfo(url, &begin);
  if (info.empty()) return std::string(url);
  const std::size_t colon = info.find(':');
  const std::string shown = colon == std::string_view::npos ? "***" : std::string(info.substr(0, colon)) + ":***";
  return std::string(url.substr(0, begin)) + shown + std::string(url.substr(begin + info.size()));
}

bool url_has_secret(std::string_view url) { return !userinfo(url).empty(); }

bool wants_tls(const NatsSettings& nats) {
  if (nats.tls) return true;
  for (const auto& server : nats.servers) {
    if (strncasecmp(server.c_str(), "tls://", 6) == 0) return true;
  }
  return false;
}

std::string describe_credentials(const NatsSettings& nats) {
  std::string out;
  if (!nats.creds.empty()) {
    out = "nats.creds " + nats.creds;
  } else if (!nats.nkey_seed.empty()) {
    out = "nats.nkey " + nats.nkey + " with its seed in nats.nkey_seed " + nats.nkey_seed;
  } else if (!nats.token.empty()) {
    out = "nats.token (its value is not shown)";
  } else if (!nats.token_file.empty()) {
    out = "the token in nats.token_file " + nats.token_file;
  } else if (!nats.user.empty()) {
    out = "nats.user \"" + nats.user + "\" with " +
          (nats.password_file.empty() ? std::string("nats.password") : "nats.password_file " + nats.password_file);
  } else {
    for (const auto& server : nats.servers) {
      if (url_has_secret(server)) out = "the credentials in the server URL " + redact_url(server);
    }
    if (out.empty()) out = "no credentials (none of nats.creds, nats.nkey_seed, nats.token, nats.user is set)";
  }
  if (nats.tls && !nats.tls->cert.empty()) out += ", and the client certificate nats.tls.cert " + nats.tls->cert;
  return out;
}

std::vector<SecretFile> secret_files(const NatsSettings& nats, const std::string& config_file) {
  std::vector<SecretFile> files;
  if (!nats.creds.empty()) files.push_back({"nats.creds", nats.creds, "a user JWT and its NKey seed"});
  if (!nats.nkey_seed.empty()) files.push_back({"nats.nkey_seed", nats.nkey_seed, "an NKey seed"});
  if (nats.tls && !nats.tls->key.empty()) files.push_back({"nats.tls.key", nats.tls->key, "a private key"});
  if (!nats.token_file.empty()) {
    files.push_back(
        {"nats.token_file", expand_credentials_directory(nats.token_file).value_or(nats.token_file), "a NATS token"});
  }
  if (!nats.password_file.empty()) {
    files.push_back({"nats.password_file",
                     expand_credentials_directory(nats.password_file).value_or(nats.password_file),
                     "the password of nats.user"});
  }
  bool url_secret = false;
  for (const auto& server : nats.servers) url_secret = url_secret || url_has_secret(server);
  if (!nats.password.empty() || !nats.token.empty() || url_secret) {
    const char* what = !nats.password.empty() ? "nats.password"
                       : !nats.token.empty()  ? "nats.token"
                                              : "a password in nats.servers";
    files.push_back({"the config file", config_file, what});
  }
  return files;
}

std::optional<std::string> exposure_warning(const SecretFile& file, mode_t mode) {
  if ((mode & (S_IRWXG | S_IRWXO)) == 0) return std::nullopt;
  std::string who;
  auto add = [&](bool yes, const char* what) {
    if (yes) who += (who.empty() ? "" : ", ") + std::string(what);
  };
  add(mode & S_IRGRP, "its group can read it");
  add(mode & S_IROTH, "others can read it");
  add(mode & S_IWGRP, "its group can write it");
  add(mode & S_IWOTH, "others can write it");
  if (who.empty()) who = "its group or others have access to it";
  return file.setting + " " + file.path + " has mode " + octal_mode(mode) + ": " + who + ", and it holds " +
         file.holds + ". Let only jetfan's user read it: chmod 600 " + file.path + ". Serving anyway.";
}

std::vector<std::string> exposed_secret_file_warnings(const NatsSettings& nats, const std::string& config_file) {
  std::vector<std::string> warnings;
  for (const auto& file : secret_files(nats, config_file)) {
    struct stat info {};
    if (::stat(file.path.c_str(), &info) != 0) continue;
    if (auto warning = exposure_warning(file, info.st_mode)) warnings.push_back(std::move(*warning));
  }
  return warnings;
}

std::optional<std::string> expand_credentials_directory(const std::string& path) {
  static constexpr std::string_view kVariable = "${CREDENTIALS_DIRECTORY}";
  if (!path.starts_with(kVariable)) return path;
  const char* directory = std::getenv("CREDENTIALS_DIRECTORY");
  if (directory == nullptr || *directory == '\0') return std::nullopt;
  return directory + path.substr(kVariable.size());
}

FileSecret read_file_secret(const std::string& setting, const std::string& path) {
  FileSecret result;
  const auto expanded = expand_credentials_directory(path);
  if (!expanded) {
    result.error =
        setting + " " + path + ": $CREDENTIALS_DIRECTORY is not set (systemd sets it for a unit with LoadCredential=)";
    return result;
  }
  const std::string named = setting + " " + *expanded;
  std::string error;
  auto text = read_secret(*expanded, error);
  if (!text) {
    result.error = named + ": cannot be read: " + error;
    return result;
  }
  const std::string_view first_line = trimmed(std::string_view(*text).substr(0, text->find('\n')));
  if (first_line.empty()) {
    result.error = named + ": is empty; its first line should hold the secret";
  } else {
    result.value = std::string(first_line);
  }
  wipe(*text);
  return result;
}

void wipe_secret(std::string& secret) { wipe(secret); }

std::optional<std::string> check_credential_files(const NatsSettings& nats) {
  std::string error;
  for (const auto& [setting, path] :
       {std::pair<const char*, const std::string&>{"nats.token_file", nats.token_file},
        std::pair<const char*, const std::string&>{"nats.password_file", nats.password_file}}) {
    if (path.empty()) continue;
    FileSecret read = read_file_secret(setting, path);
    if (!read.value) return read.error;
    wipe(*read.value);
  }
  if (!nats.creds.empty()) {
    const std::string named = "nats.creds " + nats.creds;
    auto text = read_secret(nats.creds, error);
    if (!text) return named + ": cannot be read: " + error;
    std::vector<std::string> blocks = block_contents(*text);
    wipe(*text);
    std::optional<std::string> problem;
    if (blocks.empty() || blocks[0].find('.') == std::string::npos) {
      problem = named +
                ": holds no user JWT (a creds file holds the JWT, then the NKey seed, each on the line "
                "after a \"-----BEGIN ...\" line, as nsc writes it)";
    } else if (blocks.size() < 2) {
      problem = named + ": holds no NKey seed after its JWT";
    } else if (auto why = seed_problem(blocks[1])) {
      problem = named + ": its NKey seed is not valid (" + *why + ")";
    }
    for (auto& block : blocks) wipe(block);
    if (problem) return problem;
  }
  if (!nats.nkey_seed.empty()) {
    const std::string named = "nats.nkey_seed " + nats.nkey_seed;
    auto text = read_secret(nats.nkey_seed, error);
    if (!text) return named + ": cannot be read: " + error;
    std::vector<std::string> blocks = block_contents(*text);
    std::string seed(blocks.empty() ? trimmed(*text) : std::string_view(blocks.back()));
    wipe(*text);
    for (auto& block : blocks) wipe(block);
    std::optional<std::string> problem;
    if (seed.empty()) {
      problem = named + ": is empty; it should hold the NKey seed of nats.nkey (a line starting with \"SU\")";
    } else if (auto why = seed_problem(seed)) {
      problem = named + ": does not hold a valid NKey seed (" + *why + ")";
    }
    wipe(seed);
    if (problem) return problem;
  }
  return std::nullopt;
}

ConnectVerdict judge_connect_failure(natsStatus status, std::string_view cnats_error, const NatsSettings& nats,
                                     const std::string& config_file, const std::string& servers,
                                     bool tls_closed_before) {
  ConnectVerdict verdict;
  const std::string why = " (" + std::string(cnats_error) + ")";
  const std::string no_retry = ". Exiting now: retrying cannot fix this.";
  const bool tls = wants_tls(nats);
  const std::string ca = nats.tls && !nats.tls->ca.empty() ? "nats.tls.ca " + nats.tls->ca
                                                           : "the system's trust store (nats.tls.ca is not set)";
  switch (status) {
    case NATS_CONNECTION_AUTH_FAILED:
    case NATS_NOT_PERMITTED:
      verdict.exit_code = kExitNoPerm;
      verdict.message = "nats: " + servers + " refused jetfan's credentials, " + describe_credentials(nats) + why +
                        "; check them in " + config_file + " and what the server expects" + no_retry;
      break;
    case NATS_SSL_ERROR:
      verdict.exit_code = kExitConfig;
      verdict.message = "nats: TLS with " + servers + " failed" + why +
                        ": jetfan checks the server's certificate "
                        "against " +
                        ca + "; check nats.tls in " + config_file + no_retry;
      break;
    case NATS_SECURE_CONNECTION_WANTED:
      verdict.exit_code = kExitConfig;
      verdict.message = "nats: " + servers + " does not offer TLS, and " + config_file + " asks for it (" +
                        (nats.tls ? "nats.tls" : "a tls:// server URL") +
                        "); jetfan never falls back to plain "
                        "text" +
                        no_retry;
      break;
    case NATS_SECURE_CONNECTION_REQUIRED:
      verdict.exit_code = kExitConfig;
      verdict.message = "nats: " + servers + " requires TLS; configure nats.tls in " + config_file + no_retry;
      break;
    case NATS_PROTOCOL_ERROR:  // "Expected 'PONG', got ''": closed while jetfan waited for the answer
    case NATS_IO_ERROR:        // "SSL_write error": closed while jetfan sent CONNECT
      if (!tls) break;
      verdict.tls_closed = true;
      if (!tls_closed_before) {
        verdict.message =
            " (the server closed the TLS connection before answering; if it does so again, jetfan "
            "takes it as a refusal of its client certificate)";
        break;
      }
      verdict.exit_code = kExitNoPerm;
      verdict.message = "nats: " + servers + " closed the TLS connection twice before answering" + why +
                        ": it refused jetfan's client certificate, " +
                        (nats.tls && !nats.tls->cert.empty() ? "nats.tls.cert " + nats.tls->cert
                                                             : std::string("none (nats.tls.cert is not set)")) +
                        "; the server's log says why. Check nats.tls in " + config_file + no_retry;
      break;
    default:
      break;
  }
  return verdict;
}

}  // namespace jetfan
