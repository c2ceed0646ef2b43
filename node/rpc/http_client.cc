// The one translation unit of the client that includes Boost.Beast.
#include "polnode/rpc/http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <charconv>

namespace polnode::node {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

constexpr std::uint64_t kMaxResponseBody = std::uint64_t{64} << 20;

// Beast 1.74 speaks boost::string_view, not std::string_view.
beast::string_view Bv(std::string_view s) { return beast::string_view(s.data(), s.size()); }

}  // namespace

Result<HttpEndpoint> ParseHttpUrl(std::string_view url) {
  if (url.starts_with("https://")) return Status::InvalidArgument("https is not supported: '" + std::string(url) + "'");
  if (url.starts_with("http://")) url.remove_prefix(7);
  if (!url.empty() && url.back() == '/') url.remove_suffix(1);
  std::size_t colon = url.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return Status::InvalidArgument("'" + std::string(url) + "' is not HOST:PORT");
  HttpEndpoint ep;
  ep.host = std::string(url.substr(0, colon));
  std::string_view port = url.substr(colon + 1);
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), ep.port);
  if (ec != std::errc() || end != port.data() + port.size() || ep.port == 0) {
    return Status::InvalidArgument("bad port in '" + std::string(url) + "'");
  }
  return ep;
}

Result<HttpResponse> HttpCall(const HttpEndpoint& endpoint, std::string_view method, std::string_view target,
                              std::string_view body, std::string_view content_type, std::chrono::milliseconds timeout,
                              std::string_view accept) {
  const std::string where = endpoint.host + ":" + std::to_string(endpoint.port);
  auto fail = [&](const char* step, const beast::error_code& ec) {
    return Status::Unavailable(std::string(step) + " http://" + where + std::string(target) + ": " + ec.message());
  };
  asio::io_context ioc;
  beast::error_code ec;
  tcp::resolver resolver(ioc);
  auto results = resolver.resolve(endpoint.host, std::to_string(endpoint.port), ec);
  if (ec) return fail("resolve", ec);
  beast::tcp_stream stream(ioc);
  stream.expires_after(timeout);
  // Asynchronous operations run to completion one by one on this thread; they are used instead of
  // the blocking calls because only they honour the stream's deadline.
  stream.async_connect(results, [&](beast::error_code e, const tcp::endpoint&) { ec = e; });
  ioc.run();
  if (ec) return fail("connect to", ec);

  http::request<http::string_body> req{http::string_to_verb(Bv(method)), Bv(target), 11};
  if (req.method() == http::verb::unknown) req.method_string(Bv(method));
  req.set(http::field::host, where);
  req.set(http::field::user_agent, "polnode");
  if (!accept.empty()) req.set(http::field::accept, Bv(accept));
  if (!body.empty() || !content_type.empty()) req.set(http::field::content_type, Bv(content_type));
  req.body() = std::string(body);
  req.keep_alive(false);
  req.prepare_payload();
  ioc.restart();
  http::async_write(stream, req, [&](beast::error_code e, std::size_t) { ec = e; });
  ioc.run();
  if (ec) return fail("send request to", ec);

  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxResponseBody);
  ioc.restart();
  http::async_read(stream, buffer, parser, [&](beast::error_code e, std::size_t) { ec = e; });
  ioc.run();
  if (ec == http::error::body_limit) return Status::ResourceExhausted("response from http://" + where + " is too large");
  if (ec) return fail("read response from", ec);
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);

  const auto& res = parser.get();
  HttpResponse out;
  out.status = static_cast<int>(res.result_int());
  if (auto it = res.find(http::field::content_type); it != res.end()) out.content_type = std::string(it->value());
  else out.content_type.clear();
  if (auto it = res.find(http::field::allow); it != res.end()) out.allow = std::string(it->value());
  out.body = res.body();
  return out;
}

}  // namespace polnode::node
