// The one translation unit of the client that includes Boost.Beast.
#include "polnode/rpc/http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <charconv>
#include <vector>

namespace polnode::node {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

constexpr std::uint64_t kMaxResponseBody = std::uint64_t{64} << 20;

// Beast 1.74 speaks boost::string_view, not std::string_view.
beast::string_view Bv(std::string_view s) { return beast::string_view(s.data(), s.size()); }

IpAddress ToIp(const asio::ip::address& address) {
  IpAddress ip;
  if (address.is_v4()) {
    const auto bytes = address.to_v4().to_bytes();
    std::copy(bytes.begin(), bytes.end(), ip.bytes.begin());
  } else {
    ip.v6 = true;
    const auto bytes = address.to_v6().to_bytes();
    std::copy(bytes.begin(), bytes.end(), ip.bytes.begin());
  }
  return ip;
}

bool IsRedirect(unsigned status) { return status == 301 || status == 302 || status == 303 || status == 307 || status == 308; }

// The URI a redirect from `from` to `location` names: an absolute URI, or an absolute path on the
// same origin. Other relative forms are refused rather than resolved: no server of polnode sends
// them, and every form accepted is one more spelling the policy must see through.
Result<std::string> RedirectTarget(const FetchUri& from, std::string_view location) {
  if (location.starts_with("/") && !location.starts_with("//")) return from.Origin() + std::string(location);
  if (location.find("://") != std::string_view::npos) return std::string(location);
  return Status::PermissionDenied("a redirect to '" + std::string(location.substr(0, 200)) +
                                  "', which is neither an absolute URI nor an absolute path");
}

struct Answer {
  unsigned status = 0;
  std::string location;
};

// One GET of `uri` (`text` as given, for messages) over a connection to one of `endpoints`, the
// body limited to `limit` bytes as it is read. A 200 answer's body goes to `sink` piece by piece
// as it arrives (a sink error ends the exchange with that error); any other answer's body is
// read within the limit and dropped.
Result<Answer> GetOnce(const FetchUri& uri, const std::string& text, const std::vector<tcp::endpoint>& endpoints,
                       std::uint64_t limit, std::chrono::milliseconds timeout, const FetchSink& sink) {
  auto fail = [&](const char* step, const beast::error_code& ec) {
    return Status::Unavailable(std::string(step) + " " + text + ": " + ec.message());
  };
  asio::io_context ioc;
  beast::error_code ec;
  beast::tcp_stream stream(ioc);
  stream.expires_after(timeout);
  stream.async_connect(endpoints, [&](beast::error_code e, const tcp::endpoint&) { ec = e; });
  ioc.run();
  if (ec) return fail("connect for", ec);

  http::request<http::empty_body> req{http::verb::get, Bv(uri.target), 11};
  const bool v6 = uri.host.find(':') != std::string::npos;
  req.set(http::field::host, (v6 ? "[" + uri.host + "]" : uri.host) + ":" + std::to_string(uri.port));
  req.set(http::field::user_agent, "polnode");
  req.keep_alive(false);
  ioc.restart();
  http::async_write(stream, req, [&](beast::error_code e, std::size_t) { ec = e; });
  ioc.run();
  if (ec) return fail("send the request for", ec);

  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  // Beast counts the bytes of a chunked or close-delimited body as they are parsed and stops at
  // the limit, so an endless or oversized answer never sits in memory.
  parser.body_limit(limit);
  const Status too_large = Status::ResourceExhausted("GET " + text + ": the body is larger than the " +
                                                     std::to_string(limit) + "-byte limit of this fetch");
  ioc.restart();
  http::async_read_header(stream, buffer, parser, [&](beast::error_code e, std::size_t) { ec = e; });
  ioc.run();
  if (ec == http::error::body_limit) return too_large;
  if (ec) return fail("read the answer of", ec);
  // A Content-Length over the limit is refused here, before any body byte is read. Beast 1.74
  // checks it too, but loses that error when the body arrived in the same read as the header.
  if (const auto length = parser.content_length(); length && *length > limit) return too_large;
  Answer answer;
  answer.status = parser.get().result_int();
  if (auto it = parser.get().find(http::field::location); it != parser.get().end()) answer.location = std::string(it->value());
  // The body is read a buffer at a time and handed on, so a large file never sits in memory whole:
  // the string body's reader appends to what it holds, and each piece is taken out after a read.
  while (!parser.is_done()) {
    ioc.restart();
    http::async_read_some(stream, buffer, parser, [&](beast::error_code e, std::size_t) { ec = e; });
    ioc.run();
    if (ec == http::error::body_limit) return too_large;
    if (ec == http::error::need_buffer) ec = {};
    if (ec) return fail("read the answer of", ec);
    std::string& piece = parser.get().body();
    if (answer.status == 200 && !piece.empty()) POLNODE_RETURN_IF_ERROR(sink(piece));
    piece.clear();
  }
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  return answer;
}

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
  const Status too_large = Status::ResourceExhausted("response from http://" + where + " is too large");
  ioc.restart();
  http::async_read_header(stream, buffer, parser, [&](beast::error_code e, std::size_t) { ec = e; });
  ioc.run();
  if (ec == http::error::body_limit) return too_large;
  if (ec) return fail("read response from", ec);
  // Beast 1.74 loses its own Content-Length check when the body arrives with the header.
  if (const auto length = parser.content_length(); length && *length > kMaxResponseBody) return too_large;
  ioc.restart();
  http::async_read(stream, buffer, parser, [&](beast::error_code e, std::size_t) { ec = e; });
  ioc.run();
  if (ec == http::error::body_limit) return too_large;
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

Result<std::string> FetchGet(const FetchPolicy& policy, std::string_view uri, std::uint64_t max_bytes,
                             std::chrono::milliseconds timeout) {
  std::string body;
  POLNODE_RETURN_IF_ERROR(FetchGetStreaming(policy, uri, max_bytes, timeout, [&](std::string_view piece) {
    body.append(piece);
    return Status::Ok();
  }));
  return body;
}

Status FetchGetStreaming(const FetchPolicy& policy, std::string_view uri, std::uint64_t max_bytes,
                         std::chrono::milliseconds timeout, const FetchSink& sink) {
  const std::uint64_t limit = std::min(max_bytes, policy.max_bytes());
  std::string current(uri);
  for (int redirects = 0;; ++redirects) {
    // A refusal after a redirect names the URI the ledger gave too, so the log shows whose it was.
    const auto hop = [&](const Status& s) {
      return redirects == 0 ? s : s.WithContext("redirected from " + std::string(uri));
    };
    Result<FetchUri> parsed_or = ParseFetchUri(current);
    if (!parsed_or.ok()) return hop(parsed_or.status());
    const FetchUri parsed = std::move(parsed_or).value();
    if (Status scheme = policy.CheckScheme(parsed); !scheme.ok()) return hop(scheme.WithContext("GET " + current));
    asio::io_context ioc;
    beast::error_code ec;
    tcp::resolver resolver(ioc);
    auto results = resolver.resolve(parsed.host, std::to_string(parsed.port), ec);
    if (ec) return Status::Unavailable("resolve the host of " + current + ": " + ec.message());
    // Only addresses the policy allows are ever connected to: a name that resolves to a public
    // address and a private one reaches the public one alone.
    std::vector<tcp::endpoint> allowed;
    std::string refused;
    for (const auto& entry : results) {
      const IpAddress ip = ToIp(entry.endpoint().address());
      if (policy.AllowsAddress(parsed, ip)) {
        allowed.push_back(entry.endpoint());
      } else {
        refused += (refused.empty() ? "" : ", ") + ip.Describe();
      }
    }
    if (allowed.empty()) {
      return hop(Status::PermissionDenied("GET " + current + ": the fetch policy refuses " + parsed.host + ":" +
                                          std::to_string(parsed.port) + ", at " + refused + " (fetch.allow = \"" +
                                          policy.allow_text() + "\")"));
    }
    POLNODE_ASSIGN_OR_RETURN(Answer answer, GetOnce(parsed, current, allowed, limit, timeout, sink));
    if (answer.status == 200) return Status::Ok();
    if (!IsRedirect(answer.status)) {
      return Status::Unavailable("GET " + current + " answered " + std::to_string(answer.status));
    }
    if (redirects == policy.max_redirects()) {
      return Status::PermissionDenied("GET " + std::string(uri) + ": more than " + std::to_string(policy.max_redirects()) +
                                      " redirects (fetch.max_redirects)");
    }
    Result<std::string> next = RedirectTarget(parsed, answer.location);
    if (!next.ok()) return hop(next.status().WithContext("GET " + current));
    current = std::move(*next);
  }
}

}  // namespace polnode::node
