// Parsing the byte fields of dispute moves (hashes, sibling lists, Merkle proofs) into typed values,
// shared by the game (dispute_game.cc) and the referee (referee.cc). Every error is
// kInvalidArgument naming the field, so a malformed move is refused with its reason.
#ifndef POLNODE_CONTRACTS_MOVE_FIELDS_H_
#define POLNODE_CONTRACTS_MOVE_FIELDS_H_

#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/repeated_ptr_field.h>

#include "polnode/base/status.h"
#include "polnode/consensus/merkle.h"
#include "polnode/consensus/sha256.h"

namespace polnode::contracts {

/// A 32-byte hash field; kInvalidArgument naming `what` for any other length.
Result<consensus::Hash256> HashField(std::string_view bytes, std::string_view what);

/// A list of 32-byte sibling hashes, in order.
Result<std::vector<consensus::Hash256>> SiblingsField(const google::protobuf::RepeatedPtrField<std::string>& siblings);

/// A consensus::SerializeMerkleProof field; kInvalidArgument naming `what` when it does not parse.
Result<consensus::MerkleProof> ProofField(std::string_view bytes, std::string_view what);

}  // namespace polnode::contracts

#endif  // POLNODE_CONTRACTS_MOVE_FIELDS_H_
