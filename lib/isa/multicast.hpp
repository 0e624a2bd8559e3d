// Multicast load groups (formats/ISA_Format.md, section 5b). The k-th
// multicast load (lda_mc, ldw_mc, lw_mc) with TAG t of each core belongs to
// group (t, k): one DRAM read that reaches every member's core. Each member
// names the group's size (MEMBERS), and all read the same DRAM bytes. The
// checker, the simulator and the trace viewer find a program's groups here.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "isa/program.hpp"

namespace cct::isa {

struct MulticastGroup {
  int64_t tag = 0;
  std::vector<uint32_t> members;  // instruction indices, one per core, by ascending core id
};

struct MulticastGroups {
  std::vector<MulticastGroup> groups;
  std::vector<int32_t> group_of;  // per instruction: the index of its group, or -1

  // A member other than its group's first (lowest core): the group's one
  // DRAM read, its bytes and energy, are counted for the first member.
  bool shares_read(size_t i) const { return group_of[i] >= 0 && groups[size_t(group_of[i])].members.front() != i; }
};

// Groups the multicast loads of `p`. Each broken rule goes to `problem`
// (instruction index, message): a member count other than MEMBERS, members
// that read other DRAM addresses, sizes or spaces. The groups are built all
// the same.
MulticastGroups group_multicast_loads(const Program& p,
                                      const std::function<void(size_t, const std::string&)>& problem);

// Why instruction `inst`, a multicast load, cannot run on architecture
// `arch_name` without multicast (the checker's and the simulator's words).
std::string multicast_unsupported(const Instruction& inst, const std::string& arch_name);

}  // namespace cct::isa
