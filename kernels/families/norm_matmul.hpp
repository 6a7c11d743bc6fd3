#pragma once
// RMSNorm fused with a matmul, NKIBench's three tasks (x [M, K], w [K, N],
// out [M, N], all row-major in HBM as the references take them):
//
//   rmsnorm_matmul       out = (x / sqrt(mean(x^2))) . w                    (no eps, no weight)
//   add_rmsnorm_matmul   a = x + z; out = (a / sqrt(mean(a^2) + 1e-5) * g) . w,  z [M, K], g [1, K]
//   matmul_add_rmsnorm   y = x . w + z; out = y / sqrt(mean(y^2) + 1e-5) * g,    z [M, N], g [1, N]
//
// x is given untransposed, so its tiles are transposed on the tensor engine
// (K onto the partitions) before they become the stationary operand, as
// NKIBench's kernels do (fp32 has no transposing DMA). Products accumulate in
// PSUM in fp32; results are stored in the operands' dtype.
//
// The expert (`fused`) structures share what an NKI engineer does with these
// shapes: w is loaded once and stays in SBUF; the row tiles of x are loaded,
// their statistics taken and transposed ahead of the matmuls that use them
// (detail::pipelined_row_tiles), so that the tensor engine goes from the
// matmuls of one row tile to the next without waiting; and the normalisation
// rides on instructions the kernel runs anyway:
//  - before the product (rmsnorm_matmul, add_rmsnorm_matmul) the per-row
//    1/rms commutes with the product: diag(1/rms) (x . w), applied as the
//    PSUM banks are drained (one tensor_scalar with a per-partition operand);
//    g scales the rows of w ((a * g) . w = a . (diag(g) w)), once, when w is
//    loaded;
//  - after the product (matmul_add_rmsnorm) each bank is drained with the
//    residual added (tensor_tensor reading PSUM), its squares summed into a
//    column by one activation, and the whole row scaled once its 1/rms is known.
#include <algorithm>
#include <functional>
#include <optional>
#include <vector>

#include "kernels/api/kernel.hpp"
#include "kernels/api/tiling.hpp"
#include "kernels/families/gemm.hpp"
#include "kernels/families/rmsnorm.hpp"

namespace autotune::kernels {

// The eps of add_rmsnorm_matmul and matmul_add_rmsnorm (NKIBench's references; rmsnorm_matmul has none).
inline constexpr float kNormMatmulEpsilon = 1e-5f;

struct NormMatmulShape {
  int M = 0, N = 0, K = 0;
};

// rmsnorm_matmul's starting kernel (compiled NKI): per block of 8 row tiles,
// each row tile loaded, squared, scaled by 1/K and reduced per 512-column
// half, its sums added, rsqrt; loaded again, scaled by 1/rms per half and
// transposed [128, 128] at a time on the tensor engine into the block's xT;
// then per 1024 columns of w, the block's [K, 1024] slice of w loaded and
// each row tile's [128, 512] products accumulated over K, drained into a
// [128, 1024] tile and stored. Single buffers.
struct RmsnormMatmulNaiveParams {};

// add_rmsnorm_matmul's starting kernel: per row tile, x and z loaded and
// added, one instruction per step of the normalisation (square, sum, / K,
// + eps, rsqrt, * 1/rms, * g); then per [128, 512] output tile and K tile a
// [128, 512] tile of w loaded and the row tile's [128, 128] slice transposed
// (nl.matmul transposes its left operand) before its matmul; drained, stored.
// Single buffers.
struct AddRmsnormMatmulNaiveParams {};

// matmul_add_rmsnorm's starting kernel: per row tile, x loaded; per
// [128, 512] tile of the product and K tile, a tile of w loaded and x's
// [128, 128] slice transposed before its matmul; the row of products drained
// into SBUF, z loaded and added, then one instruction per step of the
// normalisation (square, sum, / N, + eps, rsqrt, * 1/rms, * g); stored.
// Single buffers.
struct MatmulAddRmsnormNaiveParams {};

// rmsnorm_matmul and add_rmsnorm_matmul, fused (see above), in the phases of
// detail::pipelined_row_tiles. Per row tile: prepare loads x (and z, added in
// place), sums the squares of each row in one activation and takes 1/rms in
// another; transpose transposes the row tile, four [128, 128] transposes per
// PSUM bank, each bank drained by one instruction; steps runs the matmuls of
// unroll_factor banks (512 columns each) per step against the resident w,
// drains each step scaled by 1/rms, and stores the output row tile with one DMA.
struct NormMatmulFusedParams {
  int pipeline_depth = 2;    // row tiles transposed ahead of the matmuls, plus one (rotating xT buffers)
  int unroll_factor = 2;     // PSUM banks (512 columns) per matmul step and drain instruction
  int transpose_engine = 0;  // transposed banks drained by 0: the vector engine, 1: the scalar engine
  int drain_engine = 0;      // output banks drained by 0: vector, 1: scalar, 2: alternating by step
};

// matmul_add_rmsnorm, fused (see above), in the phases of
// detail::pipelined_row_tiles. Per row tile: transpose loads x in [128, 512]
// chunks, transposes each (four transposes per PSUM bank, one drain) and loads
// z's row; steps runs the matmuls of unroll_factor banks per step against the
// resident w, drains each step into z's row with the residual added (vector
// engine: it reads PSUM and SBUF) and sums each bank's squares into a column
// (scalar engine); finalize takes 1/rms, scales the row by 1/rms and g
// (`scale_engine`) and stores it.
struct MatmulAddRmsnormFusedParams {
  int pipeline_depth = 1;    // row tiles transposed ahead of the matmuls, plus one (rotating xT buffers)
  int unroll_factor = 2;     // PSUM banks (512 columns) per matmul step, drain and square-sum
  int transpose_engine = 0;  // transposed banks drained by 0: the vector engine, 1: the scalar engine
  int scale_engine = 0;      // y * 1/rms * g by 0: one vector instruction, 1: * 1/rms on the scalar
                             // engine then * g on GpSimd
};

namespace detail {

// The starting kernels' product of a row tile with w's columns [n): per K tile a tile of w loaded
// and the rows' K slice transposed on the tensor engine, again for every n, accumulated in `ps`.
template <Dtype D>
class ReloadingRowProduct {
 public:
  ReloadingRowProduct(Kernel& kernel, int tile_n)
      : w_tiles_(kernel.sbuf_pool("w_tile", 1, kernel.limits().partitions, tile_n, D)),
        transpose_psum_(
            kernel.psum_pool("transpose_psum", 1, kernel.limits().partitions, kernel.limits().partitions)),
        lhsT_tiles_(kernel.sbuf_pool("lhsT", 1, kernel.limits().partitions, kernel.limits().partitions, D)) {}

