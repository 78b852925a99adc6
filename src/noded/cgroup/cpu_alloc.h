// Which CPU ids of a node a job gets. The controller allocates CPU counts per node, not ids, so
// the node picks them: the first free ids among its configured CPUs. Pure logic; the files that
// keep the picks across a shoald restart are handled in job_cgroup.cc.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shoal::noded {

// `count` ids from [0, node_cpus): the lowest ids no entry of `taken` holds; when too few are
// free (an oversubscribed node), the least used ones fill the rest. Sorted.
std::vector<int> PickCpuIds(uint32_t node_cpus, uint32_t count,
                            const std::vector<std::vector<int>>& taken);

// Several virtual nodes may share one host, so a node-local id maps onto a real CPU modulo the
// host's online CPUs (each node stays within what the host has). Sorted, unique.
std::vector<int> HostCpus(const std::vector<int>& ids, int online_cpus);

// "0,1,5" <-> ids. Malformed text reads as no ids.
std::string FormatCpuIds(const std::vector<int>& ids);
std::vector<int> ParseCpuIds(std::string_view text);

}  // namespace shoal::noded
