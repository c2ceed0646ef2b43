// The one libsecp256k1 context of the consensus library (keys.cc), for the other files of this
// folder that call libsecp256k1 directly (vrf.cc). Internal: not part of the public headers.
#ifndef POLNODE_CONSENSUS_SECP_CONTEXT_H_
#define POLNODE_CONSENSUS_SECP_CONTEXT_H_

#include <secp256k1.h>

namespace polnode::consensus {

/// Created and randomized on first use, never destroyed, only read afterwards: safe from any
/// number of threads at once.
const secp256k1_context* SecpContext();

}  // namespace polnode::consensus

#endif  // POLNODE_CONSENSUS_SECP_CONTEXT_H_
