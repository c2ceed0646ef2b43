// The operator set and each operator's canonical evaluation order (DESIGN.md section 3).
//
// Every backend (scalar reference, AVX2/AVX-512, CUDA, HIP) and every thread count must produce
// the same bits as the order written here. "fma chain over j ascending from x" means:
//   acc = x; for j in ascending order: acc = fmaf(a_j, b_j, acc);
// with exactly one rounding per step. Threads and GPU blocks split outputs, never a chain.
//
// "The same bits" holds for every value but NaN: which NaN an operator outputs (its payload and
// sign) is not part of any contract here, because hardware differs (an invalid operation gives
// 0xFFC00000 on x86, 0x7FFFFFFF on NVIDIA GPUs, 0x7FC00000 on AMD ones, and an operation on two
// NaNs keeps either payload). Where an output is NaN is part of it, and so is every value an
// operator derives from a NaN input (ReLU(NaN) = +0.0f): no operator lets a NaN's payload or sign
// change anything but the bits of the NaNs it outputs. Every hash reads a NaN as the canonical
// 0x7FC00000 (consensus/pinpoint.h), so states and node outputs hash alike on every backend;
// kernels/gpu/conformance.h's special-value cases hold every backend to this.
//
// Inputs and outputs are listed in order; the backend validates input shapes and resizes outputs
// (Tensor::Resize), so callers may pass empty tensors as outputs. An output may alias an input only
// where the operator says so.
#ifndef POLNODE_KERNELS_OP_H_
#define POLNODE_KERNELS_OP_H_

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/kernels/tensor.h"

