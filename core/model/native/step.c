/* One sentence's decoder step in C: the whole step in one call, where torch issues ~100 operations from Python.

   At batch 1 a step reads every decoder weight once for a few multiply-adds each: its time is reading the weights
   plus, in torch, ~1 µs of dispatch per operation (bench/README.md, *Where the time goes at batch 1*). This file
   computes the same function as core/model/step.py's FusedStep for one sentence — its one row (greedy), or its
   beams in their cache slots (beam search, core/model/transformer.py BeamSlots): embeddings and positions, per layer
   the self-attention over the cache (the new keys and values written into it), the cross-attention over the memory's
   keys and values, the FFN, each sub-layer's Add & Norm (post or pre), the final norm, the generator.

   Products read Wᵀ (in × out) a block of outputs at a time, the block's sums in registers: one broadcast input times
   a row of the block per multiply-add, no horizontal sums; a sentence's rows in turn within a block, its weights
   still in the core's cache. fp32 weights are the fused step's own Wᵀ. int8 weights (one scale per output) are
   multiplied as the torch step multiplies them: the inputs quantized as fbgemm quantizes them (exact int32 sums), or
   the int8 values converted to fp32 in registers where the torch step does that (core/model/fast.py SMALL_ROWS).
   A batch's int8 products (any number of rows) are this file's too (tt_product, core/model/native Rows): weights in
   panels of outputs, rows in register blocks, the quantization vectorized.
   Compiled on the machine that runs it (core/model/native/__init__.py), for its own instruction set. No allocation,
   no global state; threads are OpenMP's (torch's runtime, torch's count). */

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__AVX512F__)
#include <immintrin.h>
#define VL 16   /* floats per vector */
#define NACC 8 /* a block's sums: 8 zmm registers (two FMA pipes × 4 cycles of latency) */
typedef __m512 vec;
#define vzero() _mm512_setzero_ps()
#define vset1(x) _mm512_set1_ps(x)
#define vload(p) _mm512_loadu_ps(p)
#define vstore(p, v) _mm512_storeu_ps(p, v)
#define vfma(a, b, c) _mm512_fmadd_ps(a, b, c)
#define vload_i8(p) _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(p))))
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define VL 8
#define NACC 8 /* 8 of 16 ymm registers */
typedef __m256 vec;
#define vzero() _mm256_setzero_ps()
#define vset1(x) _mm256_set1_ps(x)
#define vload(p) _mm256_loadu_ps(p)
#define vstore(p, v) _mm256_storeu_ps(p, v)
#define vfma(a, b, c) _mm256_fmadd_ps(a, b, c)
#define vload_i8(p) _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(p))))
#else
#define VL 1 /* no vector unit the code knows: one float at a time, as the compiler makes of it */
#define NACC 16
typedef float vec;
#define vzero() 0.0f
#define vset1(x) (x)
#define vload(p) (*(p))
#define vstore(p, v) (*(p) = (v))
#define vfma(a, b, c) ((a) * (b) + (c))
#define vload_i8(p) ((float)*(p))
#endif
#define TILE (VL * NACC)
#ifndef PARALLEL_MIN
#define PARALLEL_MIN (1 << 15) /* multiply-adds */
#endif

/* A product x Wᵀ + b: wt is Wᵀ (in × out, rows ld apart), fp32 or int8 with a scale per output. */
typedef struct {
    const void *wt;
    const float *scale; /* int8: (out,) per output; NULL for fp32 */
    const float *bias;  /* (out,) or NULL */
    int64_t ld;
    int32_t in, out;
    float factor; /* multiplies the outputs (1 where a scale is folded into the weights) */
    int32_t int8; /* 0: fp32; 1: int8 weights times fp32 inputs; 2: int8 weights times the inputs quantized */
    const int32_t *colsum; /* 2: Σ_i W[j][i] per output, for the inputs' zero point */
    int32_t in4;           /* 2: the inputs rounded up to a multiple of 4 (wt: (in4 / 4, out, 4) int8) */
    int32_t blocked;       /* fp32 only: Wᵀ tile by tile (`wf`), not row by row */
} Product;

typedef struct {
    Product qkv, self_out, cross_q, cross_out, w_1, w_2;
    const float *norm_w[3], *norm_b[3];
    float *self_k, *self_v;         /* (h, capacity, d_k): this layer's self-attention cache */
    const float *cross_k, *cross_v; /* (h, S, d_k): the memory's keys and values */
} Layer;

typedef struct {
    int32_t d, h, d_k, d_ff, n_layers, vocab, pre, capacity, src_len;
    float eps, emb_scale;
    const float *table;             /* (vocab, d) target embeddings */
    const float *positions;         /* (max_len, d) */
    const float *final_w, *final_b; /* the decoder stack's final norm (pre-norm), or NULL */
    Product generator;
    Layer *layers;
    float *scratch; /* tt_scratch_floats(...) floats */
} Step;

/* Where Wᵀ[i][j] of an fp32 product is. Row by row (ld floats apart), a tile's weights for one input are TILE floats
   out of every row, so a one-row product read 2–2.8× slower than from the same weights tile by tile (a 12-layer
   micro-benchmark on the Zen 4 at AVX2 and AVX-512, bench/README.md): `blocked` lays the outputs' whole tiles one
   after another, each (in × TILE) contiguous, then the rest (in × rest). */
static inline const float *wf(const Product *p, int i, int j) {
    if (!p->blocked) return (const float *)p->wt + (int64_t)i * p->ld + j;
    const int t = j / TILE, tiles = p->out / TILE;
    if (t < tiles) return (const float *)p->wt + ((int64_t)t * p->in + i) * TILE + (j - t * TILE);
    const int rest = p->out - tiles * TILE;
    return (const float *)p->wt + (int64_t)tiles * p->in * TILE + (int64_t)i * rest + (j - tiles * TILE);
}

