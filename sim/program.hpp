#pragma once
// The instruction program a kernel is traced into, and that the simulator
// validates, schedules and executes.
//
// A program is a list of buffers and a list of instructions in program order.
// The simulator knows nothing of kernel families or parameter names: it sees
// only buffers, instructions, the regions they read and write, and the source
// line that emitted each instruction.
//
// Buffers are two-dimensional: [rows, cols] elements. For on-chip buffers
// (SBUF, PSUM) rows are partitions and the buffer occupies partitions
// [partition_offset, partition_offset + rows) and bytes
// [byte_offset, byte_offset + cols * dtype_bytes) of every one of them. Several
// buffers may occupy the same on-chip address at different times (rotating
// pipeline buffers); timing dependencies are derived on those physical
// addresses, so reusing an address orders the new writer after the old
// readers (write-after-read), which is what bounds overlap at a given pipeline
// depth. HBM tensors each have their own address space.
#include <cstdint>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/error.hpp"

namespace autotune::sim {

enum class Dtype : std::uint8_t { fp32, bf16, fp16, int32 };
int dtype_bytes(Dtype dtype);
std::string_view dtype_name(Dtype dtype);
std::optional<Dtype> parse_dtype(std::string_view name);  // "fp32", "bf16", "fp16", "int32"
// For a dtype name parse_dtype refuses that real NeuronCores have (fp8 in its
// forms: fp8, fp8_e4m3, float8_e5m2, ...): why it is refused, e.g. "fp8 is
// supported by trn2 hardware but not modelled by this simulator"; "" for any
// other name. Appended to refusals so a user does not take it for a typo.
std::string unmodelled_dtype_reason(std::string_view name);
// Rounds a value to what `dtype` stores (round-to-nearest-even for bf16/fp16).
float round_to_dtype(float value, Dtype dtype);

enum class MemorySpace : std::uint8_t { hbm, sbuf, psum };
std::string_view memory_space_name(MemorySpace space);

// The engines of one NeuronCore. DMA is modelled as queues, see the target.
enum class Engine : std::uint8_t { tensor, vector, scalar, gpsimd, dma };
inline constexpr int kEngineCount = 5;
std::string_view engine_name(Engine engine);

using BufferId = std::uint32_t;
using InstructionId = std::uint32_t;

struct Buffer {
  std::string name;
  MemorySpace space = MemorySpace::hbm;
  Dtype dtype = Dtype::fp32;
  int rows = 0;
  int cols = 0;
  // On-chip placement (ignored for HBM).
  int partition_offset = 0;
  std::int64_t byte_offset = 0;
  // HBM tensors: kernel inputs are initialised by the host, outputs are read
  // back; scratch tensors are neither. On-chip buffers are always `scratch`.
  enum class Role : std::uint8_t { input, output, scratch } role = Role::scratch;
  // Lifetime of on-chip buffers in program order: allocated before
  // instruction `first_instruction`, released before `end_instruction`
  // (UINT32_MAX: live until the end). Used for SBUF/PSUM peak and overflow.
  InstructionId first_instruction = 0;
  InstructionId end_instruction = UINT32_MAX;
  std::int64_t bytes_per_partition() const { return std::int64_t(cols) * dtype_bytes(dtype); }
};

// A view of the rectangle [row_begin, row_end) x [col_begin, col_end) of a
// buffer. With fold > 1 (an HBM access pattern "(r f) c -> r (f c)"), each
// view row is `fold` consecutive buffer rows of the rectangle laid end to end:
// view element (r, c) is buffer element (row_begin + r * fold + c / width,
// col_begin + c % width), width = col_end - col_begin. The rectangle is
// exactly the set of elements touched, whatever the fold.
struct View {
  BufferId buffer = 0;
  int row_begin = 0, row_end = 0;
  int col_begin = 0, col_end = 0;
  int fold = 1;
  int width() const { return col_end - col_begin; }
  int rows() const { return (row_end - row_begin) / fold; }
  int cols() const { return width() * fold; }
  std::int64_t elements() const { return std::int64_t(rows()) * cols(); }
  // Every element access goes through these: an unfolded view (all but some
  // DMA operands) skips the division.
  int buffer_row(int r, int c) const {
    return fold == 1 ? row_begin + r : row_begin + r * fold + c / width();
  }
  int buffer_col(int c) const { return fold == 1 ? col_begin + c : col_begin + c % width(); }
  // Elements of a view row that are contiguous in a row-major buffer of
  // `buffer_cols` columns: the whole folded row when it spans full buffer rows.
  int contiguous_elements(int buffer_cols) const {
    return fold > 1 && width() != buffer_cols ? width() : cols();
  }
};

enum class Opcode : std::uint8_t {
  dma_copy,              // dst <- src, one side HBM; a transposing copy swaps axes
  matmul,                // psum dst[M,N] (+)= stationary[K,M]^T . moving[K,N]
  transpose,             // psum dst[N,P] <- src[P,N] on the tensor engine
  activation,            // dst = f(src * scale + bias); optional row sum into accumulate_dst
  tensor_tensor,         // dst = a (op) b, elementwise
  tensor_scalar,         // dst = (src op0 operand0) op1 operand1; operands immediate or per-partition [P,1]
  tensor_reduce,         // dst[P,1] = reduce(op) of src along the free axis
  tensor_copy,           // dst = src (with dtype conversion)
  reciprocal,            // dst = 1 / src
  memset,                // dst = immediate
  iota,                  // dst[p,c] = base + p * partition_step + c * col_step
  affine_select,         // dst[p,c] = (offset + p*partition_step + c*col_step >= 0) ? src : fill  (GpSimd)
  scalar_tensor_tensor,  // dst = (a op0 operand0) op1 b: a scale and an elementwise op in one pass
  tensor_tensor_scan,    // dst[:, i] = (data0[:, i] op0 dst[:, i-1]) op1 data1[:, i], from operand0 (vector)
};
inline constexpr int kOpcodeCount = 14;
std::string_view opcode_name(Opcode opcode);

enum class AluOp : std::uint8_t { bypass, add, subtract, multiply, divide, max, min, pow };
std::string_view alu_op_name(AluOp op);
double apply_alu(AluOp op, double a, double b);

enum class ActivationFunction : std::uint8_t {
  identity,
  exp,
  tanh,
  relu,
  sigmoid,
  square,
  sqrt,
  rsqrt,
  gelu,
  silu
};
std::string_view activation_name(ActivationFunction function);
double apply_activation(ActivationFunction function, double x);

// An immediate or a per-partition column [P,1] broadcast along the free axis.
struct ScalarOperand {
  float immediate = 0.0f;
  std::optional<View> per_partition;
};

struct SourceLocation {
  std::string file;
  std::uint32_t line = 0;
  std::string function;
};

// The part of the tensor engine's 128x128 PE array a matmul runs on
// (nki.isa.nc_matmul's tile_position and tile_size): PE rows
// [row_start, row_start + row_size), fed by the SBUF partitions of the same
// numbers, and PE columns [col_start, col_start + col_size), which write the
// PSUM partitions of the same numbers. Matmuls on disjoint tiles may run side
// by side. The default is the whole array.
struct PeTile {
  std::uint8_t row_start = 0, row_size = 128, col_start = 0, col_size = 128;
  bool whole() const { return row_start == 0 && row_size == 128 && col_start == 0 && col_size == 128; }
  bool operator==(const PeTile&) const = default;
};

struct Instruction {
  Opcode opcode = Opcode::memset;
  Engine engine = Engine::vector;
  View dst;
  // Tensor sources in a fixed role order per opcode:
  //  matmul: {stationary, moving}; tensor_tensor, scalar_tensor_tensor: {a, b};
  //  tensor_tensor_scan: {data0, data1}; others: {src}.
  View src[2];
  std::uint8_t src_count = 0;
  // Per-opcode attributes.
  AluOp alu0 = AluOp::bypass, alu1 = AluOp::bypass;  // tensor_scalar ops; tensor_tensor/reduce use alu0
  // tensor_scalar operands; activation: operand0 = bias, operand1 = a per-partition scale (an
  // immediate operand1 leaves `scale`); tensor_tensor_scan: operand0 = the initial state.
  ScalarOperand operand0, operand1;
  ActivationFunction function = ActivationFunction::identity;
  float scale = 1.0f;                    // activation scale
  float immediate = 0.0f;                // memset value, affine_select fill, iota base
                                         // (affine_select offset: operand0.immediate)
  int partition_step = 0, col_step = 0;  // iota / affine_select
  bool accumulate = false;               // matmul: add into dst instead of overwriting
  bool transpose = false;                // dma_copy: swap axes between src and dst
  PeTile pe_tile;                        // matmul: the PE tile it runs on
  // activation: row sums of the result; tensor_scalar: the result reduced
  // along the free axis with accumulate_op; [P,1].
  std::optional<View> accumulate_dst;
  AluOp accumulate_op = AluOp::add;
  std::uint32_t location = 0;  // index into Program::locations()
};

// Instructions a program may hold. Tracing, scheduling and profiling cost
// about kBytesPerInstruction each (measured: 25M instructions took 9.8 GB),
// so this bounds one simulation to about 6 GB.
inline constexpr std::size_t kMaxInstructions = 16'000'000;
inline constexpr std::size_t kBytesPerInstruction = 390;

// Thrown while tracing a program beyond kMaxInstructions: the configuration
// is invalid at this shape (smaller tiles than the shape can afford).
class ProgramTooLarge : public UserError {
 public:
  using UserError::UserError;
};

class Program {
 public:
  BufferId add_buffer(Buffer buffer);
  // Ends the lifetime of an on-chip buffer at the current end of the program.
  void release_buffer(BufferId id);
  // Appends; past the instruction limit (kMaxInstructions unless set)
  // throws ProgramTooLarge, before the trace (and later its schedule)
  // outgrows the machine's memory.
  InstructionId append(const Instruction& instruction);
  void set_instruction_limit(std::size_t limit) { instruction_limit_ = limit; }
  std::uint32_t intern_location(const std::source_location& where);

