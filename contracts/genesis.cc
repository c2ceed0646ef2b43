#include "polnode/contracts/genesis.h"

#include <string>

#include "polnode/consensus/tx_envelope.h"

namespace polnode::contracts {
namespace {

Status CheckAtLeast(std::uint64_t value, std::uint64_t minimum, std::string_view field) {
  if (value < minimum) {
    return Status::InvalidArgument("params." + std::string(field) + " must be at least " + std::to_string(minimum));
  }
  return Status::Ok();
}

Status CheckBps(std::uint32_t value, std::string_view field) {
  if (value > 10'000) return Status::InvalidArgument("params." + std::string(field) + " exceeds 10000 basis points");
  return Status::Ok();
}

bool IsChainIdChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-' || c == '/';
}

}  // namespace

proto::Params DefaultParams() {
  proto::Params p;
  p.set_tx_fee(1);
  p.set_mempool_nonce_window(64);
  p.set_min_stake_solver(1'000);
  p.set_min_stake_verifier(500);
  p.set_min_stake_whistleblower(500);
  p.set_unbonding_blocks(100);
  p.set_max_claim_window(10'000);
  p.set_max_training_window(100'000);
  p.set_beacon_delay(2);
  p.set_verify_window(50);
  p.set_challenge_window(50);
  p.set_reveal_window(50);
  p.set_verifiers_per_task(3);
  p.set_verifier_fee_bps(1'000);
  p.set_jackpot_cut_bps(200);
  p.set_jackpot_payout_bps(5'000);
  p.set_forced_error_rate(100);
  p.set_max_segments_per_verification(64);
  // As large as a signed envelope can carry (consensus/tx_envelope.h): a limit above it could never
  // be used, and a rule that needs more (a referee's evidence, a published checkpoint) is split
  // into pieces that fit.
  p.set_max_payload_bytes(consensus::kMaxPayloadBytes);
  p.set_dispute_move_window(20);
  p.set_solver_lock_bps(2'000);
  p.set_verifier_lock_bps(3'500);
  p.set_whistleblower_lock_bps(1'000);
  p.set_jackpot_payout_cap_bps(2'000);
  p.set_publish_window(50);
  p.set_max_verification_rounds(3);
  p.set_max_challengers(8);
  p.set_max_total_steps(std::uint64_t{1} << 40);
  p.set_max_segments(std::uint64_t{1} << 20);
  p.set_seed_reveal_window(30);
  p.set_audit_window(50'000);
  return p;
}

Status ValidateParams(const proto::Params& p) {
  POLNODE_RETURN_IF_ERROR(CheckAtLeast(p.mempool_nonce_window(), 1, "mempool_nonce_window"));
  POLNODE_RETURN_IF_ERROR(CheckAtLeast(p.min_stake_solver(), 1, "min_stake_solver"));
  POLNODE_RETURN_IF_ERROR(CheckAtLeast(p.min_stake_verifier(), 1, "min_stake_verifier"));
  POLNODE_RETURN_IF_ERROR(CheckAtLeast(p.min_stake_whistleblower(), 1, "min_stake_whistleblower"));
  POLNODE_RETURN_IF_ERROR(CheckAtLeast(p.unbonding_blocks(), 1, "unbonding_blocks"));
  POLNODE_RETURN_IF_ERROR(CheckAtLeast(p.max_claim_window(), 1, "max_claim_window"));
  POLNODE_RETURN_IF_ERROR(CheckAtLeast(p.beacon_delay(), 1, "beacon_delay"));
  if (p.max_training_window() <= p.beacon_delay()) {
    // A task's training window must exceed the beacon delay; none could otherwise be submitted.
    return Status::InvalidArgument("params.max_training_window must exceed beacon_delay");
  }
  POLNODE_RETURN_IF_ERROR(CheckAtLeast(p.verify_window(), 1, "verify_window"));
  POLNODE_RETURN_IF_ERROR(CheckAtLeast(p.challenge_window(), 1, "challenge_window"));
  POLNODE_RETURN_IF_ERROR(CheckAtLeast(p.reveal_window(), 1, "reveal_window"));
  POLNODE_RETURN_IF_ERROR(CheckAtLeast(p.verifiers_per_task(), 1, "verifiers_per_task"));
  if (p.verifiers_per_task() > 64) return Status::InvalidArgument("params.verifiers_per_task exceeds 64");
  POLNODE_RETURN_IF_ERROR(CheckBps(p.verifier_fee_bps(), "verifier_fee_bps"));
  POLNODE_RETURN_IF_ERROR(CheckBps(p.jackpot_cut_bps(), "jackpot_cut_bps"));
  POLNODE_RETURN_IF_ERROR(CheckBps(p.jackpot_payout_bps(), "jackpot_payout_bps"));
  POLNODE_RETURN_IF_ERROR(CheckAtLeast(p.max_segments_per_verification(), 1, "max_segments_per_verification"));
  POLNODE_RETURN_IF_ERROR(CheckAtLeast(p.dispute_move_window(), 1, "dispute_move_window"));
  POLNODE_RETURN_IF_ERROR(CheckBps(p.jackpot_payout_cap_bps(), "jackpot_payout_cap_bps"));
  POLNODE_RETURN_IF_ERROR(CheckAtLeast(p.publish_window(), 1, "publish_window"));
  POLNODE_RETURN_IF_ERROR(CheckAtLeast(p.max_verification_rounds(), 1, "max_verification_rounds"));
  POLNODE_RETURN_IF_ERROR(CheckAtLeast(p.max_total_steps(), 1, "max_total_steps"));
  POLNODE_RETURN_IF_ERROR(CheckAtLeast(p.max_segments(), 1, "max_segments"));
  if (p.seed_reveal_window() <= p.beacon_delay()) {
    return Status::InvalidArgument("params.seed_reveal_window must exceed beacon_delay");
  }
  if (p.max_total_steps() > (std::uint64_t{1} << 48) || p.max_segments() > (std::uint64_t{1} << 32)) {
    // Segment and step counts are multiplied and offset in the game; these bounds keep every such
    // sum far from wrapping.
    return Status::InvalidArgument("params.max_total_steps exceeds 2^48 or max_segments exceeds 2^32");
  }
  if (p.max_payload_bytes() > consensus::kMaxPayloadBytes) {
    return Status::InvalidArgument("params.max_payload_bytes exceeds what an envelope carries (" +
                                   std::to_string(consensus::kMaxPayloadBytes) + ")");
  }
  return CheckAtLeast(p.max_payload_bytes(), 1024, "max_payload_bytes");
}

Status ValidateChainId(std::string_view chain_id) {
  if (chain_id.empty() || chain_id.size() > 64) return Status::InvalidArgument("chain id must be 1..64 characters");
  for (char c : chain_id) {
    if (!IsChainIdChar(c)) return Status::InvalidArgument("chain id may hold only [A-Za-z0-9._/-]");
  }
  return Status::Ok();
}

}  // namespace polnode::contracts