/* y[j0 .. j0 + TILE) = Σ_i x[i] Wᵀ[i][j]: TILE sums in registers, one broadcast x[i] per row of the block; the
   weights fp32 or (int8, a constant where it is inlined) int8 values converted in registers. */
static inline __attribute__((always_inline)) void tile(const Product *p, const float *x, int j0, float *y,
                                                       const int int8) {
    vec acc[NACC];
    for (int a = 0; a < NACC; a++) acc[a] = vzero();
    for (int i = 0; i < p->in; i++) {
        const int64_t at = (int64_t)i * p->ld + j0;
        const float *w32 = int8 ? NULL : wf(p, i, j0);
        const int8_t *w8 = (const int8_t *)p->wt + at;
        vec xi = vset1(x[i]);
#pragma GCC unroll 16
        for (int a = 0; a < NACC; a++) acc[a] = vfma(xi, int8 ? vload_i8(w8 + a * VL) : vload(w32 + a * VL), acc[a]);
    }
    for (int a = 0; a < NACC; a++) vstore(y + a * VL, acc[a]);
}

static void tile_f32(const Product *p, const float *x, int j0, float *y) { tile(p, x, j0, y, 0); }
static void tile_i8(const Product *p, const float *x, int j0, float *y) { tile(p, x, j0, y, 1); }

/* The outputs past the last whole block: a vector at a time, then one at a time. */
static void tail(const Product *p, const float *x, int j0, float *y) {
    int j = j0;
    for (; j + VL <= p->out; j += VL) {
        vec acc = vzero();
        for (int i = 0; i < p->in; i++) {
            const int64_t at = (int64_t)i * p->ld + j;
            vec w = p->int8 ? vload_i8((const int8_t *)p->wt + at) : vload(wf(p, i, j));
            acc = vfma(vset1(x[i]), w, acc);
        }
        vstore(y + j - j0, acc);
    }
    for (; j < p->out; j++) {
        float acc = 0.0f;
        for (int i = 0; i < p->in; i++) {
            const int64_t at = (int64_t)i * p->ld + j;
            acc += x[i] * (p->int8 ? (float)((const int8_t *)p->wt)[at] : *wf(p, i, j));
        }
        y[j - j0] = acc;
    }
}

/* int8 = 2: the product fbgemm computes for one row (torch.ops.quantized.linear_dynamic, reduce_range: what
   core/model/fast.py's int8 layers run), so this step's numbers are the torch step's. The row is quantized to 7 bits
   (0 … 127) over its own range widened to hold 0, with fbgemm's choice of scale and zero point; the products are
   exact int32 sums of u8 × s8 (4 inputs a multiply-add, weights (in4 / 4, out, 4)); each output is then
   (sum − zero point · Σ_i W[j][i]) · row scale · W's scale for j, plus the bias. 7 bits keep a pair of u8 × s8
   products within int16, so AVX2's pairwise multiply-adds cannot saturate. */
static void qparams(float lo, float hi, float *scale_out, int32_t *zero_out) {
    float scale = (float)(((double)hi - (double)lo) / 127.0);
    if (scale == 0.0f || isinf(1.0f / scale)) scale = 0.1f;
    double from_lo = 0.0 - lo / (double)scale, from_hi = 127.0 - hi / (double)scale;
    double error_lo = 0.0 - fabs(lo / (double)scale), error_hi = 127.0 - fabs(hi / (double)scale);
    double zero = nearbyint(error_lo < error_hi ? from_lo : from_hi);
    *zero_out = zero < 0.0 ? 0 : zero > 127.0 ? 127 : (int32_t)zero;
    *scale_out = scale;
}

/* q = x · (1 / scale) + zero point in one rounding (a fused multiply-add, as fbgemm's vector code: rounding x · (1 /
   scale) first moves a value near a half by one, 4 products in 2,000 measured), then to the nearest integer, within
   0 … 255: fbgemm chooses the scale for 7 bits but clips to 8, so a value rounded past 127 stays 128 */
static void quantize(const Product *p, const float *x, float inv, int32_t zp, uint8_t *q) {
    int i = 0;
#if defined(__AVX512F__)
    const __m512 vinv = _mm512_set1_ps(inv), vzp = _mm512_set1_ps((float)zp), top = _mm512_set1_ps(255.0f);
    for (; i + 16 <= p->in; i += 16) {
        __m512 v = _mm512_fmadd_ps(_mm512_loadu_ps(x + i), vinv, vzp);
        v = _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        v = _mm512_min_ps(_mm512_max_ps(v, _mm512_setzero_ps()), top);
        _mm_storeu_si128((__m128i *)(q + i), _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(v)));
    }
#endif
    for (; i < p->in; i++) {
        float v = nearbyintf(fmaf(x[i], inv, (float)zp));
        q[i] = (uint8_t)(v < 0.0f ? 0.0f : v > 255.0f ? 255.0f : v);
    }
    for (i = p->in; i < p->in4; i++) q[i] = 0; /* against zero weights */
}

/* the smallest and largest of n values, each widened to hold 0 */
static void range_of(const float *x, int n, float *lo_out, float *hi_out) {
    float lo = 0.0f, hi = 0.0f;
    int i = 0;
#if defined(__AVX512F__)
    __m512 vlo = _mm512_setzero_ps(), vhi = _mm512_setzero_ps();
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        vlo = _mm512_min_ps(vlo, v), vhi = _mm512_max_ps(vhi, v);
    }
    lo = _mm512_reduce_min_ps(vlo), hi = _mm512_reduce_max_ps(vhi);
