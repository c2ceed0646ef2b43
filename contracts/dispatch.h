// Payload decoding, stateless validation and dispatch by payload_type (payloads.h).
//
// A payload is accepted only in its canonical protobuf form (re-encoding it deterministically
// gives the same bytes: fields in order, no defaults written, no unknown fields), so one
// transaction has one meaning and clients on a newer schema fail loudly instead of having
// fields silently dropped.
#ifndef POLNODE_CONTRACTS_DISPATCH_H_
#define POLNODE_CONTRACTS_DISPATCH_H_

#include "exec_context.h"
#include "polnode/base/status.h"
#include "polnode/contracts.pb.h"
#include "polnode/contracts/application.h"

namespace polnode::contracts {

/// Longest text field (model spec, URIs), in bytes.
inline constexpr std::size_t kMaxTextBytes = 1024;

/// Decodes tx.payload as the message tx.payload_type names and checks the rules that need no
/// state but params: lengths of keys and hashes (32 bytes), non-zero amounts, valid roles, a
/// consistent task spec, printable-ASCII text. kInvalidArgument for an unknown payload_type or a
/// broken rule; kResourceExhausted for a payload over params.max_payload_bytes.
[[nodiscard]] Status ValidatePayload(const VerifiedTx& tx, const proto::Params& params);

/// ValidatePayload, then runs the executor of the payload type against ctx.state.
[[nodiscard]] Status ExecutePayload(ExecContext& ctx, const VerifiedTx& tx);

}  // namespace polnode::contracts

#endif  // POLNODE_CONTRACTS_DISPATCH_H_
