// Shared by the targets that drive an HTTP route through node::HandleRawRequest: raw requests for
// seeds, a role daemon's routing, and the properties every entry point keeps whatever it is sent.
#ifndef POLNODE_FUZZ_HTTP_PROPERTIES_H_
#define POLNODE_FUZZ_HTTP_PROPERTIES_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz.h"
#include "polnode/rpc/http_server.h"
#include "polnode/rpc/http_types.h"

namespace polnode::fuzz {

/// A status in 200..599, never a 5xx (bad input is the client's fault; these fixtures have no
/// storage trouble), every error a JSON {"error": ...} body, and every 405 naming what is allowed.
inline void CheckAnswer(const node::HttpResponse& r) {
  POLNODE_FUZZ_CHECK(r.status >= 200 && r.status <= 599, "response status out of range");
  POLNODE_FUZZ_CHECK(r.status < 500, "bad input produced a server error");
  if (r.status >= 400) {
    POLNODE_FUZZ_CHECK(r.body.rfind("{\"error\":", 0) == 0, "error response without a JSON reason");
  }
  if (r.status == 405) POLNODE_FUZZ_CHECK(!r.allow.empty(), "405 without an Allow header");
}

/// The bytes of `s`, as a seed.
inline std::vector<std::uint8_t> Bytes(std::string_view s) { return {s.begin(), s.end()}; }

/// A bodiless request for `target` with a Host header.
inline std::vector<std::uint8_t> Get(const std::string& target, std::string_view method = "GET") {
  return Bytes(std::string(method) + " " + target + " HTTP/1.1\r\nHost: x\r\n\r\n");
}

/// `raw` answered as a role daemon answers it: by `route`, and a path no route claims by a JSON
/// 404 (role_runtime.cc). `target` receives the parsed request target, if the request parsed.
inline node::HttpResponse AnswerAsRole(
    std::string_view raw, const node::HttpLimits& limits,
    const std::function<std::optional<node::HttpResponse>(const node::HttpRequest&)>& route, std::string& target) {
  return node::HandleRawRequest(raw, limits, [&](const node::HttpRequest& request) {
    target = request.target;
    std::optional<node::HttpResponse> answer = route(request);
    return answer ? *std::move(answer) : node::JsonErrorResponse(404, "no such endpoint: " + request.target);
  });
}

}  // namespace polnode::fuzz

#endif  // POLNODE_FUZZ_HTTP_PROPERTIES_H_
