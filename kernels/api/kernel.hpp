#pragma once
// The kernel API: an NKI-like C++ interface in which kernels are written.
//
// A kernel is ordinary C++ (loops, ifs, helper functions) that calls the
// methods of a `Kernel`. Running it once *traces* it into a sim::Program: every
// call appends one instruction recording the regions it reads and writes and
// the kernel source line that made it (std::source_location). The simulator
// then validates, schedules and (optionally) executes that program.
//
// Memory: kernel arguments are HBM tensors ([rows, cols], row-major). On-chip
// memory is allocated in pools: `sbuf_pool(name, bufs, rows, cols, dtype)`
// reserves `bufs` rotating slots of one tile shape; each `pool.next()` returns
// a fresh tile in the next slot. A pool with bufs = 2 is double buffering:
// the load of tile i+1 may overlap compute on tile i, because only the reuse
// of a slot orders a new writer after the old readers. A pool's slots are
// released when the pool object goes out of scope, so a pool declared inside
// a loop body frees its SBUF at the end of each iteration.
//
// Errors in the kernel's use of the API (a view outside its tile, mismatched
// shapes, a wrong memory space) do not throw: they are recorded as trace
// errors naming the rule and the source line, and make the program invalid.
#include <source_location>
#include <string>
#include <string_view>
#include <vector>

#include "sim/program.hpp"

namespace autotune::kernels {

using sim::ActivationFunction;
using sim::AluOp;
using sim::Dtype;
using sim::Engine;
using sim::MemorySpace;
using sim::PeTile;

class Kernel;

// A rectangular view of an HBM tensor or an on-chip tile. Slicing never
// checks bounds; the instruction that uses a view does (and records a trace
// error when it is outside its buffer).
struct Tensor {
  sim::View view;
  MemorySpace space = MemorySpace::hbm;
  Dtype dtype = Dtype::fp32;

  int rows() const { return view.rows(); }
  int cols() const { return view.cols(); }
  // Sub-view of rows [r0, r1) and columns [c0, c1), relative to this view.
  // A folded view can be sliced by rows only (all of its columns).
  Tensor slice(int r0, int r1, int c0, int c1) const;
  // This HBM view with every `factor` consecutive rows laid end to end as one
  // row: [rows, cols] -> [rows / factor, factor * cols], NKI's
  // `reshape`/rearrange "(r f) c -> r (f c)". One DMA then moves `factor`
  // rows into each partition, in one contiguous piece when the view spans
  // whole tensor rows. rows must be a multiple of `factor`, the view not
  // already folded, and the tensor in HBM (the instruction using it checks).
  Tensor fold_rows(int factor) const;
  Tensor row_range(int r0, int r1) const { return slice(r0, r1, 0, cols()); }
  Tensor col_range(int c0, int c1) const { return slice(0, rows(), c0, c1); }
};

// Something a tensor_scalar or activation takes as a scalar: an immediate, or a
// per-partition column [P, 1] broadcast along the free axis.
struct Scalar {
  Scalar(float value) : immediate(value) {}                                 // NOLINT: implicit on purpose
  Scalar(double value) : immediate(static_cast<float>(value)) {}            // NOLINT
  Scalar(const Tensor& column) : per_partition(column), is_tensor(true) {}  // NOLINT
  float immediate = 0.0f;
  Tensor per_partition;
  bool is_tensor = false;
};

class TilePool {
 public:
  TilePool(const TilePool&) = delete;
  TilePool& operator=(const TilePool&) = delete;
  TilePool(TilePool&& other) noexcept;
  ~TilePool();

  // A fresh tile in the next rotating slot. The previous tile of that slot
  // ends its life here.
  Tensor next(std::source_location where = std::source_location::current());
  int bufs() const { return static_cast<int>(slots_.size()); }

 private:
  friend class Kernel;
  struct Slot {
    std::int64_t byte_offset = 0;
    std::int64_t current_buffer = -1;
  };
  TilePool(Kernel* kernel, std::string name, MemorySpace space, int bufs, int rows, int cols, Dtype dtype);

