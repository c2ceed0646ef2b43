#include "polnode/rpc/http_types.h"

#include "polnode/rpc/json.h"

namespace polnode::node {

HttpResponse JsonErrorResponse(int status, std::string_view message) {
  HttpResponse r;
  r.status = status;
  JsonWriter w;
  w.BeginObject().Field("error", message).EndObject();
  r.body = w.str();
  return r;
}

}  // namespace polnode::node