namespace polnode::kernels {

enum class Op : std::uint8_t {
  // in: A[M,K], B[K,N]. out: C[M,N].
  // C[m,n] = fma chain over k ascending from +0.0f of A[m,k]*B[k,n].
  kMatmul = 0,
  // in: dC[M,N], B[K,N]. out: dA[M,K] = dC * B^T.
  // dA[m,k] = fma chain over n ascending from +0.0f of dC[m,n]*B[k,n].
  kMatmulGradA,
  // in: A[M,K], dC[M,N]. out: dB[K,N] = A^T * dC.
  // dB[k,n] = fma chain over m ascending from +0.0f of A[m,k]*dC[m,n].
  kMatmulGradB,
  // in: X[M,N] or X[N,C,H,W], b[N] (resp. b[C]). out: Y, same shape as X.
  // Y = X + b broadcast over the last axis (2-D) or the channel axis (4-D); one rounding.
  kBiasAdd,
  // in: dY[M,N] or dY[N,C,H,W]. out: db[N] (resp. db[C]).
  // 2-D: db[n] = sum over m ascending from +0.0f of dY[m,n] (plain adds).
  // 4-D: db[c] = sum over (n, h, w) ascending, row-major, from +0.0f of dY[n,c,h,w].
  kBiasGrad,
  // in: X. out: Y = X > 0 ? X : +0.0f (so ReLU(-0.0) = +0.0 and ReLU(NaN) = +0.0).
  kRelu,
  // in: X (the forward input), dY. out: dX = X > 0 ? dY : +0.0f.
  kReluGrad,
  // in: X[N,Ci,H,W], W[Co,Ci,3,3]. out: Y[N,Co,H,W]. Stride 1, zero padding 1.
  // Y[n,o,h,w] = fma chain over (ci, kh, kw) ascending, row-major, from +0.0f of
  //              W[o,ci,kh,kw] * Xpad[n,ci,h+kh-1,w+kw-1], where padded taps read +0.0f and are
  //              part of the chain (so an im2col + matmul evaluation gives the same bits).
  kConv2d3x3,
  // in: dY[N,Co,H,W], W[Co,Ci,3,3]. out: dX[N,Ci,H,W].
  // dX[n,ci,h,w] = fma chain over (o, kh, kw) ascending, row-major, from +0.0f of
  //                W[o,ci,kh,kw] * dYpad[n,o,h-kh+1,w-kw+1] (out-of-range taps read +0.0f).
  kConv2d3x3GradInput,
  // in: X[N,Ci,H,W], dY[N,Co,H,W]. out: dW[Co,Ci,3,3].
  // dW[o,ci,kh,kw] = fma chain over (n, h, w) ascending, row-major, from +0.0f of
  //                  dY[n,o,h,w] * Xpad[n,ci,h+kh-1,w+kw-1].
  kConv2d3x3GradWeight,
  // in: X[N,C,H,W]. out: Y[N,C,H/2,W/2] (floor), and Arg[N,C,H/2,W/2]: the index 0..3 of the
  // chosen tap in the window, row-major, stored as a float. The first tap wins; a later tap
  // replaces it only if strictly greater (so NaN never wins over the first tap).
  kMaxPool2x2,
  // in: Arg[N,C,H/2,W/2], dY[N,C,H/2,W/2], and attrs.pool_input_h / pool_input_w.
  // out: dX[N,C,H,W] (H, W from attrs): dY routed to the chosen tap, +0.0f elsewhere.
  kMaxPool2x2Grad,
  // in: logits Z[B,C], labels L[B] (class indices stored as floats, exact integers in [0,C)).
  // out: loss[1], P[B,C] (softmax probabilities, kept for the gradient).
  // Per row b: mx = max over c ascending (first wins, strictly-greater replaces);
  //   e[c] = det::Exp(Z[b,c] - mx); s = sum over c ascending from +0.0f of e[c];
  //   P[b,c] = e[c] / s; row_loss[b] = (mx + det::Log(s)) - Z[b, L[b]].
  // loss = (sum over b ascending from +0.0f of row_loss[b]) / B.
  kSoftmaxCrossEntropy,
  // in: P[B,C], labels L[B]. out: dZ[B,C] = (P[b,c] - (c == L[b] ? 1 : 0)) / B.
  // (Upstream gradient of the mean loss is 1.)
  kSoftmaxCrossEntropyGrad,
  // in: W, G, V (same shape). out: W', V'. May alias W' = W and V' = V.
  // Per element, PyTorch's SGD with momentum, dampening 0, no Nesterov:
  //   d = fma(wd, w, g); v' = fma(momentum, v, d); w' = fma(-lr, v', w).
  kSgdMomentum,
  // in: W, G, M, V (same shape). out: W', M', V'. May alias in place.
  // Per element, AdamW (decoupled weight decay, PyTorch's torch.optim.AdamW):
  //   w1 = fma(-lr * wd, w, w)            (lr * wd rounded once, on the host)
  //   m' = fma(beta1, m, (1 - beta1) * g)  ((1 - beta1) rounded once)
  //   v' = fma(beta2, v, ((1 - beta2) * g) * g)
  //   mhat = m' / bias_correction1;  vhat = v' / bias_correction2
  //   w' = w1 - lr * (mhat / (sqrt(vhat) + eps))
  // bias_correction_i = 1 - beta_i^t is computed on the host by AdamBiasCorrection (below), so every
  // backend divides by the same float. Plain Adam is AdamW with weight_decay = 0.
  kAdamW,

  // ---- Transformer operators (a GPT: embeddings, LayerNorm, causal self-attention, GELU MLP).
  // Attention is split into small operators (head transposes, batched products, the masked
  // softmax) so that a dispute's referee re-executes one small operator. Reshapes are not
  // operators: the step graph reads a tensor under another shape of the same element count (a
  // view), e.g. [B*T, C] as [B, T, H, D]. The language-model loss is kSoftmaxCrossEntropy on the
  // [B*T, V] logits (the mean over every position). As for every operator, NaN payloads and signs
  // are open (see the top of this file); where a NaN or an infinity gives a defined non-NaN result,
  // the operator says so.