  const std::vector<Buffer>& buffers() const { return buffers_; }
  const Buffer& buffer(BufferId id) const { return buffers_[id]; }
  const std::vector<Instruction>& instructions() const { return instructions_; }
  const std::vector<SourceLocation>& locations() const { return locations_; }
  std::size_t size() const { return instructions_.size(); }
  // A hash of what the program computes and how it is scheduled: every
  // buffer's placement, dtype, shape and role, every instruction's opcode,
  // engine, views and attributes, and the trace errors. Names and source
  // locations are left out: two programs with equal hashes simulate alike.
  std::uint64_t content_hash() const;
  // The same without the buffers' placement and allocated sizes: programs
  // that run the same instructions on the same views of buffers laid out
  // differently (a larger tile allocated, half of it used) hash alike. They
  // simulate alike when their dependencies also agree (dependency_signature
  // in sim/simulator.hpp), since placement acts on timing only through them.
  std::uint64_t layout_free_hash() const;

  // Kernel-level errors found while tracing (e.g. a shape mismatch). The
  // simulator reports the first as the reason the program is invalid.
  struct TraceError {
    std::string rule;
    std::string message;
    std::uint32_t location = 0;
  };
  void add_trace_error(TraceError error) { trace_errors_.push_back(std::move(error)); }
  const std::vector<TraceError>& trace_errors() const { return trace_errors_; }

 private:
  std::uint64_t hash(bool with_layout) const;

  std::size_t instruction_limit_ = kMaxInstructions;
  std::vector<Buffer> buffers_;
  std::vector<Instruction> instructions_;
  std::vector<SourceLocation> locations_;
  // Keyed by the (stable) file-name pointer and line of std::source_location,
  // so tracing does not build a string per instruction.
  struct LocationKey {
    const char* file;
    std::uint32_t line;
    bool operator==(const LocationKey&) const = default;
  };
  struct LocationKeyHash {
    std::size_t operator()(const LocationKey& k) const {
      return std::hash<const void*>()(k.file) * 31u + k.line;
    }
  };
  std::unordered_map<LocationKey, std::uint32_t, LocationKeyHash> location_index_;
  std::vector<TraceError> trace_errors_;
};

}  // namespace autotune::sim
