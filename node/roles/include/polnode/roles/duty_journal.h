// A role daemon's duty journal (home/duties/<duty>): the id of the transaction a duty was sent
// as, and what became of it, written before the transaction is posted so a restarted daemon asks
// the ledger about it instead of sending the duty twice (role_runtime.h). A local file read by no
// other node, so it is a versioned cereal archive (base/local_archive.h) of kind "duty-journal":
//   version 1: string tx id (hex), uint8 outcome (0 sent, 1 committed, 2 failed), string reason.
// Journals of the text form before it ("<tx id>[ committed| failed <reason>]\n") are still read.
// Binary: an operator reads a duty's fate from the daemon's log lines (tx_sent, tx_failed).
#ifndef POLNODE_ROLES_DUTY_JOURNAL_H_
#define POLNODE_ROLES_DUTY_JOURNAL_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/base/local_archive.h"
#include "polnode/base/status.h"

namespace polnode::node {

inline constexpr LocalFormat kDutyJournalFormat{"duty-journal", 1};
/// No journal is larger: a tx id and a reason of at most kMaxDutyReasonBytes.
inline constexpr std::uint64_t kMaxDutyJournalBytes = 4096;
inline constexpr std::size_t kMaxDutyReasonBytes = 1000;

struct DutyJournal {
  enum class Outcome : std::uint8_t { kSent = 0, kCommitted = 1, kFailed = 2 };

  std::string tx_id;  // hex, as the ledger names transactions
  Outcome outcome = Outcome::kSent;
  std::string reason;  // the ledger's reason, for kFailed; at most kMaxDutyReasonBytes

  bool operator==(const DutyJournal&) const = default;

  template <class Archive>
  void save(Archive& ar) const;
  template <class Archive>
  void load(Archive& ar, std::uint32_t version);
};

/// The bytes of `journal` in the newest format (a reason longer than kMaxDutyReasonBytes is cut).
std::vector<std::uint8_t> EncodeDutyJournal(const DutyJournal& journal);

/// Decodes a journal of any version, the text form included; `file` names it in errors.
/// kFailedPrecondition for a newer version or another kind of file; kCorruption for a truncated
/// or damaged one.
Result<DutyJournal> DecodeDutyJournal(std::span<const std::uint8_t> bytes, std::string_view file);

}  // namespace polnode::node

#endif  // POLNODE_ROLES_DUTY_JOURNAL_H_