  // in: A, B (same shape). out: C[e] = A[e] + B[e], one rounding. C may alias A or B (in place).
  // Residual connections, and gradient accumulation where a tensor feeds two consumers (residual
  // branches, shared weights); the graph fixes which gradient is A and which is B.
  kAdd,
  // in: X[N, A, B, D]. out: Y[N, B, A, D], Y[n, b, a, d] = X[n, a, b, d], bits copied unchanged.
  // Splits attention heads, [batch, T, H, D] -> [batch, H, T, D] (the graph views a [batch*T, C]
  // activation as [batch, T, H, D]), merges them back ([batch, H, T, D] -> [batch, T, H, D]), and
  // is its own gradient.
  kTransposeHeads,
  // in: X. out: Y = GELU(X), tanh form (PyTorch's gelu(approximate='tanh')), per element:
  //   inner = kGeluBeta * fma(kGeluKappa, (x * x) * x, x)
  //   Y = (0.5f * x) * (1.0f + det::Tanh(inner))
  // with kGeluBeta = float(sqrt(2/pi)) and kGeluKappa = 0.044715f (detmath_constants.h).
  // Y(+-0) = +-0, Y(+inf) = +inf, Y(NaN) = NaN, and Y(-inf) = NaN (-inf * 0, as in PyTorch's
  // formula); below about -9.1, tanh rounds to -1 and Y = -0.
  kGelu,
  // in: X (the forward input), dY. out: dX, per element:
  //   u = x * x;  th = det::Tanh(kGeluBeta * fma(kGeluKappa, u * x, x))   (th as in kGelu)
  //   left = 0.5f * (1.0f + th);  sech2 = fma(-th, th, 1.0f)
  //   right = ((0.5f * x) * sech2) * (kGeluBeta * fma(kGeluKappa3, u, 1.0f))
  //   dX = dY * (left + right)
  // with kGeluKappa3 = 3.0f * kGeluKappa rounded once. dX is NaN for x = +-inf and wherever x * x
  // overflows (|x| > 1.8e19: 0 * inf in `right`), as in PyTorch's formula.
  kGeluGrad,
  // in: X[..., C] (rank >= 2), gamma[C], beta[C]; attrs.eps. out: Y (X's shape), and Mean and
  // Rstd (X's shape without the last axis), kept for the gradient. Per row (C elements x_c):
  //   mean = (sum over c ascending from +0.0f of x_c) / C
  //   d_c = x_c - mean
  //   var = (fma chain over c ascending from +0.0f of d_c * d_c) / C     (biased, as PyTorch)
  //   rstd = 1.0f / sqrt(var + eps)              (IEEE sqrt and division, each rounded once)
  //   Y_c = fma(d_c * rstd, gamma_c, beta_c)
  // C (1 <= C < 2^24) converts to float exactly. attrs.eps is the field AdamW also reads: a
  // LayerNorm node sets it (PyTorch's default is 1e-5; OpAttrs' default 1e-8 is AdamW's). A row
  // holding a NaN or an infinity has NaN in Rstd and in every Y of the row (inf - inf or NaN in
  // d); its Mean is the sum divided by C (+-inf or NaN).
  kLayerNorm,
  // in: X[..., C], gamma[C], Mean, Rstd (kLayerNorm's outputs for this X), dY (X's shape).
  // out: dX (X's shape), dGamma[C], dBeta[C]. Per row, with xhat_c = (x_c - mean) * rstd (the
  // forward's d_c * rstd, same bits) and g_c = dY_c * gamma_c:
  //   sum_g = sum over c ascending from +0.0f of g_c
  //   sum_gx = fma chain over c ascending from +0.0f of g_c * xhat_c
  //   a = sum_g / C;  b = sum_gx / C
  //   dX_c = rstd * fma(-xhat_c, b, g_c - a)
  // and per column c, over the rows r ascending (row-major order of the leading axes):
  //   dGamma_c = fma chain over r from +0.0f of dY[r, c] * xhat[r, c]
  //   dBeta_c = sum over r from +0.0f of dY[r, c]                  (plain adds, as kBiasGrad)
  kLayerNormGrad,
  // in: S[..., T, T] (rank >= 2; attention scores [B, H, T, T]); attrs.scale. out: P, S's shape.
  // Causal: row i of each T x T matrix sees keys j <= i. Per row:
  //   z_j = S[i, j] * scale for j <= i          (one rounding, also when scale = 1: S * 1 = S)
  //   mx = max over j <= i ascending (z_0 first; a later z_j replaces it only if strictly greater)
  //   e_j = det::Exp(z_j - mx);  s = sum over j <= i ascending from +0.0f of e_j
  //   P[i, j] = e_j / s for j <= i;  P[i, j] = +0.0f for j > i, whatever S holds there.
  // A NaN or +inf among a row's z_j (j <= i), or a row whose z_j are all -inf, makes every P[i, j]
  // with j <= i NaN; P of a finite row sums to 1 within rounding, and row 0 is [1, +0, +0, ...].
  kCausalSoftmax,
  // in: P[..., T, T] (kCausalSoftmax's output), dP (P's shape); attrs.scale, the forward's.
  // out: dS, P's shape. Per row i:
  //   dot = fma chain over j <= i ascending from +0.0f of P[i, j] * dP[i, j]
  //   dS[i, j] = (P[i, j] * (dP[i, j] - dot)) * scale for j <= i;  dS[i, j] = +0.0f for j > i.
  // Masked dP entries (j > i) are never read, so nothing that flows there (NaN included) leaks.
  kCausalSoftmaxGrad,
  // in: A[..., M, K], B[..., K, N] (rank >= 3, the same leading axes: attention's [B, H]).
  // out: C[..., M, N]. Per matrix g of the leading axes, kMatmul's chain:
  //   C[g, m, n] = fma chain over k ascending from +0.0f of A[g, m, k] * B[g, k, n].
  // Attention's Y = P V, and dQ = dS K in the backward.
  kBatchedMatmul,
  // in: dC[..., M, N], B[..., K, N]. out: dA[..., M, K] = dC * B^T per matrix:
  //   dA[g, m, k] = fma chain over n ascending from +0.0f of dC[g, m, n] * B[g, k, n].
  // Attention's scores S = Q K^T (dC = Q, B = K), and dP = dY V^T in the backward.
  kBatchedMatmulGradA,
  // in: A[..., M, K], dC[..., M, N]. out: dB[..., K, N] = A^T * dC per matrix:
  //   dB[g, k, n] = fma chain over m ascending from +0.0f of A[g, m, k] * dC[g, m, n].
  // Attention's dV = P^T dY and dK = dS^T Q.
  kBatchedMatmulGradB,
  // in: W[V, C] (the table), ids[...] (token ids stored as floats, exact integers in [0, V)).
  // out: Y[..., C] (ids' shape followed by C): Y[n, :] = W[ids[n], :], bits copied unchanged.
  // (Position embeddings need no operator: a [T, C] table viewed as [T*C] is kBiasAdd's bias over
  // the [B, T*C] view of the token embeddings, and kBiasGrad is its gradient.)
  kEmbedding,
  // in: ids[...], dY[..., C]; attrs.num_embeddings = V >= 1. out: dW[V, C]:
  //   dW[v, c] = sum over positions n ascending (ids in row-major order) with ids[n] = v, from
  //              +0.0f, of dY[n, c]  (plain adds; rows of ids that never occur are +0.0f).
  // A scatter-add in one fixed order, no atomics: backends split the table's rows and columns,
  // never a row's chain over the positions.
  kEmbeddingGrad,