#endif
    for (; i < n; i++) {
        lo = x[i] < lo ? x[i] : lo;
        hi = x[i] > hi ? x[i] : hi;
    }
    *lo_out = lo, *hi_out = hi;
}

/* A product's int8 scratch: the rows divided by their scales (xr), and per row the scale after the product (rs; 0:
   none), the quantization's scale (xs) and zero point (zp); the rows quantized (q, rows × in4). */
typedef struct {
    float *xr, *rs, *xs;
    int32_t *zp;
    uint8_t *q;
} Quant;

/* The rows' quantization. own == 0, as core/model/fast.py's torch int8_rows gives rows to fbgemm (the step, which
   computes the torch step's numbers): one row over its own range; rows > 1 each divided by its largest |value| first
   (kept in rs, the row's scale after the product; xr holds the divided rows), then one range over them all.
   own == 1 (many rows of a batch): each row over its own range, as fbgemm quantizes a row alone — a row's products
   are the same in any batch. */
static void quantize_rows(const Product *p, const float *x, int rows, const Quant *s, int own) {
    if (own) {
        for (int r = 0; r < rows; r++) {
            const float *xrow = x + (int64_t)r * p->in;
            float lo, hi;
            range_of(xrow, p->in, &lo, &hi);
            qparams(lo, hi, &s->xs[r], &s->zp[r]);
            s->rs[r] = 0.0f;
            quantize(p, xrow, 1.0f / s->xs[r], s->zp[r], s->q + (int64_t)r * p->in4);
        }
        return;
    }
    const float *src = x;
    if (rows > 1) {
        for (int r = 0; r < rows; r++) {
            const float *xrow = x + (int64_t)r * p->in;
            float lo, hi;
            range_of(xrow, p->in, &lo, &hi);
            const float top = -lo > hi ? -lo : hi;
            s->rs[r] = top < 1e-30f ? 1e-30f : top;
            for (int i = 0; i < p->in; i++) s->xr[(int64_t)r * p->in + i] = xrow[i] / s->rs[r];
        }
        src = s->xr;
    } else
        s->rs[0] = 0.0f;
    float lo, hi;
    range_of(src, rows * p->in, &lo, &hi);
    qparams(lo, hi, &s->xs[0], &s->zp[0]);
    for (int r = 0; r < rows; r++) {
        s->xs[r] = s->xs[0], s->zp[r] = s->zp[0];
        quantize(p, src + r * p->in, 1.0f / s->xs[0], s->zp[0], s->q + r * p->in4);
    }
}

/* int8 = 2 weights in panels of PANEL outputs (tt_pack_int8): panel by panel, each (in4 / 4, width, 4) — a block
   of outputs reads one contiguous run of memory (rows out · 4 bytes apart map to the same few cache sets: a batch's
   products, which read a block again for each group of rows, lost it from L1 and L2). The last panel may be
   narrower. Output j's four weights of inputs 4g … 4g + 3 are at panel_at(p, j) + g · panel_step(p, j). */
#define PANEL 32
static inline const int8_t *panel_at(const Product *p, int j) {
    return (const int8_t *)p->wt + (int64_t)(j / PANEL) * PANEL * p->in4 + (j % PANEL) * 4;
}
static inline int64_t panel_step(const Product *p, int j) {
    const int start = j / PANEL * PANEL;
    return (int64_t)4 * (p->out - start < PANEL ? p->out - start : PANEL);
}

#if defined(__AVX512BW__) || (defined(__AVX2__) && !defined(__AVX512F__)) /* ivec as wide as vec */
#if defined(__AVX512BW__)
typedef __m512i ivec;
#define iload(p) _mm512_loadu_si512((const void *)(p))
#define iset1(v) _mm512_set1_epi32(v)
#define izero() _mm512_setzero_si512()
#define istore(p, v) _mm512_storeu_si512((void *)(p), v)
#if defined(__AVX512VNNI__)
#define idot(acc, x, w) _mm512_dpbusd_epi32(acc, x, w)
#else
#define idot(acc, x, w) _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(x, w), _mm512_set1_epi16(1)))
#endif
#else
typedef __m256i ivec;
#define iload(p) _mm256_loadu_si256((const __m256i *)(p))
#define iset1(v) _mm256_set1_epi32(v)
#define izero() _mm256_setzero_si256()
#define istore(p, v) _mm256_storeu_si256((__m256i *)(p), v)
#if defined(__AVXVNNI__)
#define idot(acc, x, w) _mm256_dpbusd_avx_epi32(acc, x, w)
#else
#define idot(acc, x, w) _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(x, w), _mm256_set1_epi16(1)))
#endif
#endif
/* sums[0 .. n·VL) of outputs j0 …: n vectors of VL int32 sums, each over 4 inputs a multiply-add */
static inline __attribute__((always_inline)) void sums_q8(const Product *p, const uint8_t *q, int j0, int n,
                                                          int32_t *sums) {
    const int8_t *w[NACC];
    int64_t step[NACC];
    ivec acc[NACC];
    for (int a = 0; a < n; a++) acc[a] = izero(), w[a] = panel_at(p, j0 + a * VL), step[a] = panel_step(p, j0 + a * VL);
    for (int g = 0; g < p->in4 / 4; g++) {
        int32_t four;
        memcpy(&four, q + 4 * g, 4);
        ivec xg = iset1(four);
#pragma GCC unroll 16
        for (int a = 0; a < n; a++) acc[a] = idot(acc[a], xg, iload(w[a] + g * step[a]));
    }
    for (int a = 0; a < n; a++) istore(sums + a * VL, acc[a]);
}
#define VECTOR_Q8 1
#endif

