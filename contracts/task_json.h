// JSON forms of task and stake records for queries (hex for keys and hashes, numbers for amounts,
// enum names for statuses).
#ifndef POLNODE_CONTRACTS_TASK_JSON_H_
#define POLNODE_CONTRACTS_TASK_JSON_H_

#include "json_writer.h"
#include "polnode/contracts.pb.h"

namespace polnode::contracts {

/// Writes `task` as one JSON object value. Its field "record" is the Task protobuf in hex, so
/// that role daemons and auditors read every field exactly (forced_seed included).
void WriteTaskJson(JsonWriter& w, const proto::Task& task);

/// Writes bonded, locked, free and unbonding as fields of the currently open object.
void WriteStakeFields(JsonWriter& w, const proto::StakeRecord& stake);

}  // namespace polnode::contracts

#endif  // POLNODE_CONTRACTS_TASK_JSON_H_