  // ---- Gradient-norm clipping (PyTorch's clip_grad_norm_ with the coefficient clamped to 1).
  // The step graph builds it from matrix products (step_graph.h): each gradient's sum of squares
  // is kMatmul of its [1, N] view by an [N, 1] copy (one fma chain over its elements in order),
  // the sums are added with kAdd in parameter order, and each gradient is scaled by the
  // coefficient as kMatmul of its [N, 1] view by the coefficient's [1, 1].
  // in: S (the sum of squares of every gradient), attrs.max_norm. out: C (S's shape), per element
  // det::ClipCoefficient(S[e], max_norm):
  //   q = max_norm / (sqrt(S[e]) + 1e-6f)   (IEEE sqrt, addition and division, each rounded once)
  //   C[e] = q > 1.0f ? 1.0f : q             (a NaN stays NaN)
  kClipCoefficient,
};

inline constexpr int kNumOps = static_cast<int>(Op::kClipCoefficient) + 1;

/// "matmul", "conv2d_3x3_grad_input", ... Stable: used in graph dumps, dispute transcripts and JSON.
std::string_view OpName(Op op);

/// Parses an OpName back; kInvalidArgument for an unknown name.
Result<Op> OpFromName(std::string_view name);

/// Scalar parameters. Fields an operator does not use are ignored (and must not change its output).
struct OpAttrs {
  float lr = 0.0f;
  float momentum = 0.0f;
  float weight_decay = 0.0f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;              // kAdamW; kLayerNorm sets its own (PyTorch: 1e-5)
  float bias_correction1 = 1.0f;  // kAdamW: 1 - beta1^t (AdamBiasCorrection)
  float bias_correction2 = 1.0f;  // kAdamW: 1 - beta2^t
  std::int64_t pool_input_h = 0;  // kMaxPool2x2Grad
  std::int64_t pool_input_w = 0;
  float scale = 1.0f;  // kCausalSoftmax, kCausalSoftmaxGrad: the scores' factor (1/sqrt(D))
  std::int64_t num_embeddings = 0;  // kEmbeddingGrad: the table's row count V
  // kSgdMomentum, kAdamW: the learning-rate schedule (ScheduledLr). All zero: lr is constant.
  // The step graph keeps the peak lr in `lr`; the attributes a step runs with carry
  // ScheduledLr's value there instead.
  float max_norm = 0.0f;  // kClipCoefficient: the largest gradient norm left unscaled
  std::int64_t lr_warmup_steps = 0;
  std::int64_t lr_decay_steps = 0;
  float min_lr = 0.0f;
};

/// 1 - beta^t for step t >= 1, with beta^t computed by binary exponentiation in float (square
/// and multiply, most significant bit first). Pure and platform-independent.
float AdamBiasCorrection(float beta, std::int64_t t);

/// The learning rate of step t (0-based: the step that starts after t completed steps) under
/// nanoGPT's schedule, from attrs.lr (the peak), lr_warmup_steps (W), lr_decay_steps (D) and
/// min_lr (m):
///   W = D = 0:        lr (constant);
///   t < W:            lr * (t + 1) / (W + 1)   (linear warm-up, never 0);
///   D = 0, t >= W:    lr;
///   W <= t <= D:      m + c * (lr - m), c = (1 + cos(pi * (t - W) / (D - W))) / 2;
///   t > D:            m.
/// Evaluated in double with + - * / and det::CosPi (no libm), then rounded to float once, so
/// every platform, backend and the referee get the same bits. The formulas hold for 0 <= t and the
/// ranges solver::ValidateOptimizer checks (D = 0 or D > W; W, D <= 2^40); other integers (a
/// malformed descriptor) still give a deterministic float, without undefined behaviour.
float ScheduledLr(const OpAttrs& attrs, std::int64_t t);

/// Number of inputs and outputs of `op`.
int NumInputs(Op op);
int NumOutputs(Op op);

/// Checks input count, ranks and shapes against the operator's contract, and the values of
/// index-valued inputs (IndexInput), and returns the output shapes. Every backend calls this
/// before computing, so shape errors read the same everywhere.
Result<std::vector<Shape>> InferOutputShapes(Op op, const OpAttrs& attrs,
                                             std::span<const Tensor* const> inputs);

/// An input whose values are indices (class labels, pool taps, token ids): every value must be
/// an integer in [0, bound), or a backend would read or write out of bounds.
struct IndexInput {
  int input = 0;
  std::string_view role;  // "labels", "Arg", "ids"
  std::int64_t bound = 0;
};

/// InferOutputShapes from the input shapes alone (what a device backend knows without reading its
/// memory): the same shape checks and messages, and, when `index_inputs` is given, the index-valued
/// inputs appended to it instead of checked.
Result<std::vector<Shape>> InferOutputShapesOf(Op op, const OpAttrs& attrs, std::span<const Shape* const> inputs,
                                               std::vector<IndexInput>* index_inputs = nullptr);

/// kInvalidArgument naming the first value of `values` (input `index.input` of `op`) that is not an
/// integer in [0, index.bound), with InferOutputShapes' message.
[[nodiscard]] Status CheckIndexValues(Op op, const IndexInput& index, std::span<const float> values);

}  // namespace polnode::kernels

#endif  // POLNODE_KERNELS_OP_H_
