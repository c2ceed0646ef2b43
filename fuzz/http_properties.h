// The properties every HTTP entry point keeps whatever bytes it is sent, shared by the targets
// that drive a route through node::HandleRawRequest.
#ifndef POLNODE_FUZZ_HTTP_PROPERTIES_H_
#define POLNODE_FUZZ_HTTP_PROPERTIES_H_

#include "fuzz.h"
#include "http_types.h"

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

}  // namespace polnode::fuzz

#endif  // POLNODE_FUZZ_HTTP_PROPERTIES_H_
