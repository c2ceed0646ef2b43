// A small blocking HTTP/1.1 client (Boost.Beast) for `polnode tx` and the tests: one request per
// connection, a deadline for the whole exchange, errors as values.
#ifndef POLNODE_RPC_HTTP_CLIENT_H_
#define POLNODE_RPC_HTTP_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "polnode/base/status.h"
#include "polnode/rpc/http_types.h"

namespace polnode::node {

/// Where a ledger's API is: from "http://HOST:PORT" or "HOST:PORT" (a trailing "/" is allowed).
struct HttpEndpoint {
  std::string host;
  std::uint16_t port = 0;
};

/// Parses the forms above; kInvalidArgument otherwise (https is not supported).
[[nodiscard]] Result<HttpEndpoint> ParseHttpUrl(std::string_view url);

/// Sends `method target` with `body` (Content-Type `content_type` when the body is non-empty)
/// and returns the response, whatever its status. kUnavailable when the server cannot be reached
/// or the exchange fails or takes longer than `timeout`; kResourceExhausted for a response body
/// over 64 MiB.
[[nodiscard]] Result<HttpResponse> HttpCall(const HttpEndpoint& endpoint, std::string_view method, std::string_view target,
                                            std::string_view body = {}, std::string_view content_type = {},
                                            std::chrono::milliseconds timeout = std::chrono::seconds(10),
                                            std::string_view accept = {});

}  // namespace polnode::node

#endif  // POLNODE_RPC_HTTP_CLIENT_H_
