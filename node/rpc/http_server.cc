// The one translation unit of the server that includes Boost.Beast (it is heavy to compile).
#include "polnode/rpc/http_server.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <array>
#include <atomic>
#include <exception>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace polnode::node {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

using Parser = http::request_parser<http::string_body>;

HttpRequest ToRequest(const http::request<http::string_body>& req) {
  HttpRequest r;
  r.method = std::string(req.method_string());
  r.target = std::string(req.target());
  if (auto it = req.find(http::field::content_type); it != req.end()) r.content_type = std::string(it->value());
  if (auto it = req.find(http::field::accept); it != req.end()) r.accept = std::string(it->value());
  r.body = req.body();
  return r;
}

// Runs the handler; a throwing handler (a bug) becomes a 500 instead of taking the server down.
HttpResponse CallHandler(const HttpHandler& handler, const HttpRequest& request) {
  try {
    return handler(request);
  } catch (const std::exception& e) {
    return JsonErrorResponse(500, std::string("internal error: ") + e.what());
  } catch (...) {
    return JsonErrorResponse(500, "internal error");
  }
}

// The response for a request that failed to parse; nullopt when the connection just went away.
std::optional<HttpResponse> ParseFailureResponse(const beast::error_code& ec, const HttpLimits& limits) {
  if (ec == http::error::body_limit) {
    return JsonErrorResponse(413, "request body exceeds " + std::to_string(limits.max_body_bytes) + " bytes");
  }
  if (ec == http::error::header_limit) {
    return JsonErrorResponse(400, "request headers exceed " + std::to_string(limits.max_header_bytes) + " bytes");
  }
  if (ec == http::error::end_of_stream || ec == http::error::partial_message || ec == beast::error::timeout ||
      ec == asio::error::eof || ec == asio::error::connection_reset || ec == asio::error::operation_aborted ||
      ec == asio::error::broken_pipe) {
    return std::nullopt;
  }
  return JsonErrorResponse(400, "malformed HTTP request: " + ec.message());
}

void ConfigureParser(Parser& parser, const HttpLimits& limits) {
  parser.body_limit(static_cast<std::uint64_t>(limits.max_body_bytes));
  parser.header_limit(static_cast<std::uint32_t>(std::min<std::size_t>(limits.max_header_bytes, UINT32_MAX)));
}

// What every connection shares: the handler and the limits, and the counts those limits are
// about (open connections, per peer address, body bytes being read).
struct Shared {
  HttpHandler handler;
  ResponseObserver observer;
  HttpLimits limits;
  std::mutex mu;
  std::size_t connections = 0;                           // guarded by mu
  std::map<asio::ip::address, std::size_t> per_peer;     // guarded by mu
  std::size_t buffered = 0;                              // body bytes reserved; guarded by mu

  // Admits a new connection from `peer`, or says why not.
  std::optional<std::string> Admit(const asio::ip::address& peer) {
    std::lock_guard<std::mutex> lock(mu);
    if (connections >= limits.max_connections) return "the server has " + std::to_string(connections) + " connections";
    std::size_t& mine = per_peer[peer];
    if (mine >= limits.max_connections_per_peer) {
      return "this address has " + std::to_string(mine) + " connections open (limit " +
             std::to_string(limits.max_connections_per_peer) + ")";
    }
    ++connections;
    ++mine;
    return std::nullopt;
  }
  void Leave(const asio::ip::address& peer) {
    std::lock_guard<std::mutex> lock(mu);
    --connections;
    if (auto it = per_peer.find(peer); it != per_peer.end() && --it->second == 0) per_peer.erase(it);
  }
  bool Reserve(std::size_t bytes) {
    std::lock_guard<std::mutex> lock(mu);
    if (bytes > limits.max_buffered_body_bytes - std::min(buffered, limits.max_buffered_body_bytes)) return false;
    buffered += bytes;
    return true;
  }
  void Release(std::size_t bytes) {
    std::lock_guard<std::mutex> lock(mu);
    buffered -= bytes;
  }
};

// A one-shot 503 for a connection refused at accept; written without waiting (a peer that does
// not read it just loses it) and closed.
void RefuseConnection(tcp::socket& socket, const std::string& why) {
  const std::string body = R"({"error":")" + why + R"(; retry later"})";
  const std::string response = "HTTP/1.1 503 Service Unavailable\r\nServer: polnode\r\nContent-Type: application/json\r\n"
                               "Connection: close\r\nContent-Length: " +
                               std::to_string(body.size()) + "\r\n\r\n" + body;
  beast::error_code ignored;
  socket.non_blocking(true, ignored);
  socket.write_some(asio::buffer(response), ignored);
  socket.shutdown(tcp::socket::shutdown_both, ignored);
  socket.close(ignored);
}

