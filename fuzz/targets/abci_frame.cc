// Target abci_frame: the ABCI socket's reader (abci_frame.h) on arbitrary bytes, as one connection's
// stream: frames are cut off the front one by one, each body parsed as a Request, until the stream
// ends mid-frame or its length prefix is refused.
// Properties: never crashes; a frame never claims more bytes than the stream holds or than the cap
// (a small one here, so over-limit prefixes are reached); errors have only their documented codes;
// a parsed Request re-frames and decodes to the same message.
#include <string>
#include <string_view>
#include <vector>

#include "fuzz.h"
#include "polnode/ledger/abci_frame.h"

namespace polnode::fuzz {
namespace {

constexpr std::size_t kCap = 4096;

void Run(FuzzInput input) {
  std::string_view stream(reinterpret_cast<const char*>(input.data()), input.size());
  while (true) {
    Result<std::optional<node::AbciFrame>> frame = node::DecodeAbciFrame(stream, kCap);
    if (!frame.ok()) {
      const StatusCode code = frame.status().code();
      POLNODE_FUZZ_CHECK(code == StatusCode::kCorruption || code == StatusCode::kResourceExhausted,
                         "DecodeAbciFrame failed with an undocumented status code");
      return;
    }
    if (!frame->has_value()) return;  // the stream ends inside a frame: the reader waits for more
    const node::AbciFrame& f = **frame;
    POLNODE_FUZZ_CHECK(f.consumed > f.body.size() && f.consumed <= stream.size() && f.body.size() <= kCap,
                       "a frame claims bytes outside the stream or over the cap");
    Result<abci::Request> request = node::ParseAbciRequest(f.body);
    if (request.ok()) {
      std::string reframed;
      POLNODE_FUZZ_CHECK(node::AppendAbciFrame(*request, reframed).ok(), "a parsed Request does not re-frame");
      Result<std::optional<node::AbciFrame>> again = node::DecodeAbciFrame(reframed);
      POLNODE_FUZZ_CHECK(again.ok() && again->has_value() && (*again)->consumed == reframed.size(),
                         "a re-framed Request does not decode as one whole frame");
      Result<abci::Request> reparsed = node::ParseAbciRequest((*again)->body);
      POLNODE_FUZZ_CHECK(reparsed.ok() && reparsed->value_case() == request->value_case(),
                         "a re-framed Request parses to another method");
    } else {
      const StatusCode code = request.status().code();
      POLNODE_FUZZ_CHECK(code == StatusCode::kCorruption || code == StatusCode::kInvalidArgument,
                         "ParseAbciRequest failed with an undocumented status code");
    }
    stream.remove_prefix(f.consumed);
  }
}

std::vector<std::uint8_t> Framed(const std::vector<abci::Request>& requests) {
  std::string out;
  for (const abci::Request& r : requests) {
    if (!node::AppendAbciFrame(r, out).ok()) return {};
  }
  return {out.begin(), out.end()};
}

std::vector<Seed> Seeds() {
  abci::Request echo;
  echo.mutable_echo()->set_message("hello");
  abci::Request flush;
  flush.mutable_flush();
  abci::Request info;
  info.mutable_info()->set_version("0.38.26");
  abci::Request check;
  check.mutable_check_tx()->set_tx(std::string(40, '\x05'));
  abci::Request finalize;
  finalize.mutable_finalize_block()->add_txs("tx-1");
  finalize.mutable_finalize_block()->set_height(7);
  finalize.mutable_finalize_block()->set_hash(std::string(32, '\x0c'));
  abci::Request query;
  query.mutable_query()->set_path("/v1/params");
  std::vector<std::uint8_t> batch = Framed({check, flush});
  return {
      {"echo-flush", Framed({echo, flush})},
      {"info", Framed({info})},
      {"check-tx-batch", batch},
      {"finalize-block", Framed({finalize})},
      {"query", Framed({query})},
      {"truncated", std::vector<std::uint8_t>(batch.begin(), batch.begin() + 20)},
      {"unknown-request", {0x02, 0x22, 0x00}},
      {"over-limit", {0x81, 0x80, 0x01}},
      {"long-varint", std::vector<std::uint8_t>(11, 0x80)},
  };
}

}  // namespace

POLNODE_REGISTER_FUZZ_TARGET(abci_frame, Run, Seeds);

}  // namespace polnode::fuzz
