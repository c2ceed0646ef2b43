// The byte form of the contracts' state records (contracts.proto, dispute.proto): deterministic
// protobuf serialization. The state root is computed over these bytes, and readers that must see
// every field of a record exactly (role daemons, auditors) are handed it in this form.
#ifndef POLNODE_CONTRACTS_RECORD_ENCODING_H_
#define POLNODE_CONTRACTS_RECORD_ENCODING_H_

#include <google/protobuf/message_lite.h>

#include <string>

namespace polnode::contracts {

/// The deterministic protobuf encoding of `message`.
std::string EncodeRecord(const google::protobuf::MessageLite& message);

}  // namespace polnode::contracts

#endif  // POLNODE_CONTRACTS_RECORD_ENCODING_H_