static void sums_one(const Product *p, const uint8_t *q, int j, int32_t *sum) {
    const int8_t *w = panel_at(p, j);
    const int64_t step = panel_step(p, j);
    int32_t acc = 0;
    for (int g = 0; g < p->in4 / 4; g++)
        for (int r = 0; r < 4; r++) acc += (int32_t)q[4 * g + r] * (int32_t)w[g * step + r];
    *sum = acc;
}

/* Output o of an int8 = 2 product from its int32 sum, back to fp32 as fbgemm does; rs > 0: a row of several,
   multiplied by its scale after (int8_rows: bias + y · scale) */
static inline float from_sum(const Product *p, int32_t sum, int o, float xs, int32_t zp, float rs) {
    float v = (float)(sum - zp * p->colsum[o]) * (xs * p->scale[o]);
    float b = p->bias ? p->bias[o] : 0.0f;
    return (rs > 0.0f ? b + v * rs : v + b) * p->factor;
}

/* outputs j0 … j0 + n of an int8 = 2 product, one row */
static void tile_q8(const Product *p, const uint8_t *q, float xs, int32_t zp, float rs, int j0, int n, float *y) {
    int32_t sums[TILE];
    int j = 0;
#ifdef VECTOR_Q8
    if (n == TILE) {
        sums_q8(p, q, j0, NACC, sums);
        j = TILE;
    }
    for (; j + VL <= n; j += VL) sums_q8(p, q, j0 + j, 1, sums + j);
#endif
    for (; j < n; j++) sums_one(p, q, j0 + j, sums + j);
    for (j = 0; j < n; j++) y[j] = from_sum(p, sums[j], j0 + j, xs, zp, rs);
}

/* Several rows: RB rows × HALF outputs a block, each weight vector loaded once for all the rows (4 rows × 4 vectors
   of sums: 16 of AVX-512's 32 registers; 2 rows on AVX2's 16). */
#define HALF (TILE / 2)
#if defined(__AVX512F__)
#define RB 4
#else
#define RB 2
#endif

static inline __attribute__((always_inline)) void block_rows(const Product *p, const float *x, const int rb, int j0,
                                                             float *y, const int int8) {
    vec acc[RB][NACC / 2];
    for (int r = 0; r < rb; r++)
        for (int a = 0; a < NACC / 2; a++) acc[r][a] = vzero();
    for (int i = 0; i < p->in; i++) {
        const int64_t at = (int64_t)i * p->ld + j0;
        const float *w32 = int8 ? NULL : wf(p, i, j0);
        vec w[NACC / 2];
#pragma GCC unroll 8
        for (int a = 0; a < NACC / 2; a++)
            w[a] = int8 ? vload_i8((const int8_t *)p->wt + at + a * VL) : vload(w32 + a * VL);
#pragma GCC unroll 4
        for (int r = 0; r < rb; r++) {
            vec xi = vset1(x[r * p->in + i]);
#pragma GCC unroll 8
            for (int a = 0; a < NACC / 2; a++) acc[r][a] = vfma(xi, w[a], acc[r][a]);
        }
    }
    for (int r = 0; r < rb; r++)
        for (int a = 0; a < NACC / 2; a++) vstore(y + r * p->out + j0 + a * VL, acc[r][a]);
}

/* Every row of outputs [j0, j0 + TILE), rows in blocks of RB (a block's count a constant where it is inlined). */
static void tile_rows(const Product *p, const float *x, int rows, int j0, float *y) {
    for (int h = 0; h < 2; h++)
        for (int r0 = 0; r0 < rows; r0 += RB) {
            const float *xr = x + r0 * p->in;
            float *yr = y + r0 * p->out;
            const int rb = rows - r0 < RB ? rows - r0 : RB, j = j0 + h * HALF;
            switch (rb * 2 + (p->int8 ? 1 : 0)) {
            case 2: block_rows(p, xr, 1, j, yr, 0); break;
            case 3: block_rows(p, xr, 1, j, yr, 1); break;
#if RB >= 2
            case 4: block_rows(p, xr, 2, j, yr, 0); break;
            case 5: block_rows(p, xr, 2, j, yr, 1); break;
#endif
#if RB >= 4
            case 6: block_rows(p, xr, 3, j, yr, 0); break;
            case 7: block_rows(p, xr, 3, j, yr, 1); break;
            case 8: block_rows(p, xr, 4, j, yr, 0); break;
            case 9: block_rows(p, xr, 4, j, yr, 1); break;
#endif
            }
        }
}

#ifdef VECTOR_Q8
/* int8 = 2, several rows: blocks of QR rows × one panel (QV vectors) of outputs, the sums in registers (AVX-512:
   8 rows × 2 vectors = 16 of its 32 registers; AVX2: 2 × 4 of its 16), each weight vector loaded once for the
   block's rows; then back to fp32 in registers, as from_sum does it. Measured on the shipped model's products at 64
   rows (AMD EPYC Zen 4, one thread, before the panels): 8 × 2 ahead of 4 × 4 and 4 × 2 by 10–40 %, of 6 × 4 and
   12 × 2 by a third. */
#define QV (PANEL / VL)
#if defined(__AVX512BW__)
#define QR 8
#define vcvt(v) _mm512_cvtepi32_ps(v)
#define isub(a, b) _mm512_sub_epi32(a, b)
#define imul(a, b) _mm512_mullo_epi32(a, b)
#define vmul(a, b) _mm512_mul_ps(a, b)
#define vadd(a, b) _mm512_add_ps(a, b)
#else
#define QR 2
#define vcvt(v) _mm256_cvtepi32_ps(v)
#define isub(a, b) _mm256_sub_epi32(a, b)
#define imul(a, b) _mm256_mullo_epi32(a, b)
#define vmul(a, b) _mm256_mul_ps(a, b)
#define vadd(a, b) _mm256_add_ps(a, b)
#endif

