// HttpServer: HTTP/1.1 on Boost.Beast for the ledger API. One io_context run by a few threads;
// each connection's handlers run on its own strand. Protections, each a test in
// tests/node/http_server_test.cc:
//   - body larger than max_body_bytes: 413, connection closed (checked from Content-Length before
//     the body is read, and while reading chunked bodies);
//   - headers larger than max_header_bytes or any malformed request: 400, connection closed;
//   - a request (headers and body) not complete within read_timeout: connection closed, so a
//     slowloris client holds a connection for at most that long;
//   - the handler throwing (it must not): 500; the server keeps serving;
//   - more than max_connections open connections, or more than max_connections_per_peer from one
//     IP address: the new connection gets 503 and is closed (so one peer cannot take every slot);
//   - a request whose body would push the bodies being read by all connections together past
//     max_buffered_body_bytes: 503, connection closed, before the body is read (a request without
//     a body needs no budget, so /v1/status keeps answering while large bodies are in flight).
// Beast and Asio throw; nothing here lets an exception out: failures become a Status or a
// response.
#ifndef POLNODE_RPC_HTTP_SERVER_H_
#define POLNODE_RPC_HTTP_SERVER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "polnode/base/status.h"
#include "polnode/rpc/http_types.h"

namespace polnode::node {

struct HttpLimits {
  std::size_t max_body_bytes = 1 << 20;
  std::size_t max_header_bytes = 16 * 1024;
  std::chrono::milliseconds read_timeout{10000};
  std::size_t max_connections = 512;
  std::size_t max_connections_per_peer = 64;
  std::size_t max_buffered_body_bytes = std::size_t{64} << 20;
};

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;  // 0: the OS picks a free port (see HttpServer::port)
  int threads = 2;
  HttpLimits limits;
};

/// Called once per response sent (handler responses and the server's own 400/413/500).
using ResponseObserver = std::function<void(int status)>;

class HttpServer {
 public:
  /// Binds, listens and starts serving on options.threads threads. kInvalidArgument for a bad
  /// host, kUnavailable when the address cannot be bound (e.g. the port is in use).
  [[nodiscard]] static Result<std::unique_ptr<HttpServer>> Start(const HttpServerOptions& options, HttpHandler handler,
                                                                 ResponseObserver observer);
  ~HttpServer();  // Stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// The port actually bound.
  std::uint16_t port() const;

  /// Stops accepting, closes connections and joins the threads. Idempotent.
  void Stop();

  struct Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// Parses `raw` as one HTTP/1.1 request under `limits` (no sockets, no timeout) and answers it the
/// way the server would: 400 for malformed bytes, 413 for a body over the limit, 500 if the
/// handler throws, otherwise the handler's response. For fuzzing and tests.
HttpResponse HandleRawRequest(std::string_view raw, const HttpLimits& limits, const HttpHandler& handler);

}  // namespace polnode::node

#endif  // POLNODE_RPC_HTTP_SERVER_H_
