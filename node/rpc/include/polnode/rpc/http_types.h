// HTTP request and response as the API handlers see them: plain values, no sockets and no Beast
// types, so routing can be tested and fuzzed without a network.
#ifndef POLNODE_RPC_HTTP_TYPES_H_
#define POLNODE_RPC_HTTP_TYPES_H_

#include <functional>
#include <string>
#include <string_view>

namespace polnode::node {

struct HttpRequest {
  std::string method;        // "GET", "POST", ... as sent
  std::string target;        // path and query string, e.g. "/v1/tasks?start=0&limit=10"
  std::string content_type;  // the Content-Type header, empty when absent
  std::string accept;        // the Accept header, empty when absent
  std::string body;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::string allow;  // the Allow header, set on 405 responses
};

/// Answers one request. Must not throw; runs on the server's I/O threads.
using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

/// A response `status` with body {"error": message} (JSON-escaped).
HttpResponse JsonErrorResponse(int status, std::string_view message);

}  // namespace polnode::node

#endif  // POLNODE_RPC_HTTP_TYPES_H_
