#include "sim/validate.hpp"

#include <algorithm>
#include <optional>
#include <string>

#include "sim/access.hpp"
#include "sim/simulator.hpp"

namespace autotune::sim {

namespace {

struct Rect {
  int r0, r1, c0, c1;
  bool contains(const Rect& o) const { return r0 <= o.r0 && o.r1 <= r1 && c0 <= o.c0 && o.c1 <= c1; }
  bool intersects(const Rect& o) const { return r0 < o.r1 && o.r0 < r1 && c0 < o.c1 && o.c0 < c1; }
};

// The elements of one buffer written so far: a small set of rectangles,
// merged when they line up, collapsing to `full` once the buffer is covered.
// Typical kernels write a tile whole, or in row or column slices that merge.
class WrittenCoverage {
 public:
  bool full = false;

  void add(Rect r, int rows, int cols) {
    if (full) return;
    bool merged = true;
    while (merged) {
      merged = false;
      for (std::size_t i = 0; i < rects_.size(); ++i) {
        const Rect& e = rects_[i];
        if (e.contains(r)) return;
        const bool same_rows = e.r0 == r.r0 && e.r1 == r.r1 && e.c0 <= r.c1 && r.c0 <= e.c1;
        const bool same_cols = e.c0 == r.c0 && e.c1 == r.c1 && e.r0 <= r.r1 && r.r0 <= e.r1;
        if (r.contains(e) || same_rows || same_cols) {
          r = Rect{std::min(r.r0, e.r0), std::max(r.r1, e.r1), std::min(r.c0, e.c0), std::max(r.c1, e.c1)};
          rects_[i] = rects_.back();
          rects_.pop_back();
          merged = true;
          break;
        }
      }
    }
    if (r.r0 <= 0 && r.r1 >= rows && r.c0 <= 0 && r.c1 >= cols) {
      full = true;
      rects_.clear();
      rects_.shrink_to_fit();
      return;
    }
    rects_.push_back(r);
  }

  bool covers(const Rect& r) const {
    if (full) return true;
    for (const Rect& e : rects_)
      if (e.contains(r)) return true;
    // General case: split `r` on the edges of the rectangles crossing it and
    // check each cell.
    std::vector<int> rs{r.r0, r.r1}, cs{r.c0, r.c1};
    for (const Rect& e : rects_) {
      if (!e.intersects(r)) continue;
      for (int v : {e.r0, e.r1})
        if (v > r.r0 && v < r.r1) rs.push_back(v);
      for (int v : {e.c0, e.c1})
        if (v > r.c0 && v < r.c1) cs.push_back(v);
    }
    std::sort(rs.begin(), rs.end());
    rs.erase(std::unique(rs.begin(), rs.end()), rs.end());
    std::sort(cs.begin(), cs.end());
    cs.erase(std::unique(cs.begin(), cs.end()), cs.end());
    for (std::size_t i = 0; i + 1 < rs.size(); ++i) {
      for (std::size_t j = 0; j + 1 < cs.size(); ++j) {
        const Rect cell{rs[i], rs[i + 1], cs[j], cs[j + 1]};
        bool covered = false;
        for (const Rect& e : rects_)
          if (e.contains(cell)) {
            covered = true;
            break;
          }
        if (!covered) return false;
      }
    }
    return true;
  }

