#pragma once
// jetfan's NATS credentials at startup, always named by setting and file, never by their secret.
//
//   - describe_credentials, redact_url: how log lines name what jetfan authenticates with;
//   - secret_files, exposure_warning: files that hold a secret, and a warning when others may
//     read them (the config file too, when it holds nats.password or nats.token);
//   - check_credential_files: the creds and nkey_seed files are read and checked before the first
//     connect, so a missing or malformed file is a config error (exit 78) that names the file,
//     not a retry loop: cnats reads them only while connecting and reports a plain error;
//   - judge_connect_failure: what one failed natsConnection_Connect means: retry, or exit with
//     which status and which message.
//
// Pure, except the functions marked "reads". No string returned here ever holds a password, a
// token, an NKey seed, a JWT or a private key. Any thread; no state.

#include <nats/nats.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config.hpp"

namespace jetfan {

// What jetfan presents to the server, e.g. `nats.creds /etc/jetfan/builder.creds` or
// `nats.user "builder" with nats.password`, plus the client certificate if there is one.
std::string describe_credentials(const NatsSettings& nats);

// A server URL fit for a log line: a password or token in it is replaced by "***".
// "nats://builder:s3cret@host:4222" -> "nats://builder:***@host:4222"; "nats://tok@h" -> "nats://***@h".
std::string redact_url(std::string_view url);
bool url_has_secret(std::string_view url);

// Whether jetfan must speak TLS: a nats.tls block, or any tls:// server URL. cnats by itself
// would connect in plain text to a tls:// URL whose server does not offer TLS.
bool wants_tls(const NatsSettings& nats);

struct SecretFile {
  std::string setting;  // "nats.creds", "nats.nkey_seed", "nats.tls.key", or "the config file"
  std::string path;
  std::string holds;  // what secret it holds, e.g. "a user JWT and its NKey seed"
};
// The files whose contents are secret: creds, nkey_seed, tls.key, and `config_file` itself when
// it holds nats.password, nats.token or a server URL with a password.
std::vector<SecretFile> secret_files(const NatsSettings& nats, const std::string& config_file);

// A warning when `mode` lets group or others read or write `file`; nullopt when it does not.
std::optional<std::string> exposure_warning(const SecretFile& file, mode_t mode);

// Reads: stats every secret file and returns one warning per exposed file. A file that cannot
// be stat'ed is skipped here (check_credential_files, or cnats, says what is wrong with it).
std::vector<std::string> exposed_secret_file_warnings(const NatsSettings& nats, const std::string& config_file);

// A leading "${CREDENTIALS_DIRECTORY}" in a *_file path replaced by that variable, which systemd
// sets for a unit with LoadCredential=. nullopt when the path starts with it and it is not set.
std::optional<std::string> expand_credentials_directory(const std::string& path);

// Reads: the secret in nats.token_file or nats.password_file (`setting` names which, for the
// error): the file's first line without its line end and the blanks around it. On failure
// `error` names the setting and the file and says what is wrong (unreadable, empty), never the
// secret. The caller wipes `value` (wipe_secret) once it has handed it on.
struct FileSecret {
  std::optional<std::string> value;
  std::string error;
};
FileSecret read_file_secret(const std::string& setting, const std::string& path);
// Overwrites a string that held a secret before its memory goes back to the allocator.
void wipe_secret(std::string& secret);

// Reads: the creds, nkey_seed, token_file and password_file files. Returns one line naming the
// setting, the file and what is wrong (unreadable, empty, no JWT, no seed, a seed that is not an
// NKey seed), or nullopt when they are usable. The copies of secrets it makes are wiped before they are freed (best
// effort: the C++ library's file buffer is not).
std::optional<std::string> check_credential_files(const NatsSettings& nats);

// What a failed natsConnection_Connect means.
struct ConnectVerdict {
  int exit_code = 0;        // 0: retry after the usual backoff; else exit with it
  std::string message;      // exit_code != 0: the whole log line; else empty, or a note for the retry line
  bool tls_closed = false;  // the server closed a TLS connection before answering CONNECT
};

// `cnats_error`: cnats's text for `status`. `servers`: the redacted server list, for messages.
// `tls_closed_before`: the previous attempt ended with tls_closed.
//
//   77  the server refused the credentials (Authorization Violation, Permissions Violation); or
//       it closed a TLS connection before answering, twice in a row, which is how nats-server
//       refuses a client certificate under TLS 1.3, 2.9.10, 2.10.27 and 2.15.1 alike (the client
//       has finished its side of the handshake by then, so cnats sees only "Expected 'PONG', got
//       ''" or "SSL_write error").
//       Once may be a server going down: that is retried.
//   78  TLS cannot work as configured: jetfan does not trust the server's certificate or the
//       handshake failed (SSL error), or one side wants TLS and the other does not offer it.
//    0  anything else (no server, timeouts, a server going away): retry.
ConnectVerdict judge_connect_failure(natsStatus status, std::string_view cnats_error, const NatsSettings& nats,
                                     const std::string& config_file, const std::string& servers,
                                     bool tls_closed_before);

}  // namespace jetfan