class Session : public std::enable_shared_from_this<Session> {
 public:
  // Precondition: shared.Admit(peer) admitted the connection; the session leaves on destruction.
  Session(tcp::socket&& socket, asio::ip::address peer, Shared& shared)
      : stream_(std::move(socket)), peer_(std::move(peer)), shared_(shared) {}
  ~Session() {
    ReleaseBody();
    shared_.Leave(peer_);
  }

  void Run() { asio::dispatch(stream_.get_executor(), beast::bind_front_handler(&Session::DoRead, shared_from_this())); }

 private:
  void DoRead() {
    parser_.emplace();
    ConfigureParser(*parser_, shared_.limits);
    // One deadline for the whole request, headers and body: a client trickling bytes (slowloris)
    // loses the connection when it passes, however steadily it sends.
    stream_.expires_after(shared_.limits.read_timeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            beast::bind_front_handler(&Session::OnHeader, shared_from_this()));
  }

  // The headers are in: the body (if any) is read only once the shared body budget holds it.
  void OnHeader(beast::error_code ec, std::size_t) {
    if (ec) return OnRead(ec, 0);
    const auto length = parser_->content_length();  // boost::optional
    const std::uint64_t declared = length ? *length : 0;
    const bool chunked = parser_->chunked();
    const std::size_t need = chunked ? shared_.limits.max_body_bytes
                                     : static_cast<std::size_t>(std::min<std::uint64_t>(declared,
                                                                                        shared_.limits.max_body_bytes));
    if (need > 0) {
      if (!shared_.Reserve(need)) {
        return Send(JsonErrorResponse(503, "the server is reading too many request bodies; retry later"),
                    /*close=*/true, 11);
      }
      reserved_ = need;
    }
    http::async_read(stream_, buffer_, *parser_, beast::bind_front_handler(&Session::OnRead, shared_from_this()));
  }

  void ReleaseBody() {
    if (reserved_ == 0) return;
    shared_.Release(reserved_);
    reserved_ = 0;
  }

  void OnRead(beast::error_code ec, std::size_t) {
    if (ec) {
      ReleaseBody();
      std::optional<HttpResponse> failure = ParseFailureResponse(ec, shared_.limits);
      if (!failure) return Close();
      return Send(std::move(*failure), /*close=*/true, 11);
    }
    http::request<http::string_body> request = parser_->release();
    ReleaseBody();
    HttpResponse response = CallHandler(shared_.handler, ToRequest(request));
    Send(std::move(response), !request.keep_alive(), request.version());
  }

  void Send(HttpResponse r, bool close, unsigned version) {
    auto res = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(r.status), version);
    res->set(http::field::server, "polnode");
    res->set(http::field::content_type, r.content_type);
    if (!r.allow.empty()) res->set(http::field::allow, r.allow);
    res->keep_alive(!close);
    res->body() = std::move(r.body);
    res->prepare_payload();
    if (shared_.observer) shared_.observer(r.status);
    stream_.expires_after(shared_.limits.read_timeout);
    http::async_write(stream_, *res, [self = shared_from_this(), res, close](beast::error_code ec, std::size_t) {
      if (ec) return self->Close();
      if (close) return self->Linger();
      self->DoRead();
    });
  }

  // After an error response the client may still be sending (a body we refused). Closing a
  // socket with unread input sends a reset that can destroy our response before the client reads
  // it, so: stop sending, read and discard for at most a second, then close.
  void Linger() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(std::chrono::seconds(1));
    DrainSome();
  }

  void DrainSome() {
    stream_.async_read_some(asio::buffer(drain_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) return self->Close();
      self->DrainSome();
    });
  }

  void Close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
  }

  beast::tcp_stream stream_;
  asio::ip::address peer_;
  beast::flat_buffer buffer_;
  std::optional<Parser> parser_;
  std::array<char, 4096> drain_{};
  Shared& shared_;
  std::size_t reserved_ = 0;  // body budget held by the request being read
};

}  // namespace

struct HttpServer::Impl {
  Shared shared;  // first: outlives the io_context's pending handlers, which hold sessions
  asio::io_context ioc;
  tcp::acceptor acceptor{ioc};
  asio::steady_timer backoff{ioc};
  std::vector<std::thread> threads;
  std::atomic<bool> stopped{false};
  std::uint16_t port = 0;