  void operator()(Kernel& kernel, const Tensor& ps, const Tensor& rows, const Tensor& w, const TileSpan& n) {
    for (TileSpan k : tiles(w.rows(), kernel.limits().partitions)) {
      const Tensor wt = w_tiles_.next().slice(0, k.size, 0, n.size);
      kernel.dma_copy(wt, w.slice(k.begin, k.end(), n.begin, n.end()));
      const Tensor tp = transpose_psum_.next().slice(0, k.size, 0, rows.rows());
      kernel.transpose(tp, rows.col_range(k.begin, k.end()));
      const Tensor lhsT = lhsT_tiles_.next().slice(0, k.size, 0, rows.rows());
      kernel.tensor_copy(lhsT, tp);
      kernel.matmul(ps, lhsT, wt, k.index > 0);
    }
  }

 private:
  TilePool w_tiles_, transpose_psum_, lhsT_tiles_;
};

// The starting kernels' residual add and RMSNorm of a row tile, one instruction per step:
// a = lhs + rhs, 1/rms = rsqrt(sum(a^2) / cols + eps), then a * 1/rms * g (g broadcast to the rows).
template <Dtype D>
class StepwiseAddRmsnorm {
 public:
  StepwiseAddRmsnorm(Kernel& kernel, int cols)
      : cols_(cols),
        a_tiles_(kernel.sbuf_pool("a_tile", 1, kernel.limits().partitions, cols, D)),
        square_tiles_(kernel.sbuf_pool("in_square", 1, kernel.limits().partitions, cols, Dtype::fp32)),
        columns_(kernel.sbuf_pool("row_stats", 4, kernel.limits().partitions, 1, Dtype::fp32)),
        norm_tiles_(kernel.sbuf_pool("rmsnorm_out_tile", 1, kernel.limits().partitions, cols, D)) {}

  Tensor operator()(Kernel& kernel, const Tensor& lhs, const Tensor& rhs, const Tensor& g_bcast) {
    const int rows = lhs.rows();
    const Tensor a = a_tiles_.next().row_range(0, rows);
    kernel.tensor_tensor(a, lhs, rhs, AluOp::add);
    const Tensor sq = square_tiles_.next().row_range(0, rows);
    kernel.activation(sq, a, ActivationFunction::square);
    const Tensor sum = columns_.next().row_range(0, rows);
    kernel.tensor_reduce(sum, sq, AluOp::add);
    const Tensor mean = columns_.next().row_range(0, rows);
    kernel.tensor_scalar(mean, sum, AluOp::multiply, 1.0f / float(cols_));
    const Tensor biased = columns_.next().row_range(0, rows);
    kernel.tensor_scalar(biased, mean, AluOp::add, kNormMatmulEpsilon);
    const Tensor inv = columns_.next().row_range(0, rows);
    kernel.activation(inv, biased, ActivationFunction::rsqrt);
    const Tensor normalised = norm_tiles_.next().row_range(0, rows);
    kernel.tensor_scalar(normalised, a, AluOp::multiply, inv);
    kernel.tensor_tensor(normalised, normalised, g_bcast.row_range(0, rows), AluOp::multiply);
    return normalised;
  }

