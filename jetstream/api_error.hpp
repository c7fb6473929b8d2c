#pragma once
// ApiError: the error member of a JetStream API answer, and what jetfan makes of an answer it
// cannot read. JetStream writes an error as
//   {"type": "...", "error": {"code": 404, "err_code": 10037, "description": "no message found"}}
// where `code` is HTTP-like and `err_code` names the error exactly (the server's JSErrCode). Pure.
//
// Every parser of this folder returns an ApiError when the answer is not what was asked for: the
// server's own (code != 0), or one made here for an answer that is not JSON, or lacks a member, or
// has one of another type (code 0, the description says what and quotes the answer).

#include <optional>
#include <string>
#include <string_view>

namespace jetfan::jetstream {

// err_code values jetfan tells apart (the server's JSErrCode).
inline constexpr int kConsumerNotFound = 10014;  // JSConsumerNotFoundErr
inline constexpr int kNoMessageFound = 10037;    // JSNoMessageFoundErr: MSG.GET found nothing
inline constexpr int kStreamNotFound = 10059;    // JSStreamNotFoundErr

struct ApiError {
  int code = 0;      // the server's HTTP-like code (-1: it gave none); 0: not the server's, the answer was unreadable
  int err_code = 0;  // the server's exact error; 0 when it sent none
  std::string description;

  bool from_server() const { return code != 0; }
  // MSG.GET found no message at or after the sequence asked for (err_code 10037). Not a missing
  // stream, which is also a 404 (err_code 10059).
  bool is_not_found() const { return err_code == kNoMessageFound; }
  // "<description> (<code>)" for the server's, the description alone for one made here.
  std::string describe() const;
};

// The error member of `json_text`, if it has one (an error member that is not an object is read
// as an error without a description). nullopt also when `json_text` is not JSON: that is for the
// parser of the answer to say.
std::optional<ApiError> parse_api_error(std::string_view json_text);

// An error of an answer that cannot be read: `what`, then the first 200 bytes of the answer.
ApiError unreadable(std::string_view what, std::string_view json_text);

}  // namespace jetfan::jetstream
