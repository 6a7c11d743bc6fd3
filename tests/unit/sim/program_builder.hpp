#pragma once
// Builds sim::Programs by hand for the simulator's tests (the kernel API lives
// in kernels/, which the sim tests do not link).
#include <source_location>
#include <string>

#include "sim/program.hpp"
#include "sim/target.hpp"

namespace autotune::sim::testing {

inline TargetSpec target(const std::string& name) {
  return load_target(std::string(AUTOTUNE_SOURCE_DIR) + "/configs/targets/" + name + ".yaml");
}

class ProgramBuilder {
 public:
  using Where = std::source_location;
  Program program;

  BufferId hbm(const std::string& name, int rows, int cols, Dtype dtype = Dtype::fp32,
               Buffer::Role role = Buffer::Role::input) {
    Buffer b;
    b.name = name;
    b.space = MemorySpace::hbm;
    b.dtype = dtype;
    b.rows = rows;
    b.cols = cols;
    b.role = role;
    return program.add_buffer(b);
  }
  BufferId input(const std::string& name, int rows, int cols, Dtype dtype = Dtype::fp32) {
    return hbm(name, rows, cols, dtype, Buffer::Role::input);
  }
  BufferId output(const std::string& name, int rows, int cols, Dtype dtype = Dtype::fp32) {
    return hbm(name, rows, cols, dtype, Buffer::Role::output);
  }
  BufferId onchip(MemorySpace space, const std::string& name, int rows, int cols, Dtype dtype,
                  std::int64_t byte_offset, int partition_offset = 0) {
    Buffer b;
    b.name = name;
    b.space = space;
    b.dtype = dtype;
    b.rows = rows;
    b.cols = cols;
    b.byte_offset = byte_offset;
    b.partition_offset = partition_offset;
    return program.add_buffer(b);
  }
  BufferId sbuf(const std::string& name, int rows, int cols, Dtype dtype = Dtype::fp32,
                std::int64_t byte_offset = 0, int partition_offset = 0) {
    return onchip(MemorySpace::sbuf, name, rows, cols, dtype, byte_offset, partition_offset);
  }
  BufferId psum(const std::string& name, int rows, int cols, std::int64_t byte_offset = 0,
                Dtype dtype = Dtype::fp32) {
    return onchip(MemorySpace::psum, name, rows, cols, dtype, byte_offset);
  }
  View all(BufferId id) const {
    const Buffer& b = program.buffer(id);
    return View{id, 0, b.rows, 0, b.cols};
  }
  static View part(BufferId id, int r0, int r1, int c0, int c1) { return View{id, r0, r1, c0, c1}; }

