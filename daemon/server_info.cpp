#include "server_info.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>

#include <istream>

#include "server_version.hpp"

namespace jetfan {

namespace asio = boost::asio;
using asio::ip::tcp;

std::string read_server_version(std::string_view url, Duration timeout) {
  std::string_view rest = url;
  if (const auto scheme = rest.find("://"); scheme != std::string_view::npos) rest.remove_prefix(scheme + 3);
  if (const auto at = rest.rfind('@'); at != std::string_view::npos) rest.remove_prefix(at + 1);
  if (const auto slash = rest.find('/'); slash != std::string_view::npos) rest = rest.substr(0, slash);
  std::string host, port = "4222";
  if (!rest.empty() && rest.front() == '[') {  // [::1]:4222
    const auto close = rest.find(']');
    if (close == std::string_view::npos) return {};
    host = std::string(rest.substr(1, close - 1));
    if (close + 1 < rest.size() && rest[close + 1] == ':') port = std::string(rest.substr(close + 2));
  } else {
    const auto colon = rest.rfind(':');
    host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) port = std::string(rest.substr(colon + 1));
  }
  if (host.empty()) return {};

  asio::io_context io;
  tcp::socket socket(io);
  tcp::resolver resolver(io);
  asio::streambuf line;
  std::string version;
  resolver.async_resolve(
      host, port, [&](const boost::system::error_code& error, const tcp::resolver::results_type& found) {
        if (error) return;
        asio::async_connect(socket, found, [&](const boost::system::error_code& connected, const tcp::endpoint&) {
          if (connected) return;
          asio::async_read_until(socket, line, "\r\n", [&](const boost::system::error_code& read, std::size_t) {
            if (read) return;
            std::istream in(&line);
            std::string first;
            std::getline(in, first);
            if (const auto parsed = jetstream::version_in_info(first)) version = parsed->text;
          });
        });
      });
  io.run_for(timeout);
  return version;
}

}  // namespace jetfan
