#include "polnode/ledger/abci_frame.h"

namespace polnode::node {

Result<std::optional<AbciFrame>> DecodeAbciFrame(std::string_view buffer, std::size_t max_body) {
  std::uint64_t length = 0;
  std::size_t i = 0;
  for (;; ++i) {
    if (i == buffer.size()) return std::optional<AbciFrame>();
    // Ten 7-bit groups hold 64 bits; the tenth may only carry the top bit.
    if (i == 10) return Status::Corruption("ABCI frame length varint is longer than 10 bytes");
    const auto byte = static_cast<std::uint8_t>(buffer[i]);
    if (i == 9 && byte > 1) return Status::Corruption("ABCI frame length varint overflows 64 bits");
    length |= static_cast<std::uint64_t>(byte & 0x7f) << (7 * i);
    if ((byte & 0x80) == 0) break;
  }
  const std::size_t header = i + 1;
  if (length > max_body) {
    return Status::ResourceExhausted("ABCI frame of " + std::to_string(length) + " bytes exceeds the limit of " +
                                     std::to_string(max_body));
  }
  if (buffer.size() - header < length) return std::optional<AbciFrame>();
  return std::optional<AbciFrame>(AbciFrame{buffer.substr(header, length), header + length});
}

Result<abci::Request> ParseAbciRequest(std::string_view body) {
  abci::Request request;
  if (!request.ParseFromArray(body.data(), static_cast<int>(body.size()))) {
    return Status::Corruption("ABCI frame is not a Request message");
  }
  if (request.value_case() == abci::Request::VALUE_NOT_SET) {
    return Status::InvalidArgument("unknown ABCI request (no method polnode knows)");
  }
  return request;
}

Status AppendAbciFrame(const google::protobuf::MessageLite& message, std::string& out) {
  const std::size_t size = message.ByteSizeLong();
  if (size > kMaxAbciFrameBytes) {
    return Status::ResourceExhausted("ABCI response of " + std::to_string(size) + " bytes exceeds the frame limit");
  }
  const std::size_t original = out.size();
  std::uint64_t length = size;
  do {
    const auto low = static_cast<std::uint8_t>(length & 0x7f);
    length >>= 7;
    out.push_back(static_cast<char>(length != 0 ? (low | 0x80) : low));
  } while (length != 0);
  const std::size_t start = out.size();
  out.resize(start + size);
  if (!message.SerializeToArray(out.data() + start, static_cast<int>(size))) {
    out.resize(original);
    return Status::Internal("protobuf failed to serialize an ABCI message");
  }
  return Status::Ok();
}

}  // namespace polnode::node