 private:
  std::vector<Rect> rects_;
};

std::string region_text(const Program& program, const View& v) {
  const Buffer& b = program.buffer(v.buffer);
  return std::string(memory_space_name(b.space)) + " '" + b.name + "'[" + std::to_string(v.row_begin) + ":" +
         std::to_string(v.row_end) + ", " + std::to_string(v.col_begin) + ":" + std::to_string(v.col_end) +
         "]";
}

// A broken rule: its name and the message after the kernel line.
struct Violation {
  std::string rule;
  std::string message;
};
using MaybeViolation = std::optional<Violation>;

// An on-chip buffer's placement against the target's partitions, SBUF and
// PSUM (peaks as computed for the whole program, for the message).
MaybeViolation check_placement(const Buffer& b, const TargetSpec& target, const ValidationResult& peaks) {
  if (b.space == MemorySpace::hbm) return std::nullopt;
  const std::int64_t end = b.byte_offset + b.bytes_per_partition();
  if (b.partition_offset + b.rows > target.partitions)
    return Violation{"partition_overflow", "tile '" + b.name + "' spans " + std::to_string(b.rows) +
                                               " partitions from partition " +
                                               std::to_string(b.partition_offset) + "; the target has " +
                                               std::to_string(target.partitions)};
  if (b.space == MemorySpace::sbuf && end > target.sbuf_bytes_per_partition)
    return Violation{
        "sbuf_overflow",
        "SBUF overflow: the kernel needs " + std::to_string(peaks.sbuf_peak_bytes_per_partition) +
            " bytes per partition (peak), the target has " + std::to_string(target.sbuf_bytes_per_partition) +
            " usable; tile '" + b.name + "' ends at byte " + std::to_string(end)};
  if (b.space == MemorySpace::psum && end > target.psum_bank_bytes * target.psum_banks)
    return Violation{"psum_overflow",
                     "PSUM overflow: the kernel needs " + std::to_string(peaks.psum_peak_banks) +
                         " banks of " + std::to_string(target.psum_bank_bytes) +
                         " bytes (peak), the target has " + std::to_string(target.psum_banks) + "; tile '" +
                         b.name + "' ends at byte " + std::to_string(end)};
  return std::nullopt;
}

// Each opcode runs on its engine.
MaybeViolation check_engine(const Instruction& in) {
  const bool on_tensor = in.opcode == Opcode::matmul || in.opcode == Opcode::transpose;
  const bool engine_ok = in.opcode == Opcode::dma_copy     ? in.engine == Engine::dma
                         : on_tensor                       ? in.engine == Engine::tensor
                         : in.opcode == Opcode::activation ? in.engine == Engine::scalar
                         : (in.opcode == Opcode::iota || in.opcode == Opcode::affine_select)
                             ? in.engine == Engine::gpsimd
                         : in.opcode == Opcode::tensor_tensor_scan  // "using Vector Engine" (nki.isa)
                             ? in.engine == Engine::vector
                             : (in.engine != Engine::tensor && in.engine != Engine::dma);
  if (engine_ok) return std::nullopt;
  return Violation{"engine_opcode", std::string(opcode_name(in.opcode)) + " cannot run on the " +
                                        std::string(engine_name(in.engine)) + " engine"};
}

// A transposing DMA writes SBUF: the DMA engines transpose from HBM into SBUF
// or from SBUF to SBUF (Trainium2 architecture guide, "DMA Transpose"; trn1's
// transposing load, load_transpose2d, also lands in SBUF).
MaybeViolation check_dma_transpose(const Program& program, const Instruction& in) {
  const Buffer& dst = program.buffer(in.dst.buffer);
  if (dst.space == MemorySpace::sbuf) return std::nullopt;
  return Violation{"dma_transpose_destination", "a transposing dma_copy writes SBUF; its destination '" +
                                                    dst.name + "' is in " +
                                                    std::string(memory_space_name(dst.space))};
}

// The tensor engine's limits: operand sizes, dtypes, and an output within
// one PSUM bank.
MaybeViolation check_tensor_instruction(const Program& program, const Instruction& in,
                                        const TargetSpec& target) {
  const std::string opcode(opcode_name(in.opcode));
  const View& stationary = in.src[0];
  const int k = stationary.rows();
  const int m = stationary.cols();  // matmul: M; transpose: output partitions
  if (k > target.max_contraction)
    return Violation{"matmul_contraction", opcode + " contracts over " + std::to_string(k) +
                                               " partitions; at most " +
                                               std::to_string(target.max_contraction)};
  if (m > target.max_stationary_free)
    return Violation{"matmul_stationary_free", opcode + " stationary operand has " + std::to_string(m) +
                                                   " free elements (output partitions); at most " +
                                                   std::to_string(target.max_stationary_free)};
  if (in.opcode == Opcode::matmul) {
    const int n = in.src[1].cols();
    if (n > target.max_moving_free)
      return Violation{"matmul_moving_free", "matmul moving operand has " + std::to_string(n) +
                                                 " free elements; at most " +
                                                 std::to_string(target.max_moving_free)};
    const Dtype result = program.buffer(in.dst.buffer).dtype;
    if (result != Dtype::fp32)
      return Violation{"matmul_psum_dtype", "matmul writes fp32 PSUM; result tile '" +
                                                program.buffer(in.dst.buffer).name + "' is " +
                                                std::string(dtype_name(result))};
    const Dtype stationary_dtype = program.buffer(in.src[0].buffer).dtype;
    const Dtype moving_dtype = program.buffer(in.src[1].buffer).dtype;
    if (stationary_dtype != moving_dtype)
      return Violation{"matmul_dtype_mismatch", "matmul operands differ in dtype (stationary " +
                                                    std::string(dtype_name(stationary_dtype)) + ", moving " +
                                                    std::string(dtype_name(moving_dtype)) + ")"};
  }
  const Buffer& dst = program.buffer(in.dst.buffer);
  const int elem = dtype_bytes(dst.dtype);
  const std::int64_t begin = dst.byte_offset + std::int64_t(in.dst.col_begin) * elem;
  const std::int64_t end = dst.byte_offset + std::int64_t(in.dst.col_end) * elem;
  if (end - begin > target.psum_bank_bytes ||
      begin / target.psum_bank_bytes != (end - 1) / target.psum_bank_bytes)
    return Violation{"psum_bank_overflow", opcode + " output " + region_text(program, in.dst) +
                                               " spans bytes [" + std::to_string(begin) + ", " +
                                               std::to_string(end) + ") of PSUM; it must fit one bank of " +
                                               std::to_string(target.psum_bank_bytes) +
                                               " bytes per partition"};
  return std::nullopt;
}

// A matmul's PE tile (nki.isa.nc_matmul tile_position, tile_size): sizes of
// the array or a power-of-two fraction of it no smaller than the target's
// smallest tile, each start a multiple of its size within the array, and a
// stationary operand no larger than the tile. Where the documentation is
// silent we take the stricter reading: PE row r is fed by SBUF partition r,
// so both operands lie in the tile's rows' partitions, and PE column c writes
// PSUM partition c, so the result lies in its columns' partitions.
MaybeViolation check_pe_tile(const Program& program, const Instruction& in, const TargetSpec& target) {
  const PeTile& tile = in.pe_tile;
  if (tile.whole()) return std::nullopt;
  if (in.opcode != Opcode::matmul)
    return Violation{"pe_tile_opcode", std::string(opcode_name(in.opcode)) +
                                           " runs on the whole PE array; only a matmul takes a PE tile"};
  const int array_rows = target.max_contraction, array_cols = target.max_stationary_free;
  const std::string shape = "PE tile at (" + std::to_string(tile.row_start) + ", " +
                            std::to_string(tile.col_start) + ") of size (" + std::to_string(tile.row_size) +
                            ", " + std::to_string(tile.col_size) + ")";
  auto size_ok = [&](int size, int array) {
    return size >= target.pe_tile_min && size <= array && (size & (size - 1)) == 0;
  };
  if (target.pe_tile_min >= array_rows && target.pe_tile_min >= array_cols)
    return Violation{"pe_tile_size", "matmul " + shape + ": this target has no PE tiling mode"};
  if (!size_ok(tile.row_size, array_rows) || !size_ok(tile.col_size, array_cols))
    return Violation{"pe_tile_size", "matmul " + shape + ": each size is a power of two from " +
                                         std::to_string(target.pe_tile_min) +
                                         " (this target's smallest tile) to " + std::to_string(array_rows)};
  if (tile.row_start % tile.row_size != 0 || tile.row_start + tile.row_size > array_rows ||
      tile.col_start % tile.col_size != 0 || tile.col_start + tile.col_size > array_cols)
    return Violation{"pe_tile_position",
                     "matmul " + shape +
                         ": each start is a multiple of its size and the tile lies within the " +
                         std::to_string(array_rows) + "x" + std::to_string(array_cols) + " array"};
  const int k = in.src[0].rows(), m = in.src[0].cols();
  if (k > tile.row_size || m > tile.col_size)
    return Violation{"pe_tile_stationary", "matmul stationary operand [" + std::to_string(k) + ", " +
                                               std::to_string(m) + "] does not fit its " + shape};
  auto partitions = [&](const View& v) {
    const int first = program.buffer(v.buffer).partition_offset + v.row_begin;
    return std::pair<int, int>{first, first + v.rows()};
  };
  const char* roles[] = {"stationary", "moving"};
  for (int s = 0; s < 2; ++s) {
    const auto [first, end] = partitions(in.src[s]);
    if (first < tile.row_start || end > tile.row_start + tile.row_size)
      return Violation{"pe_tile_partitions",
                       std::string("matmul ") + roles[s] + " operand " + region_text(program, in.src[s]) +
                           " is on partitions [" + std::to_string(first) + ", " + std::to_string(end) +
                           "); the " + shape + " reads partitions [" + std::to_string(tile.row_start) + ", " +
                           std::to_string(tile.row_start + tile.row_size) + ") (PE row r reads partition r)"};
  }
  const auto [first, end] = partitions(in.dst);
  if (first < tile.col_start || end > tile.col_start + tile.col_size)
    return Violation{"pe_tile_partitions", "matmul result " + region_text(program, in.dst) +
                                               " is on PSUM partitions [" + std::to_string(first) + ", " +
                                               std::to_string(end) + "); the " + shape +
                                               " writes partitions [" + std::to_string(tile.col_start) +
                                               ", " + std::to_string(tile.col_start + tile.col_size) +
                                               ") (PE column c writes partition c)"};
  return std::nullopt;
}

// Reads of elements no earlier instruction wrote.
MaybeViolation check_reads(const Program& program, const Instruction& in, const AccessList& accesses,
                           const std::vector<WrittenCoverage>& written) {
  for (int a = 0; a < accesses.count; ++a) {
    if (accesses.items[a].write) continue;
    const View& v = *accesses.items[a].view;
    if (written[v.buffer].covers(Rect{v.row_begin, v.row_end, v.col_begin, v.col_end})) continue;
    const bool accumulating = in.opcode == Opcode::matmul && &v == &in.dst;
    return Violation{"read_unwritten",
                     std::string(opcode_name(in.opcode)) + (accumulating ? " accumulates into " : " reads ") +
                         region_text(program, v) + ", which no earlier instruction wrote" +
                         (accumulating ? " (start the accumulation with accumulate = false)" : "")};
  }
  return std::nullopt;
}

// Address high-water marks. The kernel API allocates first-fit, so the
// highest end address of any on-chip buffer is the footprint that must fit.
void measure_peaks(const std::vector<Buffer>& buffers, const TargetSpec& target, ValidationResult& result) {
  for (const Buffer& b : buffers) {
    if (b.space == MemorySpace::sbuf)
      result.sbuf_peak_bytes_per_partition =
          std::max(result.sbuf_peak_bytes_per_partition, b.byte_offset + b.bytes_per_partition());
    if (b.space == MemorySpace::psum)
      result.psum_peak_bytes_per_partition =
          std::max(result.psum_peak_bytes_per_partition, b.byte_offset + b.bytes_per_partition());
  }
  result.psum_peak_banks = static_cast<int>(
      (result.psum_peak_bytes_per_partition + target.psum_bank_bytes - 1) / target.psum_bank_bytes);
}

}  // namespace

ValidationResult validate_program(const Program& program, const TargetSpec& target) {
  ValidationResult result;
  const auto& buffers = program.buffers();
  const auto& instructions = program.instructions();
  measure_peaks(buffers, target, result);

  auto fail = [&](std::string rule, std::uint32_t location, const std::string& message) {
    result.valid = false;
    result.rule = std::move(rule);
    result.location = location;
    result.error = location_text(program, location) + ": " + message;
    return result;
  };
  if (!program.trace_errors().empty()) {
    const auto& e = program.trace_errors().front();
    return fail(e.rule, e.location, e.message);
  }

  std::vector<WrittenCoverage> written(buffers.size());
  for (std::size_t b = 0; b < buffers.size(); ++b)
    if (buffers[b].space == MemorySpace::hbm && buffers[b].role == Buffer::Role::input)
      written[b].full = true;
  // Placement of an on-chip buffer, checked at the first instruction that
  // uses it (that is the kernel line to blame).
  std::vector<bool> placed(buffers.size(), false);
  auto first_use = [&](BufferId id) -> MaybeViolation {
    if (placed[id]) return std::nullopt;
    placed[id] = true;
    return check_placement(buffers[id], target, result);
  };

  for (const Instruction& in : instructions) {
    const AccessList accesses = instruction_accesses(in);
    MaybeViolation violation;
    for (int a = 0; a < accesses.count && !violation; ++a)
      violation = first_use(accesses.items[a].view->buffer);
    if (!violation) violation = check_engine(in);
    if (!violation && in.opcode == Opcode::dma_copy && in.transpose)
      violation = check_dma_transpose(program, in);
    if (!violation && (in.opcode == Opcode::matmul || in.opcode == Opcode::transpose))
      violation = check_tensor_instruction(program, in, target);
    if (!violation && !in.pe_tile.whole()) violation = check_pe_tile(program, in, target);
    if (!violation) violation = check_reads(program, in, accesses, written);
    if (violation) return fail(violation->rule, in.location, violation->message);
    for (int a = 0; a < accesses.count; ++a) {
      if (!accesses.items[a].write) continue;
      const View& v = *accesses.items[a].view;
      const Buffer& b = program.buffer(v.buffer);
      written[v.buffer].add(Rect{v.row_begin, v.row_end, v.col_begin, v.col_end}, b.rows, b.cols);
    }
  }
  // Allocated but never used: blame the instruction after the allocation.
  for (BufferId id = 0; id < buffers.size(); ++id) {
    if (placed[id] || instructions.empty()) continue;
    const std::size_t at = std::min<std::size_t>(buffers[id].first_instruction, instructions.size() - 1);
    if (auto violation = first_use(id))
      return fail(violation->rule, instructions[at].location, violation->message);
  }
  return result;
}

}  // namespace autotune::sim
