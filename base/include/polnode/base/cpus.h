// How many CPUs this process may run on, for sizing thread pools and for deciding whether a
// background thread would have a CPU of its own.
#ifndef POLNODE_BASE_CPUS_H_
#define POLNODE_BASE_CPUS_H_

namespace polnode {

/// The CPUs in this process's affinity mask (what `taskset` sets), or the machine's hardware
/// threads where the mask cannot be read; at least 1.
int AvailableCpus();

}  // namespace polnode

#endif  // POLNODE_BASE_CPUS_H_