  void DoAccept() {
    acceptor.async_accept(asio::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted || stopped.load()) return;
      if (ec) {
        // Out of file descriptors and similar: wait a little instead of spinning on accept.
        backoff.expires_after(std::chrono::milliseconds(50));
        backoff.async_wait([this](beast::error_code) {
          if (!stopped.load()) DoAccept();
        });
        return;
      }
      beast::error_code peer_error;
      const tcp::endpoint remote = socket.remote_endpoint(peer_error);
      if (peer_error) {
        DoAccept();  // gone already
        return;
      }
      if (std::optional<std::string> refused = shared.Admit(remote.address())) {
        if (shared.observer) shared.observer(503);
        RefuseConnection(socket, *refused);
      } else {
        std::make_shared<Session>(std::move(socket), remote.address(), shared)->Run();
      }
      DoAccept();
    });
  }
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { Stop(); }

std::uint16_t HttpServer::port() const { return impl_->port; }

Result<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpServerOptions& options, HttpHandler handler,
                                                      ResponseObserver observer) {
  auto impl = std::make_unique<Impl>();
  impl->shared.handler = std::move(handler);
  impl->shared.observer = std::move(observer);
  impl->shared.limits = options.limits;
  beast::error_code ec;
  asio::ip::address address = asio::ip::make_address(options.host == "localhost" ? "127.0.0.1" : options.host, ec);
  if (ec) return Status::InvalidArgument("listen address '" + options.host + "' is not an IP address: " + ec.message());
  tcp::endpoint endpoint(address, options.port);
  const std::string where = options.host + ":" + std::to_string(options.port);
  if (impl->acceptor.open(endpoint.protocol(), ec); ec) return Status::Unavailable("open socket for " + where + ": " + ec.message());
  if (impl->acceptor.set_option(asio::socket_base::reuse_address(true), ec); ec) {
    return Status::Unavailable("set SO_REUSEADDR on " + where + ": " + ec.message());
  }
  if (impl->acceptor.bind(endpoint, ec); ec) return Status::Unavailable("bind " + where + ": " + ec.message());
  if (impl->acceptor.listen(asio::socket_base::max_listen_connections, ec); ec) {
    return Status::Unavailable("listen on " + where + ": " + ec.message());
  }
  impl->port = impl->acceptor.local_endpoint(ec).port();
  if (ec) return Status::Unavailable("read bound port of " + where + ": " + ec.message());
  impl->DoAccept();
  Impl* raw = impl.get();
  for (int i = 0; i < std::max(1, options.threads); ++i) {
    raw->threads.emplace_back([raw] {
      // Handlers catch everything they can cause; this only guards against an exception from
      // Asio itself so one bad event cannot end a serving thread.
      while (!raw->stopped.load()) {
        try {
          raw->ioc.run();
          return;
        } catch (const std::exception& e) {
          std::cerr << "polnode: http server: unexpected exception: " << e.what() << "\n";
        }
      }
    });
  }
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

void HttpServer::Stop() {
  if (!impl_ || impl_->stopped.exchange(true)) return;
  impl_->ioc.stop();
  for (std::thread& t : impl_->threads) t.join();
  impl_->threads.clear();
  // No thread runs the io_context any more, so the acceptor can be closed from here. Open
  // connections close when the io_context, holding their sessions, is destroyed.
  beast::error_code ignored;
  impl_->acceptor.close(ignored);
}

HttpResponse HandleRawRequest(std::string_view raw, const HttpLimits& limits, const HttpHandler& handler) {
  Parser parser;
  ConfigureParser(parser, limits);
  parser.eager(true);
  beast::error_code ec;
  asio::const_buffer input(raw.data(), raw.size());
  while (!parser.is_done() && input.size() > 0) {
    std::size_t used = parser.put(input, ec);
    input += used;
    if (ec == http::error::need_more) {
      ec = {};
      if (used == 0) break;
      continue;
    }
    if (ec) break;
  }
  if (!ec && !parser.is_done()) return JsonErrorResponse(400, "incomplete HTTP request");
  if (ec) {
    std::optional<HttpResponse> failure = ParseFailureResponse(ec, limits);
    return failure ? *failure : JsonErrorResponse(400, "malformed HTTP request: " + ec.message());
  }
  return CallHandler(handler, ToRequest(parser.get()));
}

}  // namespace polnode::node
