#include "dispatch.h"

#include <string>

#include "accounts.h"
#include "dispute_game.h"
#include "payload_rules.h"
#include "publication.h"
#include "polnode/contracts/payloads.h"
#include "records.h"
#include "settlement.h"
#include "staking.h"
#include "tasks.h"
#include "verification.h"

namespace polnode::contracts {
namespace {

// Decodes and checks a payload of type Message; then, when `ctx` is given, runs `execute`.
template <typename Message, typename Execute>
Status Run(const VerifiedTx& tx, const proto::Params& params, ExecContext* ctx, Execute execute) {
  if (tx.payload.size() > params.max_payload_bytes()) {
    return Status::ResourceExhausted("payload of " + std::to_string(tx.payload.size()) + " bytes exceeds " +
                                     std::to_string(params.max_payload_bytes()));
  }
  Message msg;
  if (!msg.ParseFromString(tx.payload)) return Status::InvalidArgument("payload is not a valid " + tx.payload_type);
  // Protobuf keeps unknown fields and writes them back, so drop them before comparing: a payload
  // that carried any then no longer re-encodes to its own bytes.
  msg.DiscardUnknownFields();
  if (EncodeRecord(msg) != tx.payload) {
    return Status::InvalidArgument("payload is not in canonical protobuf form (unknown or misordered fields)");
  }
  POLNODE_RETURN_IF_ERROR(CheckRules(msg));
  if (ctx == nullptr) return Status::Ok();
  return execute(*ctx, msg);
}

Status Dispatch(const VerifiedTx& tx, const proto::Params& params, ExecContext* ctx) {
  const std::string_view signer = SignerBytes(tx);
  const std::string_view type = tx.payload_type;
  if (type == payload::kTransfer) {
    return Run<proto::TransferTx>(tx, params, ctx,
                                  [&](ExecContext& c, const auto& m) { return ExecuteTransfer(c, signer, m); });
  }
  if (type == payload::kStake) {
    return Run<proto::StakeTx>(tx, params, ctx,
                               [&](ExecContext& c, const auto& m) { return ExecuteStake(c, signer, m); });
  }
  if (type == payload::kUnstake) {
    return Run<proto::UnstakeTx>(tx, params, ctx,
                                 [&](ExecContext& c, const auto& m) { return ExecuteUnstake(c, signer, m); });
  }
  if (type == payload::kSubmitTask) {
    return Run<proto::SubmitTaskTx>(tx, params, ctx,
                                    [&](ExecContext& c, const auto& m) { return ExecuteSubmitTask(c, tx, m); });
  }
  if (type == payload::kCancelTask) {
    return Run<proto::CancelTaskTx>(tx, params, ctx,
                                    [&](ExecContext& c, const auto& m) { return ExecuteCancelTask(c, signer, m); });
  }
  if (type == payload::kClaimTask) {
    return Run<proto::ClaimTaskTx>(tx, params, ctx,
                                   [&](ExecContext& c, const auto& m) { return ExecuteClaimTask(c, signer, m); });
  }
  if (type == payload::kCommitProof) {
    return Run<proto::CommitProofTx>(tx, params, ctx,
                                     [&](ExecContext& c, const auto& m) { return ExecuteCommitProof(c, signer, m); });
  }
  if (type == payload::kVerdict) {
    return Run<proto::VerdictTx>(tx, params, ctx,
                                 [&](ExecContext& c, const auto& m) { return ExecuteVerdict(c, signer, m); });
  }
  if (type == payload::kDispute) {
    return Run<proto::DisputeTx>(tx, params, ctx,
                                 [&](ExecContext& c, const auto& m) { return ExecuteDispute(c, signer, m); });
  }
  if (type == payload::kRevealSeed) {
    return Run<proto::SeedRevealTx>(tx, params, ctx,
                                    [&](ExecContext& c, const auto& m) { return ExecuteRevealSeed(c, signer, m); });
  }
  if (type == payload::kPublish) {
    return Run<proto::PublishTx>(tx, params, ctx,
                                 [&](ExecContext& c, const auto& m) { return ExecutePublish(c, signer, m); });
  }
  if (type == payload::kDisputeMove) {
    return Run<proto::DisputeMoveTx>(tx, params, ctx, [&](ExecContext& c, const auto& m) {
      return ExecuteDisputeMove(c, signer, tx.payload, m);
    });
  }
  if (type == payload::kReveal) {
    return Run<proto::RevealTx>(tx, params, ctx,
                                [&](ExecContext& c, const auto& m) { return ExecuteReveal(c, signer, m); });
  }
  return Status::InvalidArgument("unknown payload_type '" + tx.payload_type + "'");
}

}  // namespace

Status ValidatePayload(const VerifiedTx& tx, const proto::Params& params) { return Dispatch(tx, params, nullptr); }

Status ExecutePayload(ExecContext& ctx, const VerifiedTx& tx) { return Dispatch(tx, ctx.params, &ctx); }

}  // namespace polnode::contracts
