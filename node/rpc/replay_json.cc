#include "polnode/rpc/replay_json.h"

#include "polnode/consensus/hex.h"

namespace polnode::node {

void WriteSegmentEvidence(JsonWriter& w, const verifier::SegmentEvidence& e) {
  w.BeginObject()
      .Field("segment", e.segment)
      .Field("ok", e.ok)
      .Field("reason", e.reason)
      .Field("replayed", e.replayed)
      .Field("claimed_hash", consensus::ToHex(e.claimed))
      .Field("recomputed_hash", e.replayed ? consensus::ToHex(e.recomputed) : std::string())
      .Field("losses_match", e.losses_match)
      .Key("distances");
  if (e.have_distances) {
    w.BeginObject()
        .Field("l1", e.distances.l1)
        .Field("l2", e.distances.l2)
        .Field("linf", e.distances.linf)
        .Field("cosine", e.distances.cosine)
        .EndObject();
  } else {
    w.Null();
  }
  w.EndObject();
}

}  // namespace polnode::node
