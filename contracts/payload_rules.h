// The stateless rules of each payload message (used by dispatch.cc). Each returns
// kInvalidArgument naming the first field that breaks a rule.
#ifndef POLNODE_CONTRACTS_PAYLOAD_RULES_H_
#define POLNODE_CONTRACTS_PAYLOAD_RULES_H_

#include "polnode/base/status.h"
#include "polnode/contracts.pb.h"
#include "polnode/dispute.pb.h"

namespace polnode::contracts {

[[nodiscard]] Status CheckRules(const proto::TransferTx& msg);
[[nodiscard]] Status CheckRules(const proto::StakeTx& msg);
[[nodiscard]] Status CheckRules(const proto::UnstakeTx& msg);
[[nodiscard]] Status CheckRules(const proto::SubmitTaskTx& msg);
[[nodiscard]] Status CheckRules(const proto::CancelTaskTx& msg);
[[nodiscard]] Status CheckRules(const proto::ClaimTaskTx& msg);
[[nodiscard]] Status CheckRules(const proto::CommitProofTx& msg);
[[nodiscard]] Status CheckRules(const proto::VerdictTx& msg);
[[nodiscard]] Status CheckRules(const proto::DisputeTx& msg);
[[nodiscard]] Status CheckRules(const proto::RevealTx& msg);
[[nodiscard]] Status CheckRules(const proto::DisputeMoveTx& msg);
[[nodiscard]] Status CheckRules(const proto::PublishTx& msg);
[[nodiscard]] Status CheckRules(const proto::SeedRevealTx& msg);

}  // namespace polnode::contracts

#endif  // POLNODE_CONTRACTS_PAYLOAD_RULES_H_