static inline __attribute__((always_inline)) void block_q8(const Product *p, const Quant *s, int r0, const int rb,
                                                           int j0, float *y) {
    ivec acc[QR][QV];
    for (int r = 0; r < rb; r++)
        for (int a = 0; a < QV; a++) acc[r][a] = izero();
    const int8_t *w0 = panel_at(p, j0); /* QV · VL outputs within one whole panel */
    const uint8_t *q = s->q + (int64_t)r0 * p->in4;
    for (int g = 0; g < p->in4 / 4; g++) {
        const int8_t *row = w0 + (int64_t)g * PANEL * 4;
        ivec w[QV];
#pragma GCC unroll 8
        for (int a = 0; a < QV; a++) w[a] = iload(row + a * VL * 4);
#pragma GCC unroll 8
        for (int r = 0; r < rb; r++) {
            int32_t four;
            memcpy(&four, q + (int64_t)r * p->in4 + 4 * g, 4);
            ivec xg = iset1(four);
#pragma GCC unroll 8
            for (int a = 0; a < QV; a++) acc[r][a] = idot(acc[r][a], xg, w[a]);
        }
    }
    const vec f = vset1(p->factor);
    for (int a = 0; a < QV; a++) {
        const int o = j0 + a * VL;
        const ivec cs = iload(p->colsum + o);
        const vec sc = vload(p->scale + o), b = p->bias ? vload(p->bias + o) : vzero();
        for (int r = 0; r < rb; r++) {
            const int rr = r0 + r;
            vec v = vmul(vcvt(isub(acc[r][a], imul(iset1(s->zp[rr]), cs))), vmul(vset1(s->xs[rr]), sc));
            v = s->rs[rr] > 0.0f ? vfma(v, vset1(s->rs[rr]), b) : vadd(v, b);
            vstore(y + (int64_t)rr * p->out + o, vmul(v, f));
        }
    }
}

/* Every row of a whole block [j0, j0 + TILE) of an int8 = 2 product (a block's row count a constant where it is
   inlined) */
static void tile_rows_q8(const Product *p, const Quant *s, int rows, int j0, float *y) {
    for (int c = 0; c < NACC / QV; c++)
        for (int r0 = 0; r0 < rows; r0 += QR) {
            const int rb = rows - r0 < QR ? rows - r0 : QR, j = j0 + c * QV * VL;
            switch (rb) {
            case 1: block_q8(p, s, r0, 1, j, y); break;
            case 2: block_q8(p, s, r0, 2, j, y); break;
#if QR >= 8
            case 3: block_q8(p, s, r0, 3, j, y); break;
            case 4: block_q8(p, s, r0, 4, j, y); break;
            case 5: block_q8(p, s, r0, 5, j, y); break;
            case 6: block_q8(p, s, r0, 6, j, y); break;
            case 7: block_q8(p, s, r0, 7, j, y); break;
            case 8: block_q8(p, s, r0, 8, j, y); break;
#endif
            }
        }
}
#endif

/* Y (rows × out) = X (rows × in) Wᵀ + b. The blocks of outputs split between the threads OpenMP gives (torch's own
   runtime: the process has loaded its libgomp, and torch.set_num_threads sets the count), where the product is large
   enough to pay for waking them; within a block each row in turn, the block's weights still in the core's cache.
   int8 = 2: the rows quantized as quantize_rows says for `own`. */
static void product(const Product *p, const float *x, int rows, float *y, const Quant *s, int own) {
    const int tiles = p->out / TILE, rest = p->out - tiles * TILE;
    const int64_t macs = (int64_t)rows * p->in * p->out;
    if (p->int8 == 2) {
        quantize_rows(p, x, rows, s, own);
#pragma omp parallel for schedule(static) if (macs >= PARALLEL_MIN)
        for (int t = 0; t < tiles; t++) {
#ifdef VECTOR_Q8
            if (rows > 1) {
                tile_rows_q8(p, s, rows, t * TILE, y);
                continue;
            }
#endif
            for (int r = 0; r < rows; r++)
                tile_q8(p, s->q + (int64_t)r * p->in4, s->xs[r], s->zp[r], s->rs[r], t * TILE, TILE,
                        y + (int64_t)r * p->out + t * TILE);
        }
        if (rest)
            for (int r = 0; r < rows; r++)
                tile_q8(p, s->q + (int64_t)r * p->in4, s->xs[r], s->zp[r], s->rs[r], tiles * TILE, rest,
                        y + (int64_t)r * p->out + tiles * TILE);
        return;
    }
#pragma omp parallel for schedule(static) if (macs >= PARALLEL_MIN)
    for (int t = 0; t < tiles; t++) {
        if (rows > 1) {
            tile_rows(p, x, rows, t * TILE, y);
            continue;
        }
        if (p->int8)
            tile_i8(p, x, t * TILE, y + t * TILE);
        else
            tile_f32(p, x, t * TILE, y + t * TILE);
    }
    for (int r = 0; r < rows; r++) {
        float *yr = y + r * p->out;
        if (rest) tail(p, x + r * p->in, tiles * TILE, yr + tiles * TILE);
        for (int j = 0; j < p->out; j++) {
            float v = p->scale ? yr[j] * p->scale[j] : yr[j];
            if (p->bias) v += p->bias[j];
            yr[j] = v * p->factor;
        }
    }
}

static void layer_norm(float *x, int d, const float *w, const float *b, float eps) {
    float mean = 0.0f, var = 0.0f;
    for (int i = 0; i < d; i++) mean += x[i];
    mean /= (float)d;
    for (int i = 0; i < d; i++) {
        float c = x[i] - mean;
        var += c * c;
    }
    float inv = 1.0f / sqrtf(var / (float)d + eps);
    for (int i = 0; i < d; i++) x[i] = (x[i] - mean) * inv * w[i] + b[i];
}

