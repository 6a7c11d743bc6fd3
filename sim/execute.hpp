#pragma once
// Functional execution: the program run in program order (a valid sequential
// semantics, since every dependency points backwards) on host buffers.
// Storage is fp32; every write is rounded to the destination buffer's dtype;
// matmul sums in fp32 PSUM; activation and ALU operations are computed in
// double, then rounded.
#include "sim/program.hpp"
#include "sim/simulator.hpp"

namespace autotune::sim {

// Requires a program that passed validate_program. Fills io.outputs
// (NaN-poisoned first). Throws UserError when io.inputs do not match the
// program's input buffers.
void execute_program(const Program& program, HostIo& io);

}  // namespace autotune::sim
