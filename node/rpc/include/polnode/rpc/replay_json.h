// The JSON form of a replayed segment's evidence (verifier/replay.h), as `polnode verify` prints it
// and the verifier daemon's reports hold it.
#ifndef POLNODE_RPC_REPLAY_JSON_H_
#define POLNODE_RPC_REPLAY_JSON_H_

#include "polnode/rpc/json.h"
#include "polnode/verifier/replay.h"

namespace polnode::node {

/// Writes one replayed segment's evidence as a JSON object value: segment, ok, reason, replayed,
/// both hashes, losses_match and the distances (null when not comparable).
void WriteSegmentEvidence(JsonWriter& w, const verifier::SegmentEvidence& evidence);

}  // namespace polnode::node

#endif  // POLNODE_RPC_REPLAY_JSON_H_
