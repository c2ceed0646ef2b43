// A small blocking HTTP/1.1 client (Boost.Beast) for `polnode tx` and the tests: one request per
// connection, a deadline for the whole exchange, errors as values.
#ifndef POLNODE_RPC_HTTP_CLIENT_H_
#define POLNODE_RPC_HTTP_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "polnode/base/status.h"
#include "polnode/rpc/fetch_policy.h"
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

/// GETs `uri`, a URI someone else chose (named on the ledger), under `policy` (fetch_policy.h) and
/// returns the body of its 200 answer. The body may hold at most min(max_bytes, policy.max_bytes())
/// bytes, counted as they arrive; a redirect (301, 302, 303, 307, 308) is followed when its
/// Location (absolute, or an absolute path on the same origin) passes the policy, at most
/// policy.max_redirects() times. `timeout` bounds each exchange (connect, request, answer).
/// Errors: kInvalidArgument for a malformed URI; kPermissionDenied when the policy refuses the
/// scheme, every address the host resolves to, a redirect's target, or one redirect too many;
/// kResourceExhausted for a body over the limit; kUnavailable when the host does not resolve, no
/// allowed address accepts the connection, the exchange fails or times out, or the answer is
/// neither 200 nor a redirect.
[[nodiscard]] Result<std::string> FetchGet(const FetchPolicy& policy, std::string_view uri, std::uint64_t max_bytes,
                                           std::chrono::milliseconds timeout);

/// Receives a body piece by piece as it arrives; an error it returns ends the fetch with that error.
using FetchSink = std::function<Status(std::string_view piece)>;

/// FetchGet without holding the body: the 200 answer's body goes to `sink` as it streams in (in
/// order, every byte once), under the same policy, limits and errors as FetchGet. A sink that has
/// been called may still see the fetch fail afterwards (a body over the limit, a broken
/// connection), so it must not treat what it got as complete until this returns Ok.
[[nodiscard]] Status FetchGetStreaming(const FetchPolicy& policy, std::string_view uri, std::uint64_t max_bytes,
                                       std::chrono::milliseconds timeout, const FetchSink& sink);

}  // namespace polnode::node

#endif  // POLNODE_RPC_HTTP_CLIENT_H_
