// ABCI socket framing (CometBFT v0.38): every message on an ABCI connection is an unsigned LEB128
// varint length (Go's binary.PutUvarint) followed by that many bytes of a protobuf Request (from
// CometBFT) or Response (from the application), proto/polnode/abci.proto.
//
// The decoder is the first code that touches bytes from the socket, so it bounds everything before
// it allocates: a length over the cap, a varint longer than 10 bytes or one that overflows 64 bits
// is an error (the stream cannot be resynchronised, so the connection must close), and a request
// that is not a protobuf Request or names no method polnode knows is an error for that request only.
#ifndef POLNODE_LEDGER_ABCI_FRAME_H_
#define POLNODE_LEDGER_ABCI_FRAME_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "polnode/abci.pb.h"
#include "polnode/base/status.h"

namespace polnode::node {

/// The largest ABCI message body polnode accepts: 64 MiB. A block's txs travel in one
/// FinalizeBlock request and CometBFT's default block max_bytes is 21 MiB (22020096 in a
/// v0.38.26 genesis), so the cap leaves room for a raised block size without letting a peer make
/// the server allocate gigabytes (Go's reader allows 2^31-1).
inline constexpr std::size_t kMaxAbciFrameBytes = std::size_t{64} << 20;

/// One complete frame found at the start of a buffer.
struct AbciFrame {
  std::string_view body;      // the protobuf bytes (a view into the caller's buffer)
  std::size_t consumed = 0;   // length prefix + body: where the next frame starts
};

/// Finds the frame at the start of `buffer`. Returns nullopt when `buffer` holds only part of a
/// frame (read more and call again). kCorruption for a varint of more than 10 bytes or one that
/// overflows 64 bits; kResourceExhausted when the length exceeds `max_body`. Either error means
/// the stream is unusable: close the connection.
[[nodiscard]] Result<std::optional<AbciFrame>> DecodeAbciFrame(std::string_view buffer,
                                                               std::size_t max_body = kMaxAbciFrameBytes);

/// Parses a frame body as a Request. kCorruption when the bytes are not a Request message;
/// kInvalidArgument when it names no method of abci.proto (an unknown request).
[[nodiscard]] Result<abci::Request> ParseAbciRequest(std::string_view body);

/// Appends `message`'s frame (length prefix + serialized bytes) to `out`. kInternal if protobuf
/// cannot serialize it; kResourceExhausted if it is larger than kMaxAbciFrameBytes.
[[nodiscard]] Status AppendAbciFrame(const google::protobuf::MessageLite& message, std::string& out);

}  // namespace polnode::node

#endif  // POLNODE_LEDGER_ABCI_FRAME_H_