/* The sum of a vector's lanes. */
static inline float lanes_sum(vec v) {
#if defined(__AVX512F__)
    return _mm512_reduce_add_ps(v);
#elif defined(__AVX2__) && defined(__FMA__)
    __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_add_ps(x, _mm_movehl_ps(x, x));
    return _mm_cvtss_f32(_mm_add_ss(x, _mm_movehdup_ps(x)));
#else
    return v;
#endif
}

/* a · b over n floats, VL lanes at a time (a plain loop's one running sum is a chain of n dependent additions, which
   the compiler may not reorder: a quarter of a batch's greedy step went to attention that way) */
static inline float dot(const float *a, const float *b, int n) {
    vec acc = vzero();
    int c = 0;
    for (; c + VL <= n; c += VL) acc = vfma(vload(a + c), vload(b + c), acc);
    float s = lanes_sum(acc);
    for (; c < n; c++) s += a[c] * b[c];
    return s;
}

/* out (n) += p · v (n) */
static inline void add_scaled(float *out, float p, const float *v, int n) {
    const vec vp = vset1(p);
    int c = 0;
    for (; c + VL <= n; c += VL) vstore(out + c, vfma(vp, vload(v + c), vload(out + c)));
    for (; c < n; c++) out[c] += p * v[c];
}

/* out (d) = the heads of softmax(q kᵀ + bias) v for one (already scaled) query q (d) over t positions of keys and
   values (h, stride, d_k); bias (t): 0, or -inf for a position the query may not read (beam slots off its prefix),
   NULL for none; scores: t floats of scratch. */
static void attend(const float *q, const float *k, const float *v, const float *bias, int h, int d_k, int stride,
                   int t, float *scores, float *out) {
    for (int hh = 0; hh < h; hh++) {
        const float *qh = q + hh * d_k, *kh = k + (int64_t)hh * stride * d_k, *vh = v + (int64_t)hh * stride * d_k;
        float top = -INFINITY;
        for (int j = 0; j < t; j++) {
            if (bias && isinf(bias[j])) continue;
            float s = dot(qh, kh + (int64_t)j * d_k, d_k);
            scores[j] = s;
            top = s > top ? s : top;
        }
        float total = 0.0f;
        for (int j = 0; j < t; j++)
            if (!(bias && isinf(bias[j]))) total += (scores[j] = expf(scores[j] - top));
        float *oh = out + hh * d_k;
        for (int c = 0; c < d_k; c++) oh[c] = 0.0f;
        for (int j = 0; j < t; j++) {
            if (bias && isinf(bias[j])) continue;
            add_scaled(oh, scores[j] / total, vh + (int64_t)j * d_k, d_k);
        }
    }
}

static void layer_norms(const Step *s, float *x, int rows, const float *w, const float *b) {
    for (int r = 0; r < rows; r++) layer_norm(x + r * s->d, s->d, w, b, s->eps);
}

/* x += sub, then post-norm's LayerNorm (pre-norm: the next sub-layer normalizes its own input, sublayer_input) */
static void residual(const Step *s, float *x, const float *sub, int rows, const float *w, const float *b) {
    for (int i = 0; i < rows * s->d; i++) x[i] += sub[i];
    if (!s->pre) layer_norms(s, x, rows, w, b);
}

static void sublayer_input(const Step *s, const float *x, float *y, int rows, const float *w, const float *b) {
    memcpy(y, x, (size_t)rows * s->d * sizeof(float));
    if (s->pre) layer_norms(s, y, rows, w, b);
}

#define MAX_ROWS 8 /* a sentence's beams (core/model/fast.py SMALL_ROWS) */

int64_t tt_scratch_floats(int32_t d, int32_t d_ff, int32_t capacity, int32_t src_len) {
    int64_t t = capacity > src_len ? capacity : src_len, widest = d_ff > 3 * d ? d_ff : 3 * d;
    /* x, y, qkv, heads, sub (7 d), ff; scores; the rows divided by their scales, rs, xs, zp; the rows quantized */
    return MAX_ROWS * (7 * (int64_t)d + d_ff) + t + 4 * TILE + MAX_ROWS * (widest + 3) + MAX_ROWS * (widest + 8) / 4;
}

int32_t tt_max_rows(void) { return MAX_ROWS; }
/* The outputs of a tile: an fp32 product's weights laid tile by tile (`Product.blocked`) use it. */
int32_t tt_tile(void) { return TILE; }

/* 1 where a batch's int8 products (more rows than MAX_ROWS) were measured faster here than fbgemm's: AVX-512 with
   VNNI (AMD EPYC Zen 4, bench/README.md); elsewhere they stay on fbgemm, not measured */
int32_t tt_many_rows(void) {
#if defined(__AVX512BW__) && defined(__AVX512VNNI__)
    return 1;
#else
    return 0;
#endif
}

/* One step of one sentence: `rows` pieces `tokens` at position `offset` -> logits (rows × vocab).
   slots == 0: one row; its keys and values go to position `offset` of each layer's cache, its query reads 0 … offset.
   slots = k > 0: beam search's slots (core/model/transformer.py BeamSlots): row r's keys and values go to slot
   offset · k + r, the step's unused slots are zeroed, and row r reads the slots where its row of `ancestry` (rows ×
   capacity, row stride `ancestry_stride`) is 0, its own new slot set so first.
   Returns 0, or -1 (nothing done) where the step does not fit the caches or `rows` is too many. */
