// JSON forms of transactions, shared by `polnode sign`/`verify`, `polnode tx` and the HTTP API.
//
// Unsigned transaction (input of `polnode sign`):
//   {"chain_id": "polnode-local", "nonce": 1, "payload_type": "transfer", "payload_hex": "0a20..."}
// Signed envelope (output of `polnode verify --json`, and accepted by POST /v1/tx): the same
// fields plus "signer_pubkey" and "signature" as hex.
#ifndef POLNODE_RPC_TX_JSON_H_
#define POLNODE_RPC_TX_JSON_H_

#include <string_view>

#include "polnode/base/status.h"
#include "polnode/consensus/tx_envelope.h"
#include "polnode/rpc/json.h"

namespace polnode::node {

/// Parses an unsigned transaction. Every field above is required, unknown fields are refused
/// (a typo must not silently sign something else), nonce must be a non-negative integer.
/// kInvalidArgument with the offending field named. Signer and signature are left zero.
Result<consensus::TxEnvelope> ParseUnsignedTxJson(std::string_view json);

/// Parses a signed envelope in JSON (the unsigned fields plus signer_pubkey and signature, hex).
/// Does not verify the signature.
Result<consensus::TxEnvelope> ParseSignedTxJson(std::string_view json);

/// Writes the envelope's fields as members of the object `w` is inside of.
void WriteTxFields(JsonWriter& w, const consensus::TxEnvelope& tx);

}  // namespace polnode::node

#endif  // POLNODE_RPC_TX_JSON_H_