  Kernel* kernel_;
  std::string name_;
  MemorySpace space_;
  int rows_, cols_;
  Dtype dtype_;
  std::vector<Slot> slots_;
  std::size_t next_slot_ = 0;
  std::int64_t tiles_made_ = 0;
};

struct KernelLimits {
  // PSUM is allocated in whole banks.
  std::int64_t psum_bank_bytes = 2048;
  // Partitions of SBUF and PSUM: the largest first axis of an on-chip tile
  // (NKI's nl.tile_size.pmax). Kernels size their row tiles with it.
  int partitions = 128;
  // SBUF bytes per partition a kernel may use (the target's usable size); 0
  // when unknown, so that a kernel choosing by it assumes nothing fits.
  std::int64_t sbuf_bytes_per_partition = 0;
};

class Kernel {
 public:
  using Where = std::source_location;

  explicit Kernel(sim::Program& program, KernelLimits limits = {});
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;

  // --- HBM tensors -------------------------------------------------------
  Tensor input(std::string name, int rows, int cols, Dtype dtype);
  Tensor output(std::string name, int rows, int cols, Dtype dtype);
  // HBM scratch space (e.g. a spilled intermediate), neither input nor output.
  Tensor hbm_scratch(std::string name, int rows, int cols, Dtype dtype);

  // --- on-chip allocation -------------------------------------------------
  TilePool sbuf_pool(std::string name, int bufs, int rows, int cols, Dtype dtype);
  TilePool psum_pool(std::string name, int bufs, int rows, int cols, Dtype dtype = Dtype::fp32);

  // --- instructions ---------------------------------------------------------
  // DMA between HBM and SBUF (either direction) or SBUF to SBUF. With
  // `transpose`, dst[c, r] = src[r, c]; more generally src [R, n * P] goes to
  // dst [P, n * R], each [R, P] block j of the source transposed into dst
  // columns [j * R, (j + 1) * R) (NKI's 4-d dma_transpose, one instruction for
  // n blocks). Transposes land in SBUF.
  void dma_copy(const Tensor& dst, const Tensor& src, bool transpose = false, Where where = Where::current());
  // dst[M, N] (+)= stationary[K, M]^T . moving[K, N]; dst in PSUM (fp32).
  // accumulate = false starts a new accumulation group. `tile` runs it on a
  // part of the PE array (nki.isa.nc_matmul's tile_position and tile_size)
  // so that matmuls on disjoint tiles run side by side: the operands must
  // then lie in the tile's row partitions and the result in its column
  // partitions (the simulator's pe_tile_* rules).
  void matmul(const Tensor& dst, const Tensor& stationary, const Tensor& moving, bool accumulate,
              sim::PeTile tile = {}, Where where = Where::current());
  // dst[N, P] = src[P, N]^T on the tensor engine; dst in PSUM.
  void transpose(const Tensor& dst, const Tensor& src, Where where = Where::current());
  // dst = f(src * scale + bias) on the scalar engine; bias and scale are
  // immediates or per-partition columns [P, 1]. If `row_sum` is given
  // ([P, 1]), it receives the sum along the free axis of the result.
  void activation(const Tensor& dst, const Tensor& src, ActivationFunction function, Scalar bias = 0.0f,
                  Scalar scale = 1.0f, const Tensor* row_sum = nullptr, Where where = Where::current());
  void tensor_tensor(const Tensor& dst, const Tensor& a, const Tensor& b, AluOp op,
                     Engine engine = Engine::vector, Where where = Where::current());
  // dst = (src op0 operand0) op1 operand1
  void tensor_scalar(const Tensor& dst, const Tensor& src, AluOp op0, Scalar operand0,
                     AluOp op1 = AluOp::bypass, Scalar operand1 = 0.0f, Engine engine = Engine::vector,
                     Where where = Where::current());
  // dst = src op0 operand0, and reduce_dst[P, 1] = that result reduced (add,
  // max, min, multiply) along the free axis, in one pass
  // (nki.isa.tensor_scalar_reduce).
  void tensor_scalar_reduce(const Tensor& dst, const Tensor& src, AluOp op0, Scalar operand0, AluOp reduce_op,
                            const Tensor& reduce_dst, Engine engine = Engine::vector,
                            Where where = Where::current());
  // dst = (a op0 operand0) op1 b in one pass (nki.isa.scalar_tensor_tensor),
  // e.g. acc = acc * alpha + pv.
  void scalar_tensor_tensor(const Tensor& dst, const Tensor& a, AluOp op0, Scalar operand0, AluOp op1,
                            const Tensor& b, Engine engine = Engine::vector, Where where = Where::current());
  // A scan along the free axis on the vector engine (nki.isa.tensor_tensor_scan):
  //   dst[:, 0] = (data0[:, 0] op0 initial) op1 data1[:, 0]
  //   dst[:, i] = (data0[:, i] op0 dst[:, i-1]) op1 data1[:, i]
  // in float32, the running state kept in float32. `initial` is an immediate
  // or a per-partition column [P, 1] (e.g. the last column of the previous
  // chunk's scan). data0 and data1 may not both be in PSUM. A linear
  // recurrence h = a * h + b is op0 = multiply, op1 = add.
  void tensor_tensor_scan(const Tensor& dst, const Tensor& data0, const Tensor& data1, Scalar initial,
                          AluOp op0, AluOp op1, Where where = Where::current());
  // dst[P, 1] = reduction (add, max, min, multiply) of src along the free axis.
  void tensor_reduce(const Tensor& dst, const Tensor& src, AluOp op, Engine engine = Engine::vector,
                     Where where = Where::current());
  void tensor_copy(const Tensor& dst, const Tensor& src, Engine engine = Engine::vector,
                   Where where = Where::current());
  void reciprocal(const Tensor& dst, const Tensor& src, Where where = Where::current());
  void memset(const Tensor& dst, float value, Engine engine = Engine::vector, Where where = Where::current());
  // dst[p, c] = base + p * partition_step + c * col_step (GpSimd).
  void iota(const Tensor& dst, float base, int partition_step, int col_step, Where where = Where::current());
  // dst[p, c] = (offset + p * partition_step + c * col_step >= 0) ? src[p, c] : fill (GpSimd).
  // The building block of causal masks.
  void affine_select(const Tensor& dst, const Tensor& src, float offset, int partition_step, int col_step,
                     float fill, Where where = Where::current());

