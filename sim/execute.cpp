#include "sim/execute.hpp"

#include <cmath>
#include <limits>

#include "core/error.hpp"

namespace autotune::sim {

namespace {

class HostMemory {
 public:
  explicit HostMemory(const Program& program) : program_(program), storage_(program.buffers().size()) {}

  std::vector<float>& of(BufferId id) {
    auto& s = storage_[id];
    if (s.empty()) {
      const Buffer& b = program_.buffer(id);
      s.assign(static_cast<std::size_t>(b.rows) * b.cols, std::numeric_limits<float>::quiet_NaN());
    }
    return s;
  }
  float get(const View& v, int r, int c) {
    const Buffer& b = program_.buffer(v.buffer);
    return of(v.buffer)[static_cast<std::size_t>(v.buffer_row(r, c)) * b.cols + v.buffer_col(c)];
  }
  void set(const View& v, int r, int c, double value) {
    const Buffer& b = program_.buffer(v.buffer);
    of(v.buffer)[static_cast<std::size_t>(v.buffer_row(r, c)) * b.cols + v.buffer_col(c)] =
        round_to_dtype(static_cast<float>(value), b.dtype);
  }
  std::size_t cols(BufferId id) const { return static_cast<std::size_t>(program_.buffer(id).cols); }
  // Frees on-chip buffers whose lifetime ended (their address is reused).
  void release(BufferId id) {
    if (program_.buffer(id).space != MemorySpace::hbm) std::vector<float>().swap(storage_[id]);
  }
  void adopt(BufferId id, std::vector<float> values) { storage_[id] = std::move(values); }
  std::vector<float> take(BufferId id) { return std::move(of(id)); }

 private:
  const Program& program_;
  std::vector<std::vector<float>> storage_;
};

double scalar_value(HostMemory& memory, const ScalarOperand& operand, int row) {
  if (operand.per_partition) return memory.get(*operand.per_partition, row, 0);
  return operand.immediate;
}

void run(const Instruction& in, HostMemory& m) {
  const View& dst = in.dst;
  const int rows = dst.rows(), cols = dst.cols();
  switch (in.opcode) {
    case Opcode::dma_copy:
      if (in.transpose) {
        // Block j of P = dst rows source columns lands in dst columns
        // [j * R, (j + 1) * R), R = source rows (one block: dst = src^T).
        const int block_rows = in.src[0].rows();
        for (int r = 0; r < rows; ++r)
          for (int c = 0; c < cols; ++c)
            m.set(dst, r, c, m.get(in.src[0], c % block_rows, (c / block_rows) * rows + r));
      } else {
        for (int r = 0; r < rows; ++r)
          for (int c = 0; c < cols; ++c) m.set(dst, r, c, m.get(in.src[0], r, c));
      }
      break;
    case Opcode::matmul: {
      const View& st = in.src[0];
      const View& mv = in.src[1];
      const int k_size = st.rows();
      // Raw rows of the three operands: this loop dominates functional runs.
      const std::size_t st_cols = m.cols(st.buffer), mv_cols = m.cols(mv.buffer),
                        dst_cols = m.cols(dst.buffer);
      const float* st_data = m.of(st.buffer).data() + std::size_t(st.row_begin) * st_cols + st.col_begin;
      const float* mv_data = m.of(mv.buffer).data() + std::size_t(mv.row_begin) * mv_cols + mv.col_begin;
      float* dst_data = m.of(dst.buffer).data() + std::size_t(dst.row_begin) * dst_cols + dst.col_begin;
      std::vector<float> sums(static_cast<std::size_t>(cols));
      for (int i = 0; i < rows; ++i) {
        // One matmul's products are summed in fp32, then added to the PSUM
        // accumulator in fp32.
        std::fill(sums.begin(), sums.end(), 0.0f);
        for (int k = 0; k < k_size; ++k) {
          const float a = st_data[std::size_t(k) * st_cols + i];
          const float* b = mv_data + std::size_t(k) * mv_cols;
          for (int j = 0; j < cols; ++j) sums[j] += a * b[j];
        }
        float* out = dst_data + std::size_t(i) * dst_cols;
        for (int j = 0; j < cols; ++j) {
          const float previous = in.accumulate ? out[j] : 0.0f;
          out[j] = previous + sums[j];  // PSUM is fp32: no rounding
        }
      }
      break;
    }
    case Opcode::transpose:
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) m.set(dst, r, c, m.get(in.src[0], c, r));
      break;
    case Opcode::activation:
      for (int r = 0; r < rows; ++r) {
        const double bias = scalar_value(m, in.operand0, r);
        const double scale = in.operand1.per_partition ? scalar_value(m, in.operand1, r) : double(in.scale);
        double row_sum = 0;
        for (int c = 0; c < cols; ++c) {
          const double y = apply_activation(in.function, double(m.get(in.src[0], r, c)) * scale + bias);
          m.set(dst, r, c, y);
          row_sum += y;
        }
        if (in.accumulate_dst) m.set(*in.accumulate_dst, r, 0, row_sum);
      }
      break;
    case Opcode::tensor_tensor:
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c)
          m.set(dst, r, c, apply_alu(in.alu0, m.get(in.src[0], r, c), m.get(in.src[1], r, c)));
      break;
    case Opcode::tensor_scalar:
      for (int r = 0; r < rows; ++r) {
        const double a = scalar_value(m, in.operand0, r);
        const double b = scalar_value(m, in.operand1, r);
        double reduced = 0;
        for (int c = 0; c < cols; ++c) {
          const double y = apply_alu(in.alu1, apply_alu(in.alu0, m.get(in.src[0], r, c), a), b);
          m.set(dst, r, c, y);
          reduced = c == 0 ? y : apply_alu(in.accumulate_op, reduced, y);
        }
        if (in.accumulate_dst) m.set(*in.accumulate_dst, r, 0, reduced);
      }
      break;
    case Opcode::scalar_tensor_tensor:
      for (int r = 0; r < rows; ++r) {
        const double a = scalar_value(m, in.operand0, r);
        for (int c = 0; c < cols; ++c)
          m.set(dst, r, c,
                apply_alu(in.alu1, apply_alu(in.alu0, m.get(in.src[0], r, c), a), m.get(in.src[1], r, c)));
      }
      break;
    case Opcode::tensor_tensor_scan:
      // nki.isa.tensor_tensor_scan: float32 math, the running state kept in
      // float32 inside the engine; each result is cast to dst's dtype.
      for (int r = 0; r < rows; ++r) {
        float state = static_cast<float>(scalar_value(m, in.operand0, r));
        for (int c = 0; c < cols; ++c) {
          const float t = static_cast<float>(apply_alu(in.alu0, m.get(in.src[0], r, c), state));
          state = static_cast<float>(apply_alu(in.alu1, t, m.get(in.src[1], r, c)));
          m.set(dst, r, c, state);
        }
      }
      break;
    case Opcode::tensor_reduce: {
      const View& src = in.src[0];
      for (int r = 0; r < src.rows(); ++r) {
        double acc = m.get(src, r, 0);
        for (int c = 1; c < src.cols(); ++c) acc = apply_alu(in.alu0, acc, m.get(src, r, c));
        for (int c = 0; c < cols; ++c) m.set(dst, r, c, acc);
      }
      break;
    }
    case Opcode::tensor_copy:
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) m.set(dst, r, c, m.get(in.src[0], r, c));
      break;
    case Opcode::reciprocal:
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) m.set(dst, r, c, 1.0 / double(m.get(in.src[0], r, c)));
      break;
    case Opcode::memset:
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) m.set(dst, r, c, in.immediate);
      break;
    case Opcode::iota:
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c)
          m.set(dst, r, c, double(in.immediate) + double(r) * in.partition_step + double(c) * in.col_step);
      break;
    case Opcode::affine_select:
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) {
          const double predicate =
              double(in.operand0.immediate) + double(r) * in.partition_step + double(c) * in.col_step;
          m.set(dst, r, c, predicate >= 0 ? double(m.get(in.src[0], r, c)) : double(in.immediate));
        }
      break;
  }
}

}  // namespace

