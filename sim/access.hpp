#pragma once
// The regions an instruction reads and writes, in one place for validation,
// dependency derivation and execution.
#include <cstdint>

#include "sim/program.hpp"

namespace autotune::sim {

struct Access {
  const View* view;
  bool write;
};

// At most: 2 sources + 2 per-partition operands + accumulated dst (reads),
// dst + accumulate_dst (writes).
struct AccessList {
  Access items[7];
  int count = 0;
  void add(const View& view, bool write) { items[count++] = Access{&view, write}; }
};

inline AccessList instruction_accesses(const Instruction& in) {
  AccessList list;
  for (int s = 0; s < in.src_count; ++s) list.add(in.src[s], false);
  if (in.operand0.per_partition) list.add(*in.operand0.per_partition, false);
  if (in.operand1.per_partition) list.add(*in.operand1.per_partition, false);
  if (in.opcode == Opcode::matmul && in.accumulate) list.add(in.dst, false);
  list.add(in.dst, true);
  if (in.accumulate_dst) list.add(*in.accumulate_dst, true);
  return list;
}

}  // namespace autotune::sim
