// Keys, signed transactions, a genesis and a ledger task spec for tests and fuzz targets that drive
// a real ledger. Signatures use fixed auxiliary randomness, so the same arguments give the same
// bytes and transaction id on every run (fuzz seeds are committed with their ids in them).
#ifndef POLNODE_TESTING_LEDGER_FIXTURES_H_
#define POLNODE_TESTING_LEDGER_FIXTURES_H_

#include <google/protobuf/message_lite.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "polnode/consensus/keys.h"
#include "polnode/consensus/tx_envelope.h"
#include "polnode/contracts.pb.h"
#include "polnode/ledger/genesis_file.h"
#include "polnode/ledger/ledger.h"

namespace polnode::testing {

/// The secret key whose 32 bytes are all `byte` (1 to 255).
consensus::SecretKey KeyFromByte(std::uint8_t byte);
/// Its x-only public key as 32 raw bytes, as ledger records hold keys.
std::string RawPubKey(const consensus::SecretKey& key);

/// `payload` of `payload_type` as an envelope for `chain_id` at `nonce`, signed by `signer`.
consensus::TxEnvelope SignedEnvelope(const consensus::SecretKey& signer, std::string_view chain_id, std::uint64_t nonce,
                                     std::string_view payload_type, const google::protobuf::MessageLite& payload);
/// The same, encoded: the bytes POST /v1/tx takes.
std::string SignedTx(const consensus::SecretKey& signer, std::string_view chain_id, std::uint64_t nonce,
                     std::string_view payload_type, const google::protobuf::MessageLite& payload);
/// The payload of a transfer of `amount` to `to`.
proto::TransferTx TransferTo(const consensus::SecretKey& to, std::uint64_t amount);

/// A genesis for `chain_id` with the contracts' default params that gives `funded` `balance`.
node::GenesisFile TestGenesis(std::string_view chain_id, const consensus::SecretKey& funded, std::uint64_t balance);

/// A ledger in `data_dir` for `genesis`, producing blocks with KeyFromByte(9). It skips fsync: a
/// test's ledger need not outlive a power cut.
[[nodiscard]] Result<std::unique_ptr<node::Ledger>> OpenTestLedger(const std::string& data_dir,
                                                                   const node::GenesisFile& genesis);

/// A ledger TaskSpec the contracts accept for a 40-step mlp:16-8-3 task; its hashes and roots bind
/// no real document.
proto::TaskSpec UnboundTaskSpec();

}  // namespace polnode::testing

#endif  // POLNODE_TESTING_LEDGER_FIXTURES_H_
