#include "polnode/roles/duty_journal.h"

#include <algorithm>

namespace polnode::node {
namespace {

// Transaction ids are SHA-256 hex; the bound leaves room for no more.
constexpr std::size_t kMaxTxIdBytes = 64;

bool IsHex(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// The text form before the archive: "<tx id>[ committed| failed <reason>]\n". It cannot be
// mistaken for an archive, which starts with cereal's endianness byte (0 or 1), never a hex digit.
Result<DutyJournal> DecodeText(std::string_view text) {
  if (text.empty() || text.back() != '\n') return Status::Corruption("the text journal does not end its line");
  text.remove_suffix(1);
  DutyJournal j;
  const std::size_t space = text.find(' ');
  j.tx_id = std::string(text.substr(0, space));
  const std::string_view rest = space == std::string_view::npos ? std::string_view() : text.substr(space + 1);
  if (j.tx_id.empty() || j.tx_id.size() > kMaxTxIdBytes || !IsHex(j.tx_id)) {
    return Status::Corruption("the text journal does not start with a transaction id");
  }
  if (rest == "committed") {
    j.outcome = DutyJournal::Outcome::kCommitted;
  } else if (rest.starts_with("failed ")) {
    j.outcome = DutyJournal::Outcome::kFailed;
    j.reason = std::string(rest.substr(7, kMaxDutyReasonBytes));
  } else if (!rest.empty()) {
    return Status::Corruption("the text journal has an unknown outcome");
  }
  return j;
}

}  // namespace

template <class Archive>
void DutyJournal::save(Archive& ar) const {
  SaveString(ar, tx_id);
  ar(static_cast<std::uint8_t>(outcome));
  SaveString(ar, reason.substr(0, kMaxDutyReasonBytes));
}

template <class Archive>
void DutyJournal::load(Archive& ar, std::uint32_t version) {
  // Version 1 is the only one so far; a later version adds its fields behind `version >= 2`.
  if (version != 1) FailLocalLoad("no reader for version " + std::to_string(version));
  LoadString(ar, tx_id, kMaxTxIdBytes);
  if (tx_id.empty() || !IsHex(tx_id)) FailLocalLoad("the transaction id is not hex");
  std::uint8_t code = 0;
  ar(code);
  if (code > static_cast<std::uint8_t>(Outcome::kFailed)) FailLocalLoad("unknown outcome " + std::to_string(code));
  outcome = static_cast<Outcome>(code);
  LoadString(ar, reason, kMaxDutyReasonBytes);
}

std::vector<std::uint8_t> EncodeDutyJournal(const DutyJournal& journal) {
  return EncodeLocal(kDutyJournalFormat, journal);
}

Result<DutyJournal> DecodeDutyJournal(std::span<const std::uint8_t> bytes, std::string_view file) {
  if (!bytes.empty() && IsHex(std::string_view(reinterpret_cast<const char*>(bytes.data()), 1))) {
    Result<DutyJournal> text = DecodeText(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    if (!text.ok()) return Status::Corruption(std::string(file) + ": " + text.status().message() + "; it is left as it is");
    return text;
  }
  return DecodeLocal<DutyJournal>(bytes, kDutyJournalFormat, file);
}

}  // namespace polnode::node
