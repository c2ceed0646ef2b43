// Waiting in tests for another process or thread to get somewhere (a file written, a log line, a
// worker's result). Such a wait can only end sooner or later: its outcome must never decide a
// test's verdict beyond a generous timeout. Time that decides an outcome (blocks, deadlines, retry
// pauses) is driven by the test instead: a ManualClock (polnode/base/clock.h) in this process,
// `polnode ledger --manual-blocks` (LedgerProcess::ProduceBlocks) across processes.
#ifndef POLNODE_TESTING_EVENTUALLY_H_
#define POLNODE_TESTING_EVENTUALLY_H_

#include <chrono>
#include <functional>

namespace polnode::testing {

/// Calls `done` until it returns true, pausing `pause` of real time between calls, for up to
/// `timeout`; returns whether it did.
bool Eventually(const std::function<bool()>& done, std::chrono::milliseconds timeout = std::chrono::seconds(60),
                std::chrono::milliseconds pause = std::chrono::milliseconds(20));

}  // namespace polnode::testing

#endif  // POLNODE_TESTING_EVENTUALLY_H_
