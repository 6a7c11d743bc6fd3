#pragma once
// rope: the rotary position embedding of Qwen3 and Llama, rotate-half form,
// on queries or keys laid out token-major: x [seq, heads * head_dim], head h
// of token s at columns h * head_dim ... With half = head_dim / 2 and the
// halves x1 = x[.., :half], x2 = x[.., half:] of each head,
//   y1 = x1 * cos - x2 * sin,   y2 = x2 * cos + x1 * sin,
// where cos and sin ([seq, half]) hold cos(s * theta_i) and sin(s * theta_i).
// Tokens map to partitions; the tables of a row tile serve every head.
#include <algorithm>

#include "kernels/api/kernel.hpp"
#include "kernels/api/tiling.hpp"

namespace autotune::kernels {

struct RopeShape {
  int seq = 0, heads = 0, head_dim = 0;
};

// Per row tile and head, six instructions on [rows, half] slices on the
// vector engine; single buffers.
struct RopeNaiveParams {};

// The tables are widened once per row tile to every head ([rows, heads *
// half], by copies that double the filled width each time, on GpSimd), so
// that six wide instructions per row tile replace six per head; the cos
// products and the sin products go to the engines `engine_split` names.
// x tiles, tables and results stream through rotating buffers.
struct RopeWideParams {
  int pipeline_depth = 2;  // rotating buffers per stream, in row tiles
  // 0: every product and sum on the vector engine; 1: the sin products on
  // GpSimd, beside the vector engine's cos products and sums.
  int engine_split = 1;
  // Rows per partition: consecutive tokens folded into one row tile (one
  // DMA each way moves unroll_factor tokens per partition).
  int unroll_factor = 1;
  // How the halves of each head are gathered and the results scattered
  // back: 1 by SBUF-to-SBUF DMAs (no engine busy), 0 by copies on the
  // scalar engine (otherwise idle here).
  int gather_by_dma = 0;
};

template <Dtype D>
void rope_naive(Kernel& kernel, const RopeShape& shape, const RopeNaiveParams&) {
  const int width = shape.heads * shape.head_dim, half = shape.head_dim / 2;
  Tensor x = kernel.input("x", shape.seq, width, D);
  Tensor cos = kernel.input("cos", shape.seq, half, D);
  Tensor sin = kernel.input("sin", shape.seq, half, D);
  Tensor y = kernel.output("y", shape.seq, width, D);
  const int P = kernel.limits().partitions;
  TilePool x_tiles = kernel.sbuf_pool("x_tile", 1, P, width, D);
  TilePool y_tiles = kernel.sbuf_pool("y_tile", 1, P, width, D);
  TilePool tables = kernel.sbuf_pool("table", 2, P, half, D);
  TilePool products = kernel.sbuf_pool("product", 2, P, half, Dtype::fp32);
  for (TileSpan r : tiles(shape.seq, P)) {
    Tensor xt = x_tiles.next().row_range(0, r.size);
    kernel.dma_copy(xt, x.row_range(r.begin, r.end()));
    Tensor c = tables.next().row_range(0, r.size);
    Tensor s = tables.next().row_range(0, r.size);
    kernel.dma_copy(c, cos.row_range(r.begin, r.end()));
    kernel.dma_copy(s, sin.row_range(r.begin, r.end()));
    Tensor yt = y_tiles.next().row_range(0, r.size);
    for (int h = 0; h < shape.heads; ++h) {
      const int at = h * shape.head_dim;
      const Tensor x1 = xt.col_range(at, at + half), x2 = xt.col_range(at + half, at + shape.head_dim);
      const Tensor y1 = yt.col_range(at, at + half), y2 = yt.col_range(at + half, at + shape.head_dim);
      Tensor a = products.next().row_range(0, r.size);
      Tensor b = products.next().row_range(0, r.size);
      kernel.tensor_tensor(a, x1, c, AluOp::multiply);
      kernel.tensor_tensor(b, x2, s, AluOp::multiply);
      kernel.tensor_tensor(y1, a, b, AluOp::subtract);
      kernel.tensor_tensor(a, x2, c, AluOp::multiply);
      kernel.tensor_tensor(b, x1, s, AluOp::multiply);
      kernel.tensor_tensor(y2, a, b, AluOp::add);
    }
    kernel.dma_copy(y.row_range(r.begin, r.end()), yt);
  }
}

// The wide layout: column block k = token * heads + head of a [rows, fold *
// heads * half] tile holds that (token, head)'s half. The tables are widened
// to it, x's halves gathered into two such tiles, the six instructions run
// over all of them at once, and the two results are scattered back into x's
// layout.
template <Dtype D>
void rope_wide(Kernel& kernel, const RopeShape& shape, const RopeWideParams& p) {
  const int width = shape.heads * shape.head_dim, half = shape.head_dim / 2;
  Tensor x = kernel.input("x", shape.seq, width, D);
  Tensor cos = kernel.input("cos", shape.seq, half, D);
  Tensor sin = kernel.input("sin", shape.seq, half, D);
  Tensor y = kernel.output("y", shape.seq, width, D);
  const int P = kernel.limits().partitions;
  const int fold = p.unroll_factor;
  const int groups = fold * shape.heads;  // (token, head) pairs per partition
  const int wide = groups * half;
  const Engine sin_engine = p.engine_split == 1 ? Engine::gpsimd : Engine::vector;
  const int bufs = p.pipeline_depth;
  TilePool x_tiles = kernel.sbuf_pool("x_tile", bufs, P, fold * width, D);
  TilePool y_tiles = kernel.sbuf_pool("y_tile", bufs, P, fold * width, D);
  TilePool raw_tables = kernel.sbuf_pool("table", 2 * bufs, P, fold * half, D);
  TilePool wide_tables = kernel.sbuf_pool("wide_table", 2 * bufs, P, wide, D);
  TilePool halves = kernel.sbuf_pool("half", 2 * bufs, P, wide, D);
  TilePool products = kernel.sbuf_pool("product", 4, P, wide, Dtype::fp32);
  TilePool results = kernel.sbuf_pool("result", 2, P, wide, D);

  for (const FoldedRows& g : folded_row_groups(shape.seq, P, fold)) {
    const int rows = g.partitions, f_count = g.fold;
    const int used = f_count * shape.heads * half;
    Tensor xt = x_tiles.next().slice(0, rows, 0, f_count * width);
    kernel.dma_copy(xt, folded_block(x, g, TileSpan{0, 0, width}));
    // The tables of the partition's tokens: [rows, fold * half], token after token.
    Tensor c = raw_tables.next().slice(0, rows, 0, f_count * half);
    Tensor s = raw_tables.next().slice(0, rows, 0, f_count * half);
    kernel.dma_copy(c, folded_block(cos, g, TileSpan{0, 0, half}));
    kernel.dma_copy(s, folded_block(sin, g, TileSpan{0, 0, half}));
    // Widened: token t's table repeated for each head, by doubling copies.
    auto widen = [&](const Tensor& table) {
      Tensor out = wide_tables.next().slice(0, rows, 0, used);
      for (int t = 0; t < f_count; ++t) {
        const int base = t * shape.heads * half;
        kernel.tensor_copy(out.col_range(base, base + half), table.col_range(t * half, (t + 1) * half),
                           Engine::gpsimd);
        for (int filled = 1; filled < shape.heads; filled *= 2) {
          const int n = std::min(filled, shape.heads - filled);
          kernel.tensor_copy(out.col_range(base + filled * half, base + (filled + n) * half),
                             out.col_range(base, base + n * half), Engine::gpsimd);
        }
      }
      return out;
    };
    const Tensor cw = widen(c), sw = widen(s);
    // The halves of x gathered: x1 of every (token, head), then x2.
    Tensor x1 = halves.next().slice(0, rows, 0, used);
    Tensor x2 = halves.next().slice(0, rows, 0, used);
    auto move = [&](const Tensor& dst, const Tensor& src) {
      if (p.gather_by_dma != 0)
        kernel.dma_copy(dst, src);
      else
        kernel.activation(dst, src, ActivationFunction::identity);
    };
    for (int k = 0; k < f_count * shape.heads; ++k) {
      const int at = k * shape.head_dim;
      move(x1.col_range(k * half, (k + 1) * half), xt.col_range(at, at + half));
      move(x2.col_range(k * half, (k + 1) * half), xt.col_range(at + half, at + shape.head_dim));
    }
    Tensor a = products.next().slice(0, rows, 0, used);
    Tensor b = products.next().slice(0, rows, 0, used);
    Tensor y1 = results.next().slice(0, rows, 0, used);
    kernel.tensor_tensor(a, x1, cw, AluOp::multiply);
    kernel.tensor_tensor(b, x2, sw, AluOp::multiply, sin_engine);
    kernel.tensor_tensor(y1, a, b, AluOp::subtract);
    Tensor a2 = products.next().slice(0, rows, 0, used);
    Tensor b2 = products.next().slice(0, rows, 0, used);
    Tensor y2 = results.next().slice(0, rows, 0, used);
    kernel.tensor_tensor(a2, x2, cw, AluOp::multiply);
    kernel.tensor_tensor(b2, x1, sw, AluOp::multiply, sin_engine);
    kernel.tensor_tensor(y2, a2, b2, AluOp::add);
    // Scattered back into x's layout by SBUF-to-SBUF DMAs, then stored.
    Tensor yt = y_tiles.next().slice(0, rows, 0, f_count * width);
    for (int k = 0; k < f_count * shape.heads; ++k) {
      const int at = k * shape.head_dim;
      move(yt.col_range(at, at + half), y1.col_range(k * half, (k + 1) * half));
      move(yt.col_range(at + half, at + shape.head_dim), y2.col_range(k * half, (k + 1) * half));
    }
    kernel.dma_copy(folded_block(y, g, TileSpan{0, 0, width}), yt);
  }
}

}  // namespace autotune::kernels