  sim::Program& program() { return program_; }
  const KernelLimits& limits() const { return limits_; }

 private:
  friend class TilePool;
  struct FreeRange {
    std::int64_t begin, end;
  };
  std::int64_t allocate(MemorySpace space, std::int64_t bytes);
  void deallocate(MemorySpace space, std::int64_t offset, std::int64_t bytes);
  Tensor add_tensor(std::string name, MemorySpace space, sim::Buffer::Role role, int rows, int cols,
                    Dtype dtype, std::int64_t byte_offset);
  // Records a trace error and returns false when `t` is not a valid view or
  // not in one of the allowed memory spaces.
  bool check(const Tensor& t, std::initializer_list<MemorySpace> allowed, std::string_view what,
             std::uint32_t location);
  void trace_error(std::string rule, std::string message, std::uint32_t location);
  // Fills a tensor_scalar-like instruction's per-partition operand; false
  // (with a trace error) when it is not a [rows, 1] on-chip column.
  bool set_scalar_operand(sim::ScalarOperand& operand, const Scalar& scalar, int rows, std::string_view what,
                          std::uint32_t location);
  sim::InstructionId emit(sim::Instruction& instruction, const Where& where);
  std::uint32_t locate(const Where& where) { return program_.intern_location(where); }

  sim::Program& program_;
  KernelLimits limits_;
  // Live on-chip allocations per memory space: sorted, non-overlapping
  // [begin, end) byte ranges per partition. First fit, unbounded: whether
  // the peak fits the target is the simulator's rule to check.
  std::vector<FreeRange> used_[3];
};

}  // namespace autotune::kernels