void execute_program(const Program& program, HostIo& io) {
  const auto& buffers = program.buffers();
  HostMemory memory(program);
  std::size_t input_index = 0;
  std::vector<BufferId> outputs;
  for (BufferId id = 0; id < buffers.size(); ++id) {
    const Buffer& b = buffers[id];
    if (b.space != MemorySpace::hbm) continue;
    const std::size_t elements = static_cast<std::size_t>(b.rows) * b.cols;
    if (b.role == Buffer::Role::input) {
      if (input_index >= io.inputs.size())
        throw UserError("simulate: the program has more inputs than the " + std::to_string(io.inputs.size()) +
                        " given");
      const auto& values = io.inputs[input_index++];
      if (values.size() != elements)
        throw UserError("simulate: input '" + b.name + "' needs " + std::to_string(elements) + " values [" +
                        std::to_string(b.rows) + ", " + std::to_string(b.cols) + "], got " +
                        std::to_string(values.size()));
      std::vector<float> stored(values.size());
      for (std::size_t i = 0; i < values.size(); ++i) stored[i] = round_to_dtype(values[i], b.dtype);
      memory.adopt(id, std::move(stored));
    } else if (b.role == Buffer::Role::output) {
      outputs.push_back(id);
      memory.of(id);  // poisoned with NaN
    }
  }
  if (input_index != io.inputs.size())
    throw UserError("simulate: the program has " + std::to_string(input_index) + " inputs, " +
                    std::to_string(io.inputs.size()) + " were given");

  // Buffers whose lifetime ends before instruction i, to free their storage.
  std::vector<std::vector<BufferId>> ending(program.size() + 1);
  for (BufferId id = 0; id < buffers.size(); ++id) {
    const Buffer& b = buffers[id];
    if (b.space != MemorySpace::hbm && b.end_instruction <= program.size())
      ending[b.end_instruction].push_back(id);
  }
  const auto& instructions = program.instructions();
  for (std::size_t i = 0; i < instructions.size(); ++i) {
    for (BufferId id : ending[i]) memory.release(id);
    run(instructions[i], memory);
  }
  io.outputs.clear();
  for (BufferId id : outputs) io.outputs.push_back(memory.take(id));
}

}  // namespace autotune::sim