int32_t tt_step(const Step *s, const int64_t *tokens, int32_t rows, int32_t offset, int32_t slots, float *ancestry,
                int64_t ancestry_stride, float *logits) {
    const int k = slots > 0 ? slots : 1, filled = (offset + 1) * k;
    if (offset < 0 || filled > s->capacity || rows < 1 || rows > MAX_ROWS || rows > k) return -1;
    const int d = s->d, h = s->h, d_k = s->d_k, t = s->capacity > s->src_len ? s->capacity : s->src_len;
    const int widest = s->d_ff > 3 * d ? s->d_ff : 3 * d;
    float *x = s->scratch, *y = x + MAX_ROWS * d, *qkv = y + MAX_ROWS * d, *heads = qkv + MAX_ROWS * 3 * d;
    float *sub = heads + MAX_ROWS * d, *ff = sub + MAX_ROWS * d, *scores = ff + MAX_ROWS * s->d_ff;
    float *xr = scores + t + 4 * TILE, *rs = xr + MAX_ROWS * widest, *xs = rs + MAX_ROWS;
    const Quant qs = {xr, rs, xs, (int32_t *)(xs + MAX_ROWS), (uint8_t *)(xs + 2 * MAX_ROWS)}, *q = &qs;
    for (int r = 0; r < rows; r++) {
        if (tokens[r] < 0 || tokens[r] >= s->vocab) return -1;
        const float *emb = s->table + tokens[r] * d, *pos = s->positions + (int64_t)offset * d;
        for (int i = 0; i < d; i++) x[r * d + i] = pos[i] + emb[i] * s->emb_scale;
        if (slots) ancestry[r * ancestry_stride + offset * k + r] = 0.0f;
    }
    for (int l = 0; l < s->n_layers; l++) {
        const Layer *L = &s->layers[l];
        /* self-attention: Q (scaled), K, V in one product; K and V into the cache */
        sublayer_input(s, x, y, rows, L->norm_w[0], L->norm_b[0]);
        product(&L->qkv, y, rows, qkv, q, 0);
        for (int r = 0; r < k; r++)
            for (int hh = 0; hh < h; hh++) {
                int64_t at = ((int64_t)hh * s->capacity + offset * k + r) * d_k;
                if (r < rows) {
                    memcpy(L->self_k + at, qkv + r * 3 * d + d + hh * d_k, (size_t)d_k * sizeof(float));
                    memcpy(L->self_v + at, qkv + r * 3 * d + 2 * d + hh * d_k, (size_t)d_k * sizeof(float));
                } else { /* a slot no beam takes this step: zeroed, as the torch step leaves it */
                    memset(L->self_k + at, 0, (size_t)d_k * sizeof(float));
                    memset(L->self_v + at, 0, (size_t)d_k * sizeof(float));
                }
            }
        for (int r = 0; r < rows; r++)
            attend(qkv + r * 3 * d, L->self_k, L->self_v, slots ? ancestry + r * ancestry_stride : NULL, h, d_k,
                   s->capacity, filled, scores, heads + r * d);
        product(&L->self_out, heads, rows, sub, q, 0);
        residual(s, x, sub, rows, L->norm_w[0], L->norm_b[0]);
        /* cross-attention over the memory */
        sublayer_input(s, x, y, rows, L->norm_w[1], L->norm_b[1]);
        product(&L->cross_q, y, rows, qkv, q, 0);
        for (int r = 0; r < rows; r++)
            attend(qkv + r * d, L->cross_k, L->cross_v, NULL, h, d_k, s->src_len, s->src_len, scores, heads + r * d);
        product(&L->cross_out, heads, rows, sub, q, 0);
        residual(s, x, sub, rows, L->norm_w[1], L->norm_b[1]);
        /* FFN */
        sublayer_input(s, x, y, rows, L->norm_w[2], L->norm_b[2]);
        product(&L->w_1, y, rows, ff, q, 0);
        for (int i = 0; i < rows * s->d_ff; i++) ff[i] = ff[i] > 0.0f ? ff[i] : 0.0f;
        product(&L->w_2, ff, rows, sub, q, 0);
        residual(s, x, sub, rows, L->norm_w[2], L->norm_b[2]);
    }
    if (s->final_w) layer_norms(s, x, rows, s->final_w, s->final_b);
    product(&s->generator, x, rows, logits, q, 0);
    return 0;
}

/* One product alone: `rows` rows of x (rows × in) -> y (rows × out). own: int8 = 2 rows each quantized over its own
   range (a batch's products, core/model/fast.py), else as the step quantizes them (tests hold both to torch's).
   scratch: tt_product_floats(in, in4, rows) floats. */
int64_t tt_product_floats(int32_t in, int32_t in4, int32_t rows) {
    return (int64_t)rows * (in + 3) + ((int64_t)rows * in4 + 3) / 4 + 1;
}

void tt_product(const Product *p, const float *x, int32_t rows, float *y, float *scratch, int32_t own) {
    float *xs = scratch + (int64_t)rows * p->in + rows;
    const Quant s = {scratch, scratch + (int64_t)rows * p->in, xs, (int32_t *)(xs + rows), (uint8_t *)(xs + 2 * rows)};
    product(p, x, rows, y, &s, own);
}

/* An int8 weight W (out × in, rows in apart) as int8 = 2 products read it: in panels of PANEL outputs, each (in4 / 4,
   width, 4), the inputs past `in` zero; and Σ_i W[j][i] per output. (In C: torch's permute and copy of int8 took
   ~50 ms a model, every command.) */