  InstructionId emit(Instruction in, const Where& where) {
    in.location = program.intern_location(where);
    return program.append(in);
  }
  InstructionId dma(View dst, View src, bool transpose = false, Where where = Where::current()) {
    Instruction in;
    in.opcode = Opcode::dma_copy;
    in.engine = Engine::dma;
    in.dst = dst;
    in.src[0] = src;
    in.src_count = 1;
    in.transpose = transpose;
    return emit(in, where);
  }
  InstructionId matmul(View dst, View stationary, View moving, bool accumulate,
                       Where where = Where::current()) {
    Instruction in;
    in.opcode = Opcode::matmul;
    in.engine = Engine::tensor;
    in.dst = dst;
    in.src[0] = stationary;
    in.src[1] = moving;
    in.src_count = 2;
    in.accumulate = accumulate;
    return emit(in, where);
  }
  // A matmul on a part of the PE array (nki.isa.nc_matmul tile_position, tile_size).
  InstructionId matmul_on(PeTile tile, View dst, View stationary, View moving, bool accumulate,
                          Where where = Where::current()) {
    Instruction in;
    in.opcode = Opcode::matmul;
    in.engine = Engine::tensor;
    in.dst = dst;
    in.src[0] = stationary;
    in.src[1] = moving;
    in.src_count = 2;
    in.accumulate = accumulate;
    in.pe_tile = tile;
    return emit(in, where);
  }
  InstructionId transpose(View dst, View src, Where where = Where::current()) {
    Instruction in;
    in.opcode = Opcode::transpose;
    in.engine = Engine::tensor;
    in.dst = dst;
    in.src[0] = src;
    in.src_count = 1;
    return emit(in, where);
  }
  InstructionId unary(Opcode opcode, Engine engine, View dst, View src, Where where = Where::current()) {
    Instruction in;
    in.opcode = opcode;
    in.engine = engine;
    in.dst = dst;
    in.src[0] = src;
    in.src_count = 1;
    return emit(in, where);
  }
  InstructionId copy(View dst, View src, Engine engine = Engine::vector, Where where = Where::current()) {
    return unary(Opcode::tensor_copy, engine, dst, src, where);
  }
  InstructionId activation(View dst, View src, ActivationFunction f, float scale, ScalarOperand bias,
                           std::optional<View> row_sum = std::nullopt, Where where = Where::current()) {
    Instruction in;
    in.opcode = Opcode::activation;
    in.engine = Engine::scalar;
    in.dst = dst;
    in.src[0] = src;
    in.src_count = 1;
    in.function = f;
    in.scale = scale;
    in.operand0 = bias;
    in.accumulate_dst = row_sum;
    return emit(in, where);
  }
  InstructionId tensor_tensor(View dst, View a, View b, AluOp op, Engine engine = Engine::vector,
                              Where where = Where::current()) {
    Instruction in;
    in.opcode = Opcode::tensor_tensor;
    in.engine = engine;
    in.dst = dst;
    in.src[0] = a;
    in.src[1] = b;
    in.src_count = 2;
    in.alu0 = op;
    return emit(in, where);
  }
  InstructionId scan(View dst, View data0, View data1, ScalarOperand initial, AluOp op0 = AluOp::multiply,
                     AluOp op1 = AluOp::add, Engine engine = Engine::vector, Where where = Where::current()) {
    Instruction in;
    in.opcode = Opcode::tensor_tensor_scan;
    in.engine = engine;
    in.dst = dst;
    in.src[0] = data0;
    in.src[1] = data1;
    in.src_count = 2;
    in.alu0 = op0;
    in.alu1 = op1;
    in.operand0 = initial;
    return emit(in, where);
  }
  InstructionId tensor_scalar(View dst, View src, AluOp op0, ScalarOperand a, AluOp op1, ScalarOperand b,
                              Engine engine = Engine::vector, Where where = Where::current()) {
    Instruction in;
    in.opcode = Opcode::tensor_scalar;
    in.engine = engine;
    in.dst = dst;
    in.src[0] = src;
    in.src_count = 1;
    in.alu0 = op0;
    in.alu1 = op1;
    in.operand0 = a;
    in.operand1 = b;
    return emit(in, where);
  }
  InstructionId reduce(View dst, View src, AluOp op, Engine engine = Engine::vector,
                       Where where = Where::current()) {
    Instruction in;
    in.opcode = Opcode::tensor_reduce;
    in.engine = engine;
    in.dst = dst;
    in.src[0] = src;
    in.src_count = 1;
    in.alu0 = op;
    return emit(in, where);
  }
  InstructionId memset(View dst, float value, Engine engine = Engine::vector,
                       Where where = Where::current()) {
    Instruction in;
    in.opcode = Opcode::memset;
    in.engine = engine;
    in.dst = dst;
    in.immediate = value;
    return emit(in, where);
  }
  InstructionId iota(View dst, float base, int partition_step, int col_step, Where where = Where::current()) {
    Instruction in;
    in.opcode = Opcode::iota;
    in.engine = Engine::gpsimd;
    in.dst = dst;
    in.immediate = base;
    in.partition_step = partition_step;
    in.col_step = col_step;
    return emit(in, where);
  }
  InstructionId affine_select(View dst, View src, float offset, int partition_step, int col_step, float fill,
                              Where where = Where::current()) {
    Instruction in;
    in.opcode = Opcode::affine_select;
    in.engine = Engine::gpsimd;
    in.dst = dst;
    in.src[0] = src;
    in.src_count = 1;
    in.operand0.immediate = offset;
    in.partition_step = partition_step;
    in.col_step = col_step;
    in.immediate = fill;
    return emit(in, where);
  }
};

}  // namespace autotune::sim::testing
