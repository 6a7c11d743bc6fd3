#pragma once
// mamba: the selective scan of a Mamba layer, NKIBench's mamba task (one
// batch): over M steps, C channels and S states,
//   dA[c, s, m]  = exp(delta[c, m] * a[c, s])
//   dBu[c, s, m] = delta[c, m] * u[c, m] * b[s, m]
//   h[c, s, m]   = dA[c, s, m] * h[c, s, m - 1] + dBu[c, s, m]     (h[c, s, -1] = 0)
//   out[c, m]    = sum over s of c_in[s, m] * h[c, s, m]
// Inputs delta, u [C, M], a [C, S], b, c [S, M]; output [C, M], as NKIBench's
// reference takes and returns them. Channels map to partitions; the
// recurrence runs along the free axis in the vector engine's scan
// (Kernel::tensor_tensor_scan), chunk by chunk, each chunk starting from the
// previous chunk's last state. Intermediates are fp32 whatever the dtype: a
// state carried over thousands of steps does not survive 16-bit rounding.
#include <algorithm>

#include "kernels/api/kernel.hpp"
#include "kernels/api/tiling.hpp"
#include "kernels/families/rmsnorm.hpp"

namespace autotune::kernels {

struct MambaShape {
  int M = 0, C = 0, S = 0;
};

// NKIBench's starting kernel: states outer, channel tiles inner; per (state,
// channel tile) delta and u reloaded, exp(delta * a_s) on the scalar engine,
// delta * u and * b_s as two vector products, b_s and c_s broadcast along the
// partitions (as B_i.broadcast_to), the scan, * c_s, and the sum over states
// added into an on-chip accumulator of every channel, stored at the end.
// Single buffers. Its rows are full-length in NKIBench; here they are taken in
// chunks of kMambaNaiveChunk steps (the scan carried across) so that the
// working set fits SBUF, as the compiler's allocation of the starting kernel
// has to.
struct MambaNaiveParams {};
inline constexpr int kMambaNaiveChunk = 2048;

// Channel tiles in the inner loop of each chunk of tile_size steps: delta, u
// and delta * u loaded and made once per chunk for all states; a loaded once;
// b_s and c_s broadcast once per (chunk, state) on the tensor engine and
// shared by the channel tiles; per (chunk, state, channel tile) one exp, one
// product, the scan, one product and the accumulation.
struct MambaFusedParams {
  int tile_size = 512;     // steps per chunk: per DMA, instruction and scan
  int pipeline_depth = 2;  // rotating buffers per stream, in chunks (loads) and steps (work tiles)
  int bcast_in_psum = 1;   // 1: the products read b_s, c_s from PSUM; 0: drained to SBUF by the scalar engine
  int product_engine = 0;  // * b_s and * c_s on 0: vector, 1: GpSimd, 2: alternating by state
  int acc_engine = 0;      // the sum over states on 0: vector, 1: GpSimd, 2: the tensor engine (PSUM)
};

struct MambaOperands {
  Tensor delta, u, a, b, c, out;
};

inline MambaOperands mamba_operands(Kernel& kernel, const MambaShape& s, Dtype dtype) {
  MambaOperands o;
  o.delta = kernel.input("delta", s.C, s.M, dtype);
  o.u = kernel.input("u", s.C, s.M, dtype);
  o.a = kernel.input("a", s.C, s.S, dtype);
  o.b = kernel.input("b", s.S, s.M, dtype);
  o.c = kernel.input("c", s.S, s.M, dtype);
  o.out = kernel.output("out", s.C, s.M, dtype);
  return o;
}

template <Dtype D>
void mamba_naive(Kernel& kernel, const MambaShape& shape, const MambaNaiveParams&) {
  auto [delta, u, a, b, c, out] = mamba_operands(kernel, shape, D);
  const int P = kernel.limits().partitions;
  const int chunk = std::min(shape.M, kMambaNaiveChunk);
  std::vector<TileSpan> channel_tiles;
  for (TileSpan ct : tiles(shape.C, P)) channel_tiles.push_back(ct);
  // scanC_accum: every channel's sum over states, on chip.
  TilePool acc_pool = kernel.sbuf_pool("scanC_accum", int(channel_tiles.size()), P, shape.M, Dtype::fp32);
  std::vector<Tensor> acc;
  for (TileSpan ct : channel_tiles) {
    acc.push_back(acc_pool.next().row_range(0, ct.size));
    kernel.memset(acc.back(), 0.0f);
  }
  TilePool a_pool = kernel.sbuf_pool("A_i", 1, P, 1, Dtype::fp32);
  TilePool delta_pool = kernel.sbuf_pool("delta_i", 1, P, chunk, D);
  TilePool u_pool = kernel.sbuf_pool("u_i", 1, P, chunk, D);
  TilePool b_pool = kernel.sbuf_pool("B_i_bcast", 1, P, chunk, Dtype::fp32);
  TilePool c_pool = kernel.sbuf_pool("C_i_bcast", 1, P, chunk, Dtype::fp32);
  TilePool work = kernel.sbuf_pool("temp", 4, P, chunk, Dtype::fp32);
  // Two scan tiles: a chunk's scan starts from the previous chunk's last column.
  TilePool scan_pool = kernel.sbuf_pool("scan_res", 2, P, chunk, Dtype::fp32);
  for (int s = 0; s < shape.S; ++s) {
    for (std::size_t t = 0; t < channel_tiles.size(); ++t) {
      const TileSpan ct = channel_tiles[t];
      const Tensor a_i = a_pool.next().row_range(0, ct.size);
      kernel.dma_copy(a_i, a.slice(ct.begin, ct.end(), s, s + 1));
      Tensor previous;
      for (TileSpan m : tiles(shape.M, chunk)) {
        auto rows = [&](TilePool& pool) { return pool.next().slice(0, ct.size, 0, m.size); };
        const Tensor delta_i = rows(delta_pool);
        kernel.dma_copy(delta_i, delta.slice(ct.begin, ct.end(), m.begin, m.end()));
        const Tensor delta_a = rows(work);
        kernel.activation(delta_a, delta_i, ActivationFunction::exp, 0.0f, a_i);
        const Tensor u_i = rows(u_pool);
        kernel.dma_copy(u_i, u.slice(ct.begin, ct.end(), m.begin, m.end()));
        const Tensor b_i = rows(b_pool);
        broadcast_to_partitions(kernel, b_i, b.slice(s, s + 1, m.begin, m.end()));
        const Tensor delta_u = rows(work);
        kernel.tensor_tensor(delta_u, delta_i, u_i, AluOp::multiply);
        const Tensor delta_bu = rows(work);
        kernel.tensor_tensor(delta_bu, delta_u, b_i, AluOp::multiply);
        const Tensor scan = rows(scan_pool);
        if (previous.rows() == 0)
          kernel.tensor_tensor_scan(scan, delta_a, delta_bu, 0.0f, AluOp::multiply, AluOp::add);
        else
          kernel.tensor_tensor_scan(scan, delta_a, delta_bu,
                                    previous.col_range(previous.cols() - 1, previous.cols()), AluOp::multiply,
                                    AluOp::add);
        previous = scan;
        const Tensor c_i = rows(c_pool);
        broadcast_to_partitions(kernel, c_i, c.slice(s, s + 1, m.begin, m.end()));
        const Tensor scan_c = rows(work);
        kernel.tensor_tensor(scan_c, scan, c_i, AluOp::multiply);
        const Tensor acc_m = acc[t].col_range(m.begin, m.end());
        kernel.tensor_tensor(acc_m, acc_m, scan_c, AluOp::add);
      }
    }
  }
  for (std::size_t t = 0; t < channel_tiles.size(); ++t)
    kernel.dma_copy(out.row_range(channel_tiles[t].begin, channel_tiles[t].end()), acc[t]);
}

template <Dtype D>
void mamba_fused(Kernel& kernel, const MambaShape& shape, const MambaFusedParams& p) {
  auto [delta, u, a, b, c, out] = mamba_operands(kernel, shape, D);
  const int P = kernel.limits().partitions;
  const int T = p.tile_size, S = shape.S;
  const int bank = int(kernel.limits().psum_bank_bytes / 4);  // fp32 columns per PSUM bank
  std::vector<TileSpan> channel_tiles;
  for (TileSpan ct : tiles(shape.C, P)) channel_tiles.push_back(ct);
  const int n_ct = int(channel_tiles.size());
  const int depth = p.pipeline_depth;
  const bool pe_acc = p.acc_engine == 2;

  // Loaded once: a per channel tile (the exp's per-partition scales, fp32),
  // the running states carried from chunk to chunk, a row of ones per state
  // (the stationary operand of the broadcasts).
  TilePool a_pool = kernel.sbuf_pool("a_cols", n_ct, P, S, Dtype::fp32);
  TilePool carry_pool = kernel.sbuf_pool("carry", n_ct, P, S, Dtype::fp32);
  TilePool ones_pool = kernel.sbuf_pool("ones", 1, S, P, D);
  TilePool identity_pool = kernel.sbuf_pool("identity", 1, pe_acc ? P : 1, pe_acc ? P : 1, Dtype::fp32);
  std::vector<Tensor> a_cols, carry;
  for (TileSpan ct : channel_tiles) {
    a_cols.push_back(a_pool.next().row_range(0, ct.size));
    kernel.dma_copy(a_cols.back(), a.row_range(ct.begin, ct.end()));
    carry.push_back(carry_pool.next().row_range(0, ct.size));
  }
  const Tensor ones = ones_pool.next();
  kernel.memset(ones, 1.0f);
  Tensor identity;
  if (pe_acc) {
    // identity[p, q] = (p == q): iota p - q, kept where p - q >= 0 and q - p >= 0.
    identity = identity_pool.next();
    kernel.memset(identity, 1.0f);
    kernel.affine_select(identity, identity, 0.0f, 1, -1, 0.0f);
    kernel.affine_select(identity, identity, 0.0f, -1, 1, 0.0f);
  }

  TilePool b_rows = kernel.sbuf_pool("b_rows", 2, S, T, D);
  TilePool c_rows = kernel.sbuf_pool("c_rows", 2, S, T, D);
  TilePool delta_pool = kernel.sbuf_pool("delta", depth * n_ct, P, T, D);
  TilePool u_pool = kernel.sbuf_pool("u", depth, P, T, D);
  TilePool du_pool = kernel.sbuf_pool("delta_u", depth * n_ct, P, T, Dtype::fp32);
  // b_s and c_s of two states in flight, a bank per piece.
  TilePool bcast_psum = kernel.psum_pool("bcast", 4 * tile_count(T, bank), P, bank);
  TilePool b_sbuf =
      kernel.sbuf_pool("b_bcast", p.bcast_in_psum ? 1 : 2, P, p.bcast_in_psum ? 1 : T, Dtype::fp32);
  TilePool c_sbuf =
      kernel.sbuf_pool("c_bcast", p.bcast_in_psum ? 1 : 2, P, p.bcast_in_psum ? 1 : T, Dtype::fp32);
  TilePool da_pool = kernel.sbuf_pool("delta_a", depth, P, T, Dtype::fp32);
  TilePool h_pool = kernel.sbuf_pool("h", depth, P, T, Dtype::fp32);
  TilePool acc_pool = kernel.sbuf_pool("acc", pe_acc ? 1 : depth * n_ct, P, pe_acc ? 1 : T, Dtype::fp32);
  TilePool acc_psum = kernel.psum_pool("acc_psum", pe_acc ? n_ct : 1, P, pe_acc ? T : 1);
  TilePool out_pool = kernel.sbuf_pool("out", pe_acc ? depth : 1, P, pe_acc ? T : 1, D);

  int step = 0;
  for (TileSpan m : tiles(shape.M, T)) {
    const Tensor b_m = b_rows.next().col_range(0, m.size);
    const Tensor c_m = c_rows.next().col_range(0, m.size);
    kernel.dma_copy(b_m, b.col_range(m.begin, m.end()));
    kernel.dma_copy(c_m, c.col_range(m.begin, m.end()));
    std::vector<Tensor> delta_t, du_t, acc_t;
    for (TileSpan ct : channel_tiles) {
      delta_t.push_back(delta_pool.next().slice(0, ct.size, 0, m.size));
      kernel.dma_copy(delta_t.back(), delta.slice(ct.begin, ct.end(), m.begin, m.end()));
      const Tensor u_t = u_pool.next().slice(0, ct.size, 0, m.size);
      kernel.dma_copy(u_t, u.slice(ct.begin, ct.end(), m.begin, m.end()));
      du_t.push_back(du_pool.next().slice(0, ct.size, 0, m.size));
      kernel.tensor_tensor(du_t.back(), delta_t.back(), u_t, AluOp::multiply,
                           alternating_vector_engine(p.product_engine, step));
      acc_t.push_back(pe_acc ? acc_psum.next().slice(0, ct.size, 0, m.size)
                             : acc_pool.next().slice(0, ct.size, 0, m.size));
    }
    // b_s and c_s along the partitions: ones[s]^T . row[s] per PSUM bank;
    // read there by the products, or drained to SBUF on the scalar engine.
    // Made one state ahead: the tensor engine runs in program order, and a
    // broadcast issued after the state's accumulating matmuls would wait for
    // them, and the vector engine for it.
    struct Broadcast {
      std::vector<Tensor> b_pieces, c_pieces;
      Tensor b_full, c_full;
    };
    auto broadcast = [&](int s) {
      Broadcast out;
      if (!p.bcast_in_psum) {
        out.b_full = b_sbuf.next().col_range(0, m.size);
        out.c_full = c_sbuf.next().col_range(0, m.size);
      }
      for (TileSpan piece : tiles(m.size, bank)) {
        for (int which = 0; which < 2; ++which) {
          const Tensor& rows = which == 0 ? b_m : c_m;
          const Tensor bcast = bcast_psum.next().col_range(0, piece.size);
          kernel.matmul(bcast, ones.row_range(s, s + 1), rows.slice(s, s + 1, piece.begin, piece.end()),
                        /*accumulate=*/false);
          if (p.bcast_in_psum) {
            (which == 0 ? out.b_pieces : out.c_pieces).push_back(bcast);
          } else {
            const Tensor& full = which == 0 ? out.b_full : out.c_full;
            kernel.activation(full.col_range(piece.begin, piece.end()), bcast, ActivationFunction::identity);
          }
        }
      }
      return out;
    };
    Broadcast ahead = broadcast(0);
    for (int s = 0; s < S; ++s, ++step) {
      const Engine product_on = alternating_vector_engine(p.product_engine, step);
      const Engine accumulate = p.acc_engine == 1 ? Engine::gpsimd : Engine::vector;
      const Broadcast current = std::move(ahead);
      if (s + 1 < S) ahead = broadcast(s + 1);
      const std::vector<Tensor>&b_pieces = current.b_pieces, &c_pieces = current.c_pieces;
      const Tensor &b_full = current.b_full, &c_full = current.c_full;
      for (int t = 0; t < n_ct; ++t) {
        const int rows = channel_tiles[std::size_t(t)].size;
        const Tensor delta_a = da_pool.next().slice(0, rows, 0, m.size);
        kernel.activation(delta_a, delta_t[std::size_t(t)], ActivationFunction::exp, 0.0f,
                          a_cols[std::size_t(t)].col_range(s, s + 1));
        const Tensor h = h_pool.next().slice(0, rows, 0, m.size);
        // delta * u * b_s, then the scan in place, then * c_s (in place, or
        // straight into the accumulator at the first state).
        auto product = [&](const Tensor& dst, const Tensor& x, const std::vector<Tensor>& pieces,
                           const Tensor& full, Engine engine) {
          if (!p.bcast_in_psum) {
            kernel.tensor_tensor(dst, x, full.row_range(0, rows), AluOp::multiply, engine);
            return;
          }
          for (std::size_t i = 0; i < pieces.size(); ++i) {
            const int begin = int(i) * bank, end = begin + pieces[i].cols();
            kernel.tensor_tensor(dst.col_range(begin, end), x.col_range(begin, end),
                                 pieces[i].row_range(0, rows), AluOp::multiply, Engine::vector);
          }
        };
        product(h, du_t[std::size_t(t)], b_pieces, b_full, product_on);
        const Tensor state = carry[std::size_t(t)].col_range(s, s + 1);
        if (m.begin == 0)
          kernel.tensor_tensor_scan(h, delta_a, h, 0.0f, AluOp::multiply, AluOp::add);
        else
          kernel.tensor_tensor_scan(h, delta_a, h, state, AluOp::multiply, AluOp::add);
        if (m.end() < shape.M)
          kernel.activation(state, h.col_range(m.size - 1, m.size), ActivationFunction::identity);
        const Tensor& acc = acc_t[std::size_t(t)];
        if (pe_acc) {
          product(h, h, c_pieces, c_full, product_on);
          for (TileSpan piece : tiles(m.size, bank))
            kernel.matmul(acc.col_range(piece.begin, piece.end()), identity.slice(0, rows, 0, rows),
                          h.col_range(piece.begin, piece.end()), /*accumulate=*/s > 0);
        } else if (s == 0) {
          product(acc, h, c_pieces, c_full, product_on);
        } else {
          product(h, h, c_pieces, c_full, product_on);
          kernel.tensor_tensor(acc, acc, h, AluOp::add, accumulate);
        }
      }
    }
    for (int t = 0; t < n_ct; ++t) {
      const TileSpan ct = channel_tiles[std::size_t(t)];
      const Tensor destination = out.slice(ct.begin, ct.end(), m.begin, m.end());
      if (pe_acc) {
        const Tensor staged = out_pool.next().slice(0, ct.size, 0, m.size);
        kernel.activation(staged, acc_t[std::size_t(t)], ActivationFunction::identity);
        kernel.dma_copy(destination, staged);
      } else {
        kernel.dma_copy(destination, acc_t[std::size_t(t)]);
      }
    }
  }
}

}  // namespace autotune::kernels