void tt_pack_int8(const int8_t *w, int32_t out, int32_t in, int32_t in4, int8_t *packed, int32_t *colsum) {
    const Product p = {.wt = packed, .out = out, .in = in, .in4 = in4};
    for (int j = 0; j < out; j++) {
        int32_t total = 0;
        int8_t *at = (int8_t *)panel_at(&p, j);
        const int64_t step = panel_step(&p, j);
        for (int i = 0; i < in4; i++) {
            int8_t v = i < in ? w[(int64_t)j * in + i] : 0;
            at[(i / 4) * step + i % 4] = v;
            total += v;
        }
        colsum[j] = total;
    }
}

/* A batch's attention, one (already scaled) query per row: for each of `rows` rows (a sentence's head), out (d_k) =
   softmax(q kᵀ + bias) v over its t keys and values (t × d_k each, rows k_ld and v_ld floats apart), bias (t, rows
   bias_ld apart): 0, or -inf for a position the query may not read (source padding), NULL for none. torch computes it
   as two batched products of one-row matrices around a softmax (core/model/step.py `_attend`). Rows split between
   threads where there are enough. Returns -1 (nothing done) where t is past ATTEND_MAX, else 0. */
#define ATTEND_MAX 1024
int32_t tt_attend_rows(const float *q, const float *k, const float *v, const float *bias, int32_t rows, int32_t d_k,
                       int32_t t, int64_t k_ld, int64_t v_ld, int64_t bias_ld, float *out) {
    if (t > ATTEND_MAX) return -1;
#pragma omp parallel for schedule(static) if ((int64_t)rows * t * d_k >= (1 << 16))
    for (int r = 0; r < rows; r++) {
        float scores[ATTEND_MAX];
        attend(q + (int64_t)r * d_k, k + r * k_ld, v + r * v_ld, bias ? bias + r * bias_ld : NULL, 1, d_k, 0, t, scores,
               out + (int64_t)r * d_k);
    }
    return 0;
}

/* Greedy's choice: for each of `rows` rows of n floats (rows ld apart), the first index of its largest value and
   that value — what torch.max(x, -1) returns, which torch computes one value at a time (~450 µs for 64 rows of 8,010
   against ~35 µs for the values alone). Rows split between threads where there are enough. */
void tt_best(const float *x, int32_t rows, int32_t n, int64_t ld, int64_t *index, float *value) {
#pragma omp parallel for schedule(static) if ((int64_t)rows * n >= (1 << 17))
    for (int r = 0; r < rows; r++) {
        const float *row = x + r * ld;
        float top = -INFINITY;
        int i = 0, nan = 0;
#if defined(__AVX512F__)
        __m512 vtop = _mm512_set1_ps(-INFINITY);
        __mmask16 unordered = 0;
        for (; i + 16 <= n; i += 16) {
            __m512 v = _mm512_loadu_ps(row + i);
            unordered |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
            vtop = _mm512_max_ps(vtop, v);
        }
        top = _mm512_reduce_max_ps(vtop), nan = unordered != 0;
#endif
        for (; i < n; i++) {
            nan |= isnan(row[i]);
            top = row[i] > top ? row[i] : top;
        }
        int at = 0;
        if (nan) /* torch.max's answer where a row holds NaN: the first */
            while (at < n - 1 && !isnan(row[at])) at++;
        else
            while (at < n - 1 && !(row[at] == top)) at++;
        index[r] = at;
        value[r] = row[at];
    }
}

/* Beam search's best pieces of each beam: the w largest values of each of `rows` rows of n floats (rows ld apart),
   best first, and their columns; among equal values the lower column first. torch.topk over a row of 8,010 takes
   ~25 µs; this reads the row once, comparing 16 values at a time with the w-th best so far. Returns -1 (nothing
   usable) where a row holds NaN (the caller asks torch), else 0. */
static int32_t row_top_one(const float *row, int32_t n, int32_t w, float *tv, int64_t *ti) {
    int count = 0, status = 0;
#define TT_INSERT(j)                                                                                                 \
    do {                                                                                                              \
        const float v_ = row[j];                                                                                      \
        if (isnan(v_)) {                                                                                              \
            status = -1;                                                                                              \
            break;                                                                                                    \
        }                                                                                                             \
        if (count == w && !(v_ > tv[w - 1])) break;                                                                   \
        int at_ = count < w ? count++ : w - 1;                                                                        \
        while (at_ > 0 && v_ > tv[at_ - 1]) {                                                                         \
            tv[at_] = tv[at_ - 1], ti[at_] = ti[at_ - 1];                                                             \
            at_--;                                                                                                    \
        }                                                                                                             \
        tv[at_] = v_, ti[at_] = (j);                                                                                  \
    } while (0)
    int j = 0;
    for (; j < w && status == 0; j++) TT_INSERT(j);
#if defined(__AVX512F__)
    for (; j + 16 <= n && status == 0; j += 16) {
        const __m512 v = _mm512_loadu_ps(row + j);
        __mmask16 hits = _mm512_cmp_ps_mask(v, _mm512_set1_ps(tv[w - 1]), _CMP_NLE_UQ); /* > or NaN */
        while (hits && status == 0) {
            const int b = __builtin_ctz(hits);
            hits &= hits - 1;
            TT_INSERT(j + b);
        }
    }
#endif
    for (; j < n && status == 0; j++) TT_INSERT(j);
#undef TT_INSERT
    return status;
}

int32_t tt_row_top(const float *x, int32_t rows, int32_t n, int64_t ld, int32_t w, float *values, int64_t *index) {
    if (w < 1 || w > n) return -1;
    int32_t status = 0;
#pragma omp parallel for schedule(static) if ((int64_t)rows * n >= (1 << 17))
    for (int r = 0; r < rows; r++)
        if (row_top_one(x + r * ld, n, w, values + (int64_t)r * w, index + (int64_t)r * w) != 0) {
#pragma omp atomic write
            status = -1;
        }
    return status;
}
