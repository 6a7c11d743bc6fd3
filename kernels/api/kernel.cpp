#include "kernels/api/kernel.hpp"

#include <algorithm>
#include <cstdlib>

#include "core/error.hpp"
#include "core/text.hpp"

namespace autotune::kernels {

Tensor Tensor::slice(int r0, int r1, int c0, int c1) const {
  Tensor out = *this;
  if (view.fold > 1) {
    out.view.row_begin = view.row_begin + r0 * view.fold;
    out.view.row_end = view.row_begin + r1 * view.fold;
    // Part of a folded row is no rectangle of the buffer: marked for check().
    if (c0 != 0 || c1 != cols()) out.view.fold = -view.fold;
    return out;
  }
  out.view.row_begin = view.row_begin + r0;
  out.view.row_end = view.row_begin + r1;
  out.view.col_begin = view.col_begin + c0;
  out.view.col_end = view.col_begin + c1;
  return out;
}

Tensor Tensor::fold_rows(int factor) const {
  Tensor out = *this;
  // check() reports a factor that does not divide the rows, or a fold of a fold.
  out.view.fold = view.fold == 1 && factor >= 1 ? factor : -std::max(factor, 1);
  return out;
}

TilePool::TilePool(Kernel* kernel, std::string name, MemorySpace space, int bufs, int rows, int cols,
                   Dtype dtype)
    : kernel_(kernel), name_(std::move(name)), space_(space), rows_(rows), cols_(cols), dtype_(dtype) {
  std::int64_t bytes = std::int64_t(cols) * sim::dtype_bytes(dtype);
  if (space == MemorySpace::psum) {
    const std::int64_t bank = kernel->limits_.psum_bank_bytes;
    bytes = (bytes + bank - 1) / bank * bank;
  }
  slots_.resize(static_cast<std::size_t>(std::max(bufs, 1)));
  for (auto& slot : slots_) slot.byte_offset = kernel->allocate(space, bytes);
}

TilePool::TilePool(TilePool&& other) noexcept
    : kernel_(other.kernel_),
      name_(std::move(other.name_)),
      space_(other.space_),
      rows_(other.rows_),
      cols_(other.cols_),
      dtype_(other.dtype_),
      slots_(std::move(other.slots_)),
      next_slot_(other.next_slot_),
      tiles_made_(other.tiles_made_) {
  other.kernel_ = nullptr;
}

TilePool::~TilePool() {
  if (kernel_ == nullptr) return;
  std::int64_t bytes = std::int64_t(cols_) * sim::dtype_bytes(dtype_);
  if (space_ == MemorySpace::psum) {
    const std::int64_t bank = kernel_->limits_.psum_bank_bytes;
    bytes = (bytes + bank - 1) / bank * bank;
  }
  for (auto& slot : slots_) {
    if (slot.current_buffer >= 0)
      kernel_->program_.release_buffer(static_cast<sim::BufferId>(slot.current_buffer));
    kernel_->deallocate(space_, slot.byte_offset, bytes);
  }
}

Tensor TilePool::next(std::source_location where) {
  Slot& slot = slots_[next_slot_];
  next_slot_ = (next_slot_ + 1) % slots_.size();
  if (slot.current_buffer >= 0)
    kernel_->program_.release_buffer(static_cast<sim::BufferId>(slot.current_buffer));
  Tensor tile = kernel_->add_tensor(name_ + "#" + std::to_string(tiles_made_++), space_,
                                    sim::Buffer::Role::scratch, rows_, cols_, dtype_, slot.byte_offset);
  slot.current_buffer = tile.view.buffer;
  return tile;
}

Kernel::Kernel(sim::Program& program, KernelLimits limits) : program_(program), limits_(limits) {}

Tensor Kernel::add_tensor(std::string name, MemorySpace space, sim::Buffer::Role role, int rows, int cols,
                          Dtype dtype, std::int64_t byte_offset) {
  sim::Buffer buffer;
  buffer.name = std::move(name);
  buffer.space = space;
  buffer.dtype = dtype;
  buffer.rows = rows;
  buffer.cols = cols;
  buffer.byte_offset = byte_offset;
  buffer.role = role;
  Tensor t;
  t.view = sim::View{program_.add_buffer(std::move(buffer)), 0, rows, 0, cols};
  t.space = space;
  t.dtype = dtype;
  return t;
}

Tensor Kernel::input(std::string name, int rows, int cols, Dtype dtype) {
  return add_tensor(std::move(name), MemorySpace::hbm, sim::Buffer::Role::input, rows, cols, dtype, 0);
}
Tensor Kernel::output(std::string name, int rows, int cols, Dtype dtype) {
  return add_tensor(std::move(name), MemorySpace::hbm, sim::Buffer::Role::output, rows, cols, dtype, 0);
}
Tensor Kernel::hbm_scratch(std::string name, int rows, int cols, Dtype dtype) {
  return add_tensor(std::move(name), MemorySpace::hbm, sim::Buffer::Role::scratch, rows, cols, dtype, 0);
}

TilePool Kernel::sbuf_pool(std::string name, int bufs, int rows, int cols, Dtype dtype) {
  return TilePool(this, std::move(name), MemorySpace::sbuf, bufs, rows, cols, dtype);
}
TilePool Kernel::psum_pool(std::string name, int bufs, int rows, int cols, Dtype dtype) {
  return TilePool(this, std::move(name), MemorySpace::psum, bufs, rows, cols, dtype);
}

std::int64_t Kernel::allocate(MemorySpace space, std::int64_t bytes) {
  auto& used = used_[static_cast<int>(space)];
  std::int64_t candidate = 0;
  auto it = used.begin();
  for (; it != used.end(); ++it) {
    if (it->begin - candidate >= bytes) break;
    candidate = it->end;
  }
  used.insert(it, FreeRange{candidate, candidate + bytes});
  return candidate;
}

void Kernel::deallocate(MemorySpace space, std::int64_t offset, std::int64_t bytes) {
  auto& used = used_[static_cast<int>(space)];
  auto it = std::find_if(used.begin(), used.end(), [&](const FreeRange& r) { return r.begin == offset; });
  AUTOTUNE_CHECK(it != used.end() && it->end == offset + bytes, "deallocation of an unknown on-chip range");
  used.erase(it);
}

void Kernel::trace_error(std::string rule, std::string message, std::uint32_t location) {
  program_.add_trace_error({std::move(rule), std::move(message), location});
}

bool Kernel::check(const Tensor& t, std::initializer_list<MemorySpace> allowed, std::string_view what,
                   std::uint32_t location) {
  const sim::View& v = t.view;
  if (v.buffer >= program_.buffers().size()) {
    trace_error("unknown_buffer", std::string(what) + " refers to no tensor", location);
    return false;
  }
  const sim::Buffer& b = program_.buffer(v.buffer);
  if (v.row_begin < 0 || v.row_end > b.rows || v.col_begin < 0 || v.col_end > b.cols ||
      v.row_begin >= v.row_end || v.col_begin >= v.col_end) {
    trace_error("view_out_of_bounds",
                std::string(what) + " view [" + std::to_string(v.row_begin) + ":" +
                    std::to_string(v.row_end) + ", " + std::to_string(v.col_begin) + ":" +
                    std::to_string(v.col_end) + "] is outside '" + b.name + "' [" + std::to_string(b.rows) +
                    ", " + std::to_string(b.cols) + "] or empty",
                location);
    return false;
  }
  if (v.fold != 1) {
    const int factor = std::abs(v.fold);
    std::string problem;
    if (v.fold < 0)
      problem = "slices a folded view by columns, or folds a folded view";
    else if (b.space != MemorySpace::hbm)
      problem = "folds rows of an on-chip tile (folding is an HBM access pattern)";
    else if ((v.row_end - v.row_begin) % factor != 0)
      problem = "folds " + std::to_string(v.row_end - v.row_begin) + " rows by " + std::to_string(factor) +
                ", which does not divide them";
    if (!problem.empty()) {
      trace_error("view_fold", std::string(what) + " '" + b.name + "' " + problem, location);
      return false;
    }
  }
  if (std::find(allowed.begin(), allowed.end(), b.space) == allowed.end()) {
    const std::string accepted =
        join(allowed, " or ", [](auto s) { return std::string(sim::memory_space_name(s)); });
    trace_error("wrong_memory_space",
                std::string(what) + " '" + b.name + "' is in " +
                    std::string(sim::memory_space_name(b.space)) + "; this operand must be in " + accepted,
                location);
    return false;
  }
  return true;
}

sim::InstructionId Kernel::emit(sim::Instruction& instruction, const Where& where) {
  instruction.location = locate(where);
  return program_.append(instruction);
}

namespace {
constexpr auto kOnChip = {MemorySpace::sbuf, MemorySpace::psum};

std::string shape_text(const Tensor& t) {
  return "[" + std::to_string(t.rows()) + ", " + std::to_string(t.cols()) + "]";
}
}  // namespace

void Kernel::dma_copy(const Tensor& dst, const Tensor& src, bool transpose, Where where) {
  const auto loc = locate(where);
  if (!check(dst, {MemorySpace::hbm, MemorySpace::sbuf}, "dma_copy destination", loc) ||
      !check(src, {MemorySpace::hbm, MemorySpace::sbuf}, "dma_copy source", loc))
    return;
  // A transposing copy takes src [R, n * P] to dst [P, n * R], block by block.
  const bool shapes_match = transpose ? (dst.rows() > 0 && src.cols() % dst.rows() == 0 &&
                                         dst.cols() == src.cols() / dst.rows() * src.rows())
                                      : (dst.rows() == src.rows() && dst.cols() == src.cols());
  if (!shapes_match) {
    trace_error(
        "shape_mismatch",
        "dma_copy of " + shape_text(src) + " into " + shape_text(dst) + (transpose ? " (transposed)" : ""),
        loc);
    return;
  }
  sim::Instruction in;
  in.opcode = sim::Opcode::dma_copy;
  in.engine = Engine::dma;
  in.dst = dst.view;
  in.src[0] = src.view;
  in.src_count = 1;
  in.transpose = transpose;
  emit(in, where);
}

void Kernel::matmul(const Tensor& dst, const Tensor& stationary, const Tensor& moving, bool accumulate,
                    sim::PeTile tile, Where where) {
  const auto loc = locate(where);
  if (!check(dst, {MemorySpace::psum}, "matmul result", loc) ||
      !check(stationary, {MemorySpace::sbuf}, "matmul stationary operand", loc) ||
      !check(moving, {MemorySpace::sbuf}, "matmul moving operand", loc))
    return;
  if (stationary.rows() != moving.rows() || dst.rows() != stationary.cols() || dst.cols() != moving.cols()) {
    trace_error("shape_mismatch",
                "matmul stationary " + shape_text(stationary) + " and moving " + shape_text(moving) +
                    " do not produce result " + shape_text(dst) + " (expects [K,M] . [K,N] -> [M,N])",
                loc);
    return;
  }
  sim::Instruction in;
  in.opcode = sim::Opcode::matmul;
  in.engine = Engine::tensor;
  in.dst = dst.view;
  in.src[0] = stationary.view;
  in.src[1] = moving.view;
  in.src_count = 2;
  in.accumulate = accumulate;
  in.pe_tile = tile;
  emit(in, where);
}

void Kernel::transpose(const Tensor& dst, const Tensor& src, Where where) {
  const auto loc = locate(where);
  if (!check(dst, {MemorySpace::psum}, "transpose result", loc) ||
      !check(src, {MemorySpace::sbuf}, "transpose source", loc))
    return;
  if (dst.rows() != src.cols() || dst.cols() != src.rows()) {
    trace_error("shape_mismatch", "transpose of " + shape_text(src) + " into " + shape_text(dst), loc);
    return;
  }
  sim::Instruction in;
  in.opcode = sim::Opcode::transpose;
  in.engine = Engine::tensor;
  in.dst = dst.view;
  in.src[0] = src.view;
  in.src_count = 1;
  emit(in, where);
}

namespace {
bool same_shape(const Tensor& a, const Tensor& b) { return a.rows() == b.rows() && a.cols() == b.cols(); }
}  // namespace

void Kernel::activation(const Tensor& dst, const Tensor& src, ActivationFunction function, Scalar bias,
                        Scalar scale, const Tensor* row_sum, Where where) {
  const auto loc = locate(where);
  if (!check(dst, kOnChip, "activation destination", loc) || !check(src, kOnChip, "activation source", loc))
    return;
  if (!same_shape(dst, src)) {
    trace_error("shape_mismatch", "activation of " + shape_text(src) + " into " + shape_text(dst), loc);
    return;
  }
  sim::Instruction in;
  in.opcode = sim::Opcode::activation;
  in.engine = Engine::scalar;
  in.dst = dst.view;
  in.src[0] = src.view;
  in.src_count = 1;
  in.function = function;
  in.scale = scale.immediate;
  if (scale.is_tensor) {
    in.scale = 1.0f;
    if (!set_scalar_operand(in.operand1, scale, src.rows(), "activation scale", loc)) return;
  }
  in.operand0.immediate = bias.immediate;
  if (bias.is_tensor) {
    if (!check(bias.per_partition, kOnChip, "activation bias", loc)) return;
    if (bias.per_partition.cols() != 1 || bias.per_partition.rows() != src.rows()) {
      trace_error("shape_mismatch",
                  "activation bias must be [" + std::to_string(src.rows()) + ", 1], got " +
                      shape_text(bias.per_partition),
                  loc);
      return;
    }
    in.operand0.per_partition = bias.per_partition.view;
  }
  if (row_sum != nullptr) {
    if (!check(*row_sum, kOnChip, "activation row sum", loc)) return;
    if (row_sum->cols() != 1 || row_sum->rows() != src.rows()) {
      trace_error(
          "shape_mismatch",
          "activation row sum must be [" + std::to_string(src.rows()) + ", 1], got " + shape_text(*row_sum),
          loc);
      return;
    }
    in.accumulate_dst = row_sum->view;
  }
  emit(in, where);
}

void Kernel::tensor_tensor(const Tensor& dst, const Tensor& a, const Tensor& b, AluOp op, Engine engine,
                           Where where) {
  const auto loc = locate(where);
  if (!check(dst, kOnChip, "tensor_tensor destination", loc) ||
      !check(a, kOnChip, "tensor_tensor operand a", loc) ||
      !check(b, kOnChip, "tensor_tensor operand b", loc))
    return;
  if (!same_shape(dst, a) || !same_shape(dst, b)) {
    trace_error("shape_mismatch",
                "tensor_tensor of " + shape_text(a) + " and " + shape_text(b) + " into " + shape_text(dst),
                loc);
    return;
  }
  sim::Instruction in;
  in.opcode = sim::Opcode::tensor_tensor;
  in.engine = engine;
  in.dst = dst.view;
  in.src[0] = a.view;
  in.src[1] = b.view;
  in.src_count = 2;
  in.alu0 = op;
  emit(in, where);
}

void Kernel::tensor_scalar(const Tensor& dst, const Tensor& src, AluOp op0, Scalar operand0, AluOp op1,
                           Scalar operand1, Engine engine, Where where) {
  const auto loc = locate(where);
  if (!check(dst, kOnChip, "tensor_scalar destination", loc) ||
      !check(src, kOnChip, "tensor_scalar source", loc))
    return;
  if (!same_shape(dst, src)) {
    trace_error("shape_mismatch", "tensor_scalar of " + shape_text(src) + " into " + shape_text(dst), loc);
    return;
  }
  sim::Instruction in;
  in.opcode = sim::Opcode::tensor_scalar;
  in.engine = engine;
  in.dst = dst.view;
  in.src[0] = src.view;
  in.src_count = 1;
  in.alu0 = op0;
  in.alu1 = op1;
  if (!set_scalar_operand(in.operand0, operand0, src.rows(), "tensor_scalar operand", loc) ||
      !set_scalar_operand(in.operand1, operand1, src.rows(), "tensor_scalar operand", loc))
    return;
  emit(in, where);
}

bool Kernel::set_scalar_operand(sim::ScalarOperand& operand, const Scalar& scalar, int rows,
                                std::string_view what, std::uint32_t location) {
  operand.immediate = scalar.immediate;
  if (!scalar.is_tensor) return true;
  if (!check(scalar.per_partition, kOnChip, what, location)) return false;
  if (scalar.per_partition.cols() != 1 || scalar.per_partition.rows() != rows) {
    trace_error("shape_mismatch",
                std::string(what) + " must be [" + std::to_string(rows) + ", 1], got " +
                    shape_text(scalar.per_partition),
                location);
    return false;
  }
  operand.per_partition = scalar.per_partition.view;
  return true;
}

void Kernel::tensor_scalar_reduce(const Tensor& dst, const Tensor& src, AluOp op0, Scalar operand0,
                                  AluOp reduce_op, const Tensor& reduce_dst, Engine engine, Where where) {
  const auto loc = locate(where);
  if (!check(dst, kOnChip, "tensor_scalar_reduce destination", loc) ||
      !check(src, kOnChip, "tensor_scalar_reduce source", loc) ||
      !check(reduce_dst, kOnChip, "tensor_scalar_reduce result", loc))
    return;
  if (!same_shape(dst, src) || reduce_dst.cols() != 1 || reduce_dst.rows() != src.rows()) {
    trace_error("shape_mismatch",
                "tensor_scalar_reduce of " + shape_text(src) + " into " + shape_text(dst) + " reduced into " +
                    shape_text(reduce_dst),
                loc);
    return;
  }
  sim::Instruction in;
  in.opcode = sim::Opcode::tensor_scalar;
  in.engine = engine;
  in.dst = dst.view;
  in.src[0] = src.view;
  in.src_count = 1;
  in.alu0 = op0;
  if (!set_scalar_operand(in.operand0, operand0, src.rows(), "tensor_scalar_reduce operand", loc)) return;
  in.accumulate_dst = reduce_dst.view;
  in.accumulate_op = reduce_op;
  emit(in, where);
}

void Kernel::scalar_tensor_tensor(const Tensor& dst, const Tensor& a, AluOp op0, Scalar operand0, AluOp op1,
                                  const Tensor& b, Engine engine, Where where) {
  const auto loc = locate(where);
  if (!check(dst, kOnChip, "scalar_tensor_tensor destination", loc) ||
      !check(a, kOnChip, "scalar_tensor_tensor operand a", loc) ||
      !check(b, kOnChip, "scalar_tensor_tensor operand b", loc))
    return;
  if (!same_shape(dst, a) || !same_shape(dst, b)) {
    trace_error(
        "shape_mismatch",
        "scalar_tensor_tensor of " + shape_text(a) + " and " + shape_text(b) + " into " + shape_text(dst),
        loc);
    return;
  }
  sim::Instruction in;
  in.opcode = sim::Opcode::scalar_tensor_tensor;
  in.engine = engine;
  in.dst = dst.view;
  in.src[0] = a.view;
  in.src[1] = b.view;
  in.src_count = 2;
  in.alu0 = op0;
  in.alu1 = op1;
  if (!set_scalar_operand(in.operand0, operand0, a.rows(), "scalar_tensor_tensor operand", loc)) return;
  emit(in, where);
}

void Kernel::tensor_tensor_scan(const Tensor& dst, const Tensor& data0, const Tensor& data1, Scalar initial,
                                AluOp op0, AluOp op1, Where where) {
  const auto loc = locate(where);
  if (!check(dst, kOnChip, "tensor_tensor_scan destination", loc) ||
      !check(data0, kOnChip, "tensor_tensor_scan data0", loc) ||
      !check(data1, kOnChip, "tensor_tensor_scan data1", loc))
    return;
  if (!same_shape(dst, data0) || !same_shape(dst, data1)) {
    trace_error("shape_mismatch",
                "tensor_tensor_scan of " + shape_text(data0) + " and " + shape_text(data1) + " into " +
                    shape_text(dst),
                loc);
    return;
  }
  if (data0.space == MemorySpace::psum && data1.space == MemorySpace::psum) {
    trace_error("wrong_memory_space", "tensor_tensor_scan data0 and data1 cannot both be in PSUM", loc);
    return;
  }
  sim::Instruction in;
  in.opcode = sim::Opcode::tensor_tensor_scan;
  in.engine = Engine::vector;
  in.dst = dst.view;
  in.src[0] = data0.view;
  in.src[1] = data1.view;
  in.src_count = 2;
  in.alu0 = op0;
  in.alu1 = op1;
  if (!set_scalar_operand(in.operand0, initial, data0.rows(), "tensor_tensor_scan initial", loc)) return;
  emit(in, where);
}

void Kernel::tensor_reduce(const Tensor& dst, const Tensor& src, AluOp op, Engine engine, Where where) {
  const auto loc = locate(where);
  if (!check(dst, kOnChip, "tensor_reduce destination", loc) ||
      !check(src, kOnChip, "tensor_reduce source", loc))
    return;
  if (dst.cols() != 1 || dst.rows() != src.rows()) {
    trace_error("shape_mismatch",
                "tensor_reduce of " + shape_text(src) + " needs a [" + std::to_string(src.rows()) +
                    ", 1] destination, got " + shape_text(dst),
                loc);
    return;
  }
  sim::Instruction in;
  in.opcode = sim::Opcode::tensor_reduce;
  in.engine = engine;
  in.dst = dst.view;
  in.src[0] = src.view;
  in.src_count = 1;
  in.alu0 = op;
  emit(in, where);
}

void Kernel::tensor_copy(const Tensor& dst, const Tensor& src, Engine engine, Where where) {
  const auto loc = locate(where);
  if (!check(dst, kOnChip, "tensor_copy destination", loc) || !check(src, kOnChip, "tensor_copy source", loc))
    return;
  if (!same_shape(dst, src)) {
    trace_error("shape_mismatch", "tensor_copy of " + shape_text(src) + " into " + shape_text(dst), loc);
    return;
  }
  sim::Instruction in;
  in.opcode = sim::Opcode::tensor_copy;
  in.engine = engine;
  in.dst = dst.view;
  in.src[0] = src.view;
  in.src_count = 1;
  emit(in, where);
}

void Kernel::reciprocal(const Tensor& dst, const Tensor& src, Where where) {
  const auto loc = locate(where);
  if (!check(dst, kOnChip, "reciprocal destination", loc) || !check(src, kOnChip, "reciprocal source", loc))
    return;
  if (!same_shape(dst, src)) {
    trace_error("shape_mismatch", "reciprocal of " + shape_text(src) + " into " + shape_text(dst), loc);
    return;
  }
  sim::Instruction in;
  in.opcode = sim::Opcode::reciprocal;
  in.engine = Engine::vector;
  in.dst = dst.view;
  in.src[0] = src.view;
  in.src_count = 1;
  emit(in, where);
}

void Kernel::memset(const Tensor& dst, float value, Engine engine, Where where) {
  if (!check(dst, kOnChip, "memset destination", locate(where))) return;
  sim::Instruction in;
  in.opcode = sim::Opcode::memset;
  in.engine = engine;
  in.dst = dst.view;
  in.immediate = value;
  emit(in, where);
}

void Kernel::iota(const Tensor& dst, float base, int partition_step, int col_step, Where where) {
  if (!check(dst, kOnChip, "iota destination", locate(where))) return;
  sim::Instruction in;
  in.opcode = sim::Opcode::iota;
  in.engine = Engine::gpsimd;
  in.dst = dst.view;
  in.immediate = base;
  in.partition_step = partition_step;
  in.col_step = col_step;
  emit(in, where);
}

void Kernel::affine_select(const Tensor& dst, const Tensor& src, float offset, int partition_step,
                           int col_step, float fill, Where where) {
  const auto loc = locate(where);
  if (!check(dst, kOnChip, "affine_select destination", loc) ||
      !check(src, kOnChip, "affine_select source", loc))
    return;
  if (!same_shape(dst, src)) {
    trace_error("shape_mismatch", "affine_select of " + shape_text(src) + " into " + shape_text(dst), loc);
    return;
  }
  sim::Instruction in;
  in.opcode = sim::Opcode::affine_select;
  in.engine = Engine::gpsimd;
  in.dst = dst.view;
  in.src[0] = src.view;
  in.src_count = 1;
  in.operand0.immediate = offset;
  in.partition_step = partition_step;
  in.col_step = col_step;
  in.immediate = fill;
  emit(in, where);
}

}  // namespace autotune::kernels