 private:
  int cols_;
  TilePool a_tiles_, square_tiles_, columns_, norm_tiles_;
};

inline constexpr int kNormMatmulBank = 512;  // fp32 columns of one PSUM bank

// dst = src (PSUM) on the vector engine, or the scalar engine (an identity activation).
inline void norm_matmul_copy(Kernel& kernel, const Tensor& dst, const Tensor& src, bool on_scalar,
                             Kernel::Where where = Kernel::Where::current()) {
  if (on_scalar)
    kernel.activation(dst, src, ActivationFunction::identity, 0.0f, 1.0f, nullptr, where);
  else
    kernel.tensor_copy(dst, src, Engine::vector, where);
}

// w [K, N] loaded whole into one SBUF tile: K tile k at partitions [0, k.size),
// columns [k.index * N, + N). One DMA per K tile.
inline void load_resident_rhs(Kernel& kernel, const Tensor& w, const Tensor& tile) {
  const int P = kernel.limits().partitions;
  const int N = w.cols();
  for (TileSpan k : tiles(w.rows(), P))
    kernel.dma_copy(tile.slice(0, k.size, k.index * N, (k.index + 1) * N), w.row_range(k.begin, k.end()));
}

// xT[k - K tile's first, k.index * rows + r] = x[r, k] for the `rows` rows
// of an SBUF row tile holding columns [k0, k0 + width) of x (k0 a multiple of
// P): [128, 128] transposes on the tensor engine, four to a PSUM bank side by
// side, each bank drained by one instruction (a ragged last K tile, on fewer
// partitions, by a second).
inline void transpose_row_tile(Kernel& kernel, const Tensor& xT, const Tensor& row_tile, int rows, int k0,
                               int width, TilePool& banks, bool drain_on_scalar) {
  const int P = kernel.limits().partitions;
  const int per_bank = kNormMatmulBank / P;
  for (TileSpan group : tiles(width, per_bank * P)) {
    const Tensor bank = banks.next();
    int full = 0;  // tiles of P partitions; only the last K tile may have fewer
    for (TileSpan k : tiles(group, P)) {
      const int j = k.offset / P;
      kernel.transpose(bank.slice(0, k.size, j * rows, (j + 1) * rows),
                       row_tile.slice(0, rows, k.begin, k.end()));
      if (k.size == P) ++full;
    }
    const int first = (k0 + group.begin) / P;  // the group's first K tile
    if (full > 0)
      norm_matmul_copy(kernel, xT.slice(0, P, first * rows, (first + full) * rows),
                       bank.slice(0, P, 0, full * rows), drain_on_scalar);
    if (full < tile_count(group.size, P)) {
      const int ragged = group.size - full * P;
      norm_matmul_copy(kernel, xT.slice(0, ragged, (first + full) * rows, (first + full + 1) * rows),
                       bank.slice(0, ragged, full * rows, (full + 1) * rows), drain_on_scalar);
    }
  }
}

// The matmuls of one step of output columns for a row tile: psum (+)= xT[k]^T
// . w[k][:, step] over the K tiles, one matmul per bank (gemm's matmul_step),
// the banks of a step sharing each stationary xT tile.
inline void row_tile_matmuls(Kernel& kernel, const Tensor& psum, const Tensor& xT, const Tensor& w_resident,
                             int rows, int K, int N, const TileSpan& step) {
  const int P = kernel.limits().partitions;
  for (TileSpan k : tiles(K, P)) {
    const int wcol = k.index * N + step.begin;
    matmul_step(kernel, psum, xT.slice(0, k.size, k.index * rows, (k.index + 1) * rows),
                w_resident.slice(0, k.size, wcol, wcol + step.size), kNormMatmulBank, k.index > 0);
  }
}

// The phases of a row tile in the fused variants, issued in software-pipelined
// order so that each engine's in-order stream holds work that is ready:
// prepare (loads, element work, statistics) runs one row tile ahead of
// transpose (the tensor engine's transposes and their drains), which runs
// `lookahead` row tiles ahead of steps (the matmuls and their drains), and
// finalize follows steps one row tile late, after the next row tile's
// transposes, so that work waiting on a row's last drain does not hold up
// the engines that the next row's transposes need. Per iteration j: prepare(j
// + 1), transpose(j), finalize(j - lookahead - 1), steps(j - lookahead).
struct RowTilePhases {
  std::function<void(const TileSpan&)> prepare, transpose, steps, finalize;
};
inline void pipelined_row_tiles(int M, int P, int lookahead, const RowTilePhases& phases) {
  std::vector<TileSpan> row_tiles;
  for (TileSpan m : tiles(M, P)) row_tiles.push_back(m);
  const int count = static_cast<int>(row_tiles.size());
  auto run = [&](const std::function<void(const TileSpan&)>& phase, int i) {
    if (phase && i >= 0 && i < count) phase(row_tiles[std::size_t(i)]);
  };
  run(phases.prepare, 0);
  for (int j = 0; j < count + lookahead + 1; ++j) {
    run(phases.prepare, j + 1);
    run(phases.transpose, j);
    run(phases.finalize, j - lookahead - 1);
    run(phases.steps, j - lookahead);
  }
}

// What distinguishes rmsnorm_matmul from add_rmsnorm_matmul.
struct NormBeforeMatmul {
  bool residual = false;  // a = x + z before the normalisation
  bool gamma = false;     // the normalised rows times g [1, K]
  float epsilon = 0.0f;
};

template <Dtype D>
void norm_matmul_fused(Kernel& kernel, const NormMatmulShape& shape, const NormBeforeMatmul& form,
                       const NormMatmulFusedParams& p) {
  Tensor x = kernel.input("x", shape.M, shape.K, D);
  Tensor w = kernel.input("w", shape.K, shape.N, D);
  Tensor z, g;
  if (form.residual) z = kernel.input("z", shape.M, shape.K, D);
  if (form.gamma) g = kernel.input("g", 1, shape.K, D);
  Tensor out = kernel.output("out", shape.M, shape.N, D);
  const int P = kernel.limits().partitions;
  const int k_tiles = tile_count(shape.K, P);
  const int depth = std::max(p.pipeline_depth, 1);
  const int step_n = kNormMatmulBank * p.unroll_factor;

  TilePool w_pool = kernel.sbuf_pool("w_resident", 1, P, k_tiles * shape.N, D);
  const Tensor w_resident = w_pool.next();
  // g[k] onto partition k of each K tile (g^T . 1 on the tensor engine), its
  // PSUM released before the main loop's.
  TilePool g_column_pool = kernel.sbuf_pool("g_columns", 1, P, k_tiles, Dtype::fp32);
  const Tensor g_columns = g_column_pool.next();
  if (form.gamma) {
    TilePool row_pool = kernel.sbuf_pool("g_row", 1, 1, shape.K, D);
    TilePool one_pool = kernel.sbuf_pool("one", 1, 1, 1, D);
    TilePool column_psum = kernel.psum_pool("g_psum", 1, P, k_tiles);
    const Tensor row = row_pool.next(), one = one_pool.next(), columns_psum = column_psum.next();
    kernel.dma_copy(row, g);
    kernel.memset(one, 1.0f);
    for (TileSpan k : tiles(shape.K, P))
      kernel.matmul(columns_psum.slice(0, k.size, k.index, k.index + 1), row.col_range(k.begin, k.end()), one,
                    false);
    const int full = shape.K / P;  // columns of P partitions; a ragged last one on fewer
    if (full > 0) kernel.tensor_copy(g_columns.slice(0, P, 0, full), columns_psum.slice(0, P, 0, full));
    if (full < k_tiles)
      kernel.tensor_copy(g_columns.slice(0, shape.K - full * P, full, k_tiles),
                         columns_psum.slice(0, shape.K - full * P, full, k_tiles));
  }
  // w loaded before the first matmuls, behind the first row tiles' loads;
  // its rows scaled by g on the scalar engine.
  auto load_w = [&]() {
    load_resident_rhs(kernel, w, w_resident);
    if (!form.gamma) return;
    for (TileSpan k : tiles(shape.K, P)) {
      const Tensor rows = w_resident.slice(0, k.size, k.index * shape.N, (k.index + 1) * shape.N);
      kernel.tensor_scalar(rows, rows, AluOp::multiply, g_columns.slice(0, k.size, k.index, k.index + 1),
                           AluOp::bypass, 0.0f, Engine::scalar);
    }
  };

  TilePool x_rows = kernel.sbuf_pool("x_rows", 2, P, shape.K, D);
  std::optional<TilePool> z_rows;
  if (form.residual) z_rows.emplace(kernel.sbuf_pool("z_rows", 2, P, shape.K, D));
  TilePool squares = kernel.sbuf_pool("squares", 1, P, shape.K, Dtype::fp32);  // discarded: the sums count
  TilePool sums = kernel.sbuf_pool("sum_sq", 2, P, 1, Dtype::fp32);
  TilePool inv_rms = kernel.sbuf_pool("inv_rms", depth + 1, P, 1, Dtype::fp32);
  TilePool xT_tiles = kernel.sbuf_pool("xT", depth, P, k_tiles * P, D);
  TilePool transpose_banks = kernel.psum_pool("xT_psum", 2, P, kNormMatmulBank);
  TilePool out_psum = kernel.psum_pool("out_psum", 2, P, step_n);
  TilePool out_rows = kernel.sbuf_pool("out_rows", 2, P, shape.N, D);

  // By row tile: x (+ z) after prepare, its 1/rms, its transpose.
  std::vector<Tensor> rows_of(std::size_t(tile_count(shape.M, P))), inv_of(rows_of.size()),
      xT_of(rows_of.size());
  bool w_loaded = false;
  int step_count = 0;
  RowTilePhases phases;
  phases.prepare = [&](const TileSpan& m) {
    const Tensor xt = x_rows.next().row_range(0, m.size);
    kernel.dma_copy(xt, x.row_range(m.begin, m.end()));
    if (form.residual) {
      const Tensor zt = z_rows->next().row_range(0, m.size);
      kernel.dma_copy(zt, z.row_range(m.begin, m.end()));
      kernel.tensor_tensor(xt, xt, zt, AluOp::add);
    }
    const Tensor sum = sums.next().row_range(0, m.size);
    kernel.activation(squares.next().row_range(0, m.size), xt, ActivationFunction::square, 0.0f, 1.0f, &sum);
    const Tensor inv = inv_rms.next().row_range(0, m.size);
    kernel.activation(inv, sum, ActivationFunction::rsqrt, form.epsilon, 1.0f / float(shape.K));
    rows_of[std::size_t(m.index)] = xt;
    inv_of[std::size_t(m.index)] = inv;
  };
  phases.transpose = [&](const TileSpan& m) {
    xT_of[std::size_t(m.index)] = xT_tiles.next();
    transpose_row_tile(kernel, xT_of[std::size_t(m.index)], rows_of[std::size_t(m.index)], m.size, 0, shape.K,
                       transpose_banks, p.transpose_engine == 1);
  };
  phases.steps = [&](const TileSpan& m) {
    if (!w_loaded) load_w();
    w_loaded = true;
    const Tensor ot = out_rows.next().row_range(0, m.size);
    for (TileSpan step : tiles(shape.N, step_n)) {
      const Tensor ps = out_psum.next().slice(0, m.size, 0, step.size);
      row_tile_matmuls(kernel, ps, xT_of[std::size_t(m.index)], w_resident, m.size, shape.K, shape.N, step);
      const bool on_scalar = p.drain_engine == 1 || (p.drain_engine == 2 && step_count % 2 == 1);
      ++step_count;
      kernel.tensor_scalar(ot.col_range(step.begin, step.end()), ps, AluOp::multiply,
                           inv_of[std::size_t(m.index)], AluOp::bypass, 0.0f,
                           on_scalar ? Engine::scalar : Engine::vector);
    }
    kernel.dma_copy(out.row_range(m.begin, m.end()), ot);
  };
  pipelined_row_tiles(shape.M, P, depth - 1, phases);
}

}  // namespace detail

template <Dtype D>
void rmsnorm_matmul_fused(Kernel& kernel, const NormMatmulShape& shape, const NormMatmulFusedParams& p) {
  detail::norm_matmul_fused<D>(kernel, shape, {false, false, 0.0f}, p);
}

template <Dtype D>
void add_rmsnorm_matmul_fused(Kernel& kernel, const NormMatmulShape& shape, const NormMatmulFusedParams& p) {
  detail::norm_matmul_fused<D>(kernel, shape, {true, true, kNormMatmulEpsilon}, p);
}

template <Dtype D>
void rmsnorm_matmul_naive(Kernel& kernel, const NormMatmulShape& shape, const RmsnormMatmulNaiveParams&) {
  Tensor x = kernel.input("x", shape.M, shape.K, D);
  Tensor w = kernel.input("w", shape.K, shape.N, D);
  Tensor out = kernel.output("out", shape.M, shape.N, D);
  const int P = kernel.limits().partitions;
  constexpr int kHalf = 512, kBlockM = 1024, kChunkN = 1024, kTileN = 512;
  const int k_tiles = tile_count(shape.K, P);
  TilePool x_tiles = kernel.sbuf_pool("input_tensor_local", 1, P, shape.K, D);
  TilePool square_tiles = kernel.sbuf_pool("square", 1, P, kHalf, Dtype::fp32);
  TilePool scaled_tiles = kernel.sbuf_pool("scaled_square", 1, P, kHalf, Dtype::fp32);
  TilePool sums = kernel.sbuf_pool("row_sum", 1, P, 1, Dtype::fp32);
  TilePool partials = kernel.sbuf_pool("half_sum", 2, P, 1, Dtype::fp32);
  TilePool inv_rms = kernel.sbuf_pool("inv_rms", 1, P, 1, Dtype::fp32);
  TilePool x2_tiles = kernel.sbuf_pool("input_tensor_local_2", 1, P, shape.K, D);
  TilePool normalised_tiles = kernel.sbuf_pool("normalised", 1, P, kHalf, D);
  TilePool transpose_psum = kernel.psum_pool("transpose_psum", 1, P, P);
  TilePool xT_blocks = kernel.sbuf_pool("xT_block", 1, P, k_tiles * kBlockM, D);
  TilePool w_blocks = kernel.sbuf_pool("w_block", 1, P, k_tiles * kChunkN, D);
  TilePool res_psum = kernel.psum_pool("res_psum", 1, P, kTileN);
  TilePool res_tiles = kernel.sbuf_pool("res_local", 1, P, kChunkN, D);
  for (TileSpan mb : tiles(shape.M, kBlockM)) {
    const Tensor xT = xT_blocks.next();  // K tile k of row r of the block at column k.index * kBlockM + r
    for (TileSpan m : tiles(mb, P)) {
      const Tensor xt = x_tiles.next().row_range(0, m.size);
      kernel.dma_copy(xt, x.row_range(m.begin, m.end()));
      const Tensor sum = sums.next().row_range(0, m.size);
      for (TileSpan h : tiles(shape.K, kHalf)) {
        const Tensor sq = square_tiles.next().slice(0, m.size, 0, h.size);
        kernel.activation(sq, xt.col_range(h.begin, h.end()), ActivationFunction::square);
        const Tensor sc = scaled_tiles.next().slice(0, m.size, 0, h.size);
        kernel.tensor_scalar(sc, sq, AluOp::multiply, 1.0f / float(shape.K));
        const Tensor part = partials.next().row_range(0, m.size);
        kernel.tensor_reduce(part, sc, AluOp::add);
        if (h.index == 0)
          kernel.tensor_copy(sum, part);
        else
          kernel.tensor_tensor(sum, sum, part, AluOp::add);
      }
      const Tensor inv = inv_rms.next().row_range(0, m.size);
      kernel.activation(inv, sum, ActivationFunction::rsqrt);
      const Tensor x2 = x2_tiles.next().row_range(0, m.size);
      kernel.dma_copy(x2, x.row_range(m.begin, m.end()));
      for (TileSpan h : tiles(shape.K, kHalf)) {
        const Tensor normalised = normalised_tiles.next().slice(0, m.size, 0, h.size);
        kernel.tensor_scalar(normalised, x2.col_range(h.begin, h.end()), AluOp::multiply, inv);
        for (TileSpan k : tiles(h, P)) {
          const Tensor tp = transpose_psum.next().slice(0, k.size, 0, m.size);
          kernel.transpose(tp, normalised.col_range(k.offset, k.offset + k.size));
          const int col = (k.begin / P) * kBlockM + m.offset;
          kernel.tensor_copy(xT.slice(0, k.size, col, col + m.size), tp);
        }
      }
    }
    for (TileSpan c : tiles(shape.N, kChunkN)) {
      const Tensor wb = w_blocks.next();
      for (TileSpan k : tiles(shape.K, P))
        kernel.dma_copy(wb.slice(0, k.size, k.index * kChunkN, k.index * kChunkN + c.size),
                        w.slice(k.begin, k.end(), c.begin, c.end()));
      for (TileSpan m : tiles(mb, P)) {
        const Tensor ot = res_tiles.next().slice(0, m.size, 0, c.size);
        for (TileSpan n : tiles(c.size, kTileN)) {
          const Tensor ps = res_psum.next().slice(0, m.size, 0, n.size);
          for (TileSpan k : tiles(shape.K, P)) {
            const int lcol = k.index * kBlockM + m.offset, rcol = k.index * kChunkN + n.begin;
            kernel.matmul(ps, xT.slice(0, k.size, lcol, lcol + m.size),
                          wb.slice(0, k.size, rcol, rcol + n.size), k.index > 0);
          }
          kernel.tensor_copy(ot.col_range(n.begin, n.end()), ps);
        }
        kernel.dma_copy(out.slice(m.begin, m.end(), c.begin, c.end()), ot);
      }
    }
  }
}

template <Dtype D>
void add_rmsnorm_matmul_naive(Kernel& kernel, const NormMatmulShape& shape,
                              const AddRmsnormMatmulNaiveParams&) {
  Tensor x = kernel.input("x", shape.M, shape.K, D);
  Tensor w = kernel.input("w", shape.K, shape.N, D);
  Tensor z = kernel.input("z", shape.M, shape.K, D);
  Tensor g = kernel.input("g", 1, shape.K, D);
  Tensor out = kernel.output("out", shape.M, shape.N, D);
  const int P = kernel.limits().partitions;
  constexpr int kTileN = 512;
  TilePool g_pool = kernel.sbuf_pool("g_bcast", 1, P, shape.K, D);
  const Tensor g_bcast = g_pool.next();
  broadcast_to_partitions(kernel, g_bcast, g);
  TilePool x_tiles = kernel.sbuf_pool("x_tile", 1, P, shape.K, D);
  TilePool z_tiles = kernel.sbuf_pool("z_tile", 1, P, shape.K, D);
  detail::StepwiseAddRmsnorm<D> normalise(kernel, shape.K);
  detail::ReloadingRowProduct<D> product(kernel, kTileN);
  TilePool res_psum = kernel.psum_pool("res_psum", 1, P, kTileN);
  TilePool res_tiles = kernel.sbuf_pool("res_sb", 1, P, kTileN, D);
  for (TileSpan m : tiles(shape.M, P)) {
    const Tensor xt = x_tiles.next().row_range(0, m.size), zt = z_tiles.next().row_range(0, m.size);
    kernel.dma_copy(xt, x.row_range(m.begin, m.end()));
    kernel.dma_copy(zt, z.row_range(m.begin, m.end()));
    const Tensor normalised = normalise(kernel, xt, zt, g_bcast);
    for (TileSpan n : tiles(shape.N, kTileN)) {
      const Tensor ps = res_psum.next().slice(0, m.size, 0, n.size);
      product(kernel, ps, normalised, w, n);
      const Tensor rt = res_tiles.next().slice(0, m.size, 0, n.size);
      kernel.tensor_copy(rt, ps);
      kernel.dma_copy(out.slice(m.begin, m.end(), n.begin, n.end()), rt);
    }
  }
}

template <Dtype D>
void matmul_add_rmsnorm_naive(Kernel& kernel, const NormMatmulShape& shape,
                              const MatmulAddRmsnormNaiveParams&) {
  Tensor x = kernel.input("x", shape.M, shape.K, D);
  Tensor w = kernel.input("w", shape.K, shape.N, D);
  Tensor z = kernel.input("z", shape.M, shape.N, D);
  Tensor g = kernel.input("g", 1, shape.N, D);
  Tensor out = kernel.output("out", shape.M, shape.N, D);
  const int P = kernel.limits().partitions;
  constexpr int kTileN = 512;
  TilePool g_pool = kernel.sbuf_pool("g_bcast", 1, P, shape.N, D);
  const Tensor g_bcast = g_pool.next();
  broadcast_to_partitions(kernel, g_bcast, g);
  TilePool x_tiles = kernel.sbuf_pool("x_tiles", 1, P, shape.K, D);
  detail::ReloadingRowProduct<D> product(kernel, kTileN);
  TilePool res_psum = kernel.psum_pool("res_psum", 1, P, kTileN);
  TilePool y_tiles = kernel.sbuf_pool("rmsnorm_in_tile", 1, P, shape.N, D);
  TilePool z_tiles = kernel.sbuf_pool("z_tile", 1, P, shape.N, D);
  detail::StepwiseAddRmsnorm<D> normalise(kernel, shape.N);
  for (TileSpan m : tiles(shape.M, P)) {
    const Tensor xt = x_tiles.next().row_range(0, m.size);
    kernel.dma_copy(xt, x.row_range(m.begin, m.end()));
    const Tensor y = y_tiles.next().row_range(0, m.size);
    for (TileSpan n : tiles(shape.N, kTileN)) {
      const Tensor ps = res_psum.next().slice(0, m.size, 0, n.size);
      product(kernel, ps, xt, w, n);
      kernel.tensor_copy(y.col_range(n.begin, n.end()), ps);
    }
    const Tensor zt = z_tiles.next().row_range(0, m.size);
    kernel.dma_copy(zt, z.row_range(m.begin, m.end()));
    kernel.dma_copy(out.row_range(m.begin, m.end()), normalise(kernel, y, zt, g_bcast));
  }
}

template <Dtype D>
void matmul_add_rmsnorm_fused(Kernel& kernel, const NormMatmulShape& shape,
                              const MatmulAddRmsnormFusedParams& p) {
  using namespace detail;
  Tensor x = kernel.input("x", shape.M, shape.K, D);
  Tensor w = kernel.input("w", shape.K, shape.N, D);
  Tensor z = kernel.input("z", shape.M, shape.N, D);
  Tensor g = kernel.input("g", 1, shape.N, D);
  Tensor out = kernel.output("out", shape.M, shape.N, D);
  const int P = kernel.limits().partitions;
  const int k_tiles = tile_count(shape.K, P);
  const int depth = std::max(p.pipeline_depth, 1);
  const int step_n = kNormMatmulBank * p.unroll_factor;

  TilePool g_pool = kernel.sbuf_pool("g_bcast", 1, P, shape.N, D);
  const Tensor g_bcast = g_pool.next();
  broadcast_to_partitions(kernel, g_bcast, g);
  TilePool w_pool = kernel.sbuf_pool("w_resident", 1, P, k_tiles * shape.N, D);
  const Tensor w_resident = w_pool.next();

  const int chunk = kNormMatmulBank / P * P;  // x columns per load: one PSUM bank of transposes
  const int banks = tile_count(shape.N, kNormMatmulBank);
  TilePool x_chunks = kernel.sbuf_pool("x_chunk", 2, P, chunk, D);
  TilePool xT_tiles = kernel.sbuf_pool("xT", depth, P, k_tiles * P, D);
  // z's row, then y, then the output: from the transpose phase to finalize.
  TilePool y_rows = kernel.sbuf_pool("y_rows", depth + 1, P, shape.N, D);
  TilePool squares = kernel.sbuf_pool("squares", 1, P, kNormMatmulBank, Dtype::fp32);  // discarded
  TilePool sums = kernel.sbuf_pool("sum_sq", 2, P, banks, Dtype::fp32);
  TilePool columns = kernel.sbuf_pool("row_stats", 2, P, 2, Dtype::fp32);
  TilePool transpose_banks = kernel.psum_pool("xT_psum", 2, P, kNormMatmulBank);
  TilePool out_psum = kernel.psum_pool("out_psum", 2, P, step_n);

  // By row tile: its transpose, its row (z + x . w), its sums of squares by bank.
  std::vector<Tensor> xT_of(std::size_t(tile_count(shape.M, P))), y_of(xT_of.size()), sums_of(xT_of.size());
  bool w_loaded = false;
  RowTilePhases phases;
  phases.transpose = [&](const TileSpan& m) {
    const Tensor xT = xT_tiles.next();
    for (TileSpan c : tiles(shape.K, chunk)) {
      const Tensor xc = x_chunks.next().slice(0, m.size, 0, c.size);
      kernel.dma_copy(xc, x.slice(m.begin, m.end(), c.begin, c.end()));
      transpose_row_tile(kernel, xT, xc, m.size, c.begin, c.size, transpose_banks, p.transpose_engine == 1);
    }
    const Tensor y = y_rows.next().row_range(0, m.size);
    kernel.dma_copy(y, z.row_range(m.begin, m.end()));
    xT_of[std::size_t(m.index)] = xT;
    y_of[std::size_t(m.index)] = y;
  };
  phases.steps = [&](const TileSpan& m) {
    // w is loaded before the first matmuls, behind the first row tiles' loads.
    if (!w_loaded) load_resident_rhs(kernel, w, w_resident);
    w_loaded = true;
    const Tensor row = y_of[std::size_t(m.index)];
    const Tensor row_sums = sums.next().slice(0, m.size, 0, banks);
    for (TileSpan step : tiles(shape.N, step_n)) {
      const Tensor ps = out_psum.next().slice(0, m.size, 0, step.size);
      row_tile_matmuls(kernel, ps, xT_of[std::size_t(m.index)], w_resident, m.size, shape.K, shape.N, step);
      const Tensor y = row.col_range(step.begin, step.end());
      kernel.tensor_tensor(y, ps, y, AluOp::add);
      for (TileSpan bank : tiles(step, kNormMatmulBank)) {
        const int b = bank.begin / kNormMatmulBank;
        const Tensor sum = row_sums.col_range(b, b + 1);
        kernel.activation(squares.next().slice(0, m.size, 0, bank.size),
                          row.col_range(bank.begin, bank.end()), ActivationFunction::square, 0.0f, 1.0f,
                          &sum);
      }
    }
    sums_of[std::size_t(m.index)] = row_sums;
  };
  phases.finalize = [&](const TileSpan& m) {
    const Tensor row = y_of[std::size_t(m.index)];
    const Tensor stats = columns.next().row_range(0, m.size);
    Tensor total = sums_of[std::size_t(m.index)].col_range(0, 1);
    if (banks > 1) {
      total = stats.col_range(0, 1);
      kernel.tensor_reduce(total, sums_of[std::size_t(m.index)], AluOp::add);
    }
    const Tensor inv = stats.col_range(1, 2);
    kernel.activation(inv, total, ActivationFunction::rsqrt, kNormMatmulEpsilon, 1.0f / float(shape.N));
    if (p.scale_engine == 1) {
      kernel.tensor_scalar(row, row, AluOp::multiply, inv, AluOp::bypass, 0.0f, Engine::scalar);
      kernel.tensor_tensor(row, row, g_bcast.row_range(0, m.size), AluOp::multiply, Engine::gpsimd);
    } else {
      kernel.scalar_tensor_tensor(row, row, AluOp::multiply, inv, AluOp::multiply,
                                  g_bcast.row_range(0, m.size));
    }
    kernel.dma_copy(out.row_range(m.begin, m.end()), row);
  };
  pipelined_row_tiles(shape.M, P, depth - 1, phases);
}

}  // namespace autotune::kernels
