/* One sentence's decoder step in C: the whole step in one call, where torch issues ~100 operations from Python.

   At batch 1 a step reads every decoder weight once for a few multiply-adds each: its time is reading the weights
   plus, in torch, ~1 µs of dispatch per operation (bench/README.md, *Where the time goes at batch 1*). This file
   computes the same function as core/model/step.py's FusedStep for one row without beams: embeddings and positions,
   per layer the self-attention over the cache (the new keys and values written into it), the cross-attention over
   the memory's keys and values, the FFN, each sub-layer's Add & Norm (post or pre), the final norm, the generator.

   Products read Wᵀ (in × out) a block of outputs at a time, the block's sums in registers: one broadcast input times
   a row of the block per multiply-add, no horizontal sums. fp32 weights are the fused step's own Wᵀ; int8 weights
   (one scale per output) are converted to fp32 in registers, so the activations are not rounded (the int8 weights'
   own values, as core/model/fast.py's SMALL_ROWS path computes them). Compiled on the machine that runs it
   (core/model/native/__init__.py), for its own instruction set. No allocation, no threads, no global state. */

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

/* y[j0 .. j0 + TILE) = Σ_i x[i] Wᵀ[i][j]: TILE sums in registers, one broadcast x[i] per row of the block; the
   weights fp32 or (int8, a constant where it is inlined) int8 values converted in registers. */
static inline __attribute__((always_inline)) void tile(const Product *p, const float *x, int j0, float *y,
                                                       const int int8) {
    vec acc[NACC];
    for (int a = 0; a < NACC; a++) acc[a] = vzero();
    for (int i = 0; i < p->in; i++) {
        const int64_t at = (int64_t)i * p->ld + j0;
        const float *wf = (const float *)p->wt + at;
        const int8_t *w8 = (const int8_t *)p->wt + at;
        vec xi = vset1(x[i]);
#pragma GCC unroll 16
        for (int a = 0; a < NACC; a++) acc[a] = vfma(xi, int8 ? vload_i8(w8 + a * VL) : vload(wf + a * VL), acc[a]);
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
            vec w = p->int8 ? vload_i8((const int8_t *)p->wt + at) : vload((const float *)p->wt + at);
            acc = vfma(vset1(x[i]), w, acc);
        }
        vstore(y + j - j0, acc);
    }
    for (; j < p->out; j++) {
        float acc = 0.0f;
        for (int i = 0; i < p->in; i++) {
            const int64_t at = (int64_t)i * p->ld + j;
            acc += x[i] * (p->int8 ? (float)((const int8_t *)p->wt)[at] : ((const float *)p->wt)[at]);
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
static void quantize(const Product *p, const float *x, uint8_t *q, float *scale_out, int32_t *zero_out) {
    float lo = 0.0f, hi = 0.0f;
    for (int i = 0; i < p->in; i++) {
        lo = x[i] < lo ? x[i] : lo;
        hi = x[i] > hi ? x[i] : hi;
    }
    float scale = (float)(((double)hi - (double)lo) / 127.0);
    if (scale == 0.0f || isinf(1.0f / scale)) scale = 0.1f;
    double from_lo = 0.0 - lo / (double)scale, from_hi = 127.0 - hi / (double)scale;
    double error_lo = 0.0 - fabs(lo / (double)scale), error_hi = 127.0 - fabs(hi / (double)scale);
    double zero = nearbyint(error_lo < error_hi ? from_lo : from_hi);
    int32_t zp = zero < 0.0 ? 0 : zero > 127.0 ? 127 : (int32_t)zero;
    float inv = 1.0f / scale;
    for (int i = 0; i < p->in; i++) {
        float v = nearbyintf(x[i] * inv) + (float)zp;
        q[i] = (uint8_t)(v < 0.0f ? 0.0f : v > 127.0f ? 127.0f : v);
    }
    for (int i = p->in; i < p->in4; i++) q[i] = 0; /* against zero weights */
    *scale_out = scale;
    *zero_out = zp;
}

#if defined(__AVX512BW__) || defined(__AVX2__)
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
    const int8_t *w = (const int8_t *)p->wt + (int64_t)j0 * 4;
    ivec acc[NACC];
    for (int a = 0; a < n; a++) acc[a] = izero();
    for (int g = 0; g < p->in4 / 4; g++) {
        int32_t four;
        memcpy(&four, q + 4 * g, 4);
        ivec xg = iset1(four);
        const int8_t *row = w + (int64_t)g * p->out * 4;
#pragma GCC unroll 16
        for (int a = 0; a < n; a++) acc[a] = idot(acc[a], xg, iload(row + a * VL * 4));
    }
    for (int a = 0; a < n; a++) istore(sums + a * VL, acc[a]);
}
#define VECTOR_Q8 1
#endif

static void sums_one(const Product *p, const uint8_t *q, int j, int32_t *sum) {
    const int8_t *w = (const int8_t *)p->wt + (int64_t)j * 4;
    int32_t acc = 0;
    for (int g = 0; g < p->in4 / 4; g++)
        for (int r = 0; r < 4; r++) acc += (int32_t)q[4 * g + r] * (int32_t)w[(int64_t)g * p->out * 4 + r];
    *sum = acc;
}

/* outputs j0 … j0 + n of an int8 = 2 product: the int32 sums, then back to fp32 as fbgemm does */
static void tile_q8(const Product *p, const uint8_t *q, float xs, int32_t zp, int j0, int n, float *y) {
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
    for (j = 0; j < n; j++) {
        float v = (float)(sums[j] - zp * p->colsum[j0 + j]) * (xs * p->scale[j0 + j]);
        y[j] = (p->bias ? v + p->bias[j0 + j] : v) * p->factor;
    }
}

/* The blocks split between the threads OpenMP gives (torch's own runtime: the process has loaded its libgomp, and
   torch.set_num_threads sets the count), where the product is large enough to pay for waking them. */
static void product(const Product *p, const float *x, float *y, uint8_t *q) {
    const int tiles = p->out / TILE;
    if (p->int8 == 2) {
        float xs;
        int32_t zp;
        quantize(p, x, q, &xs, &zp);
#pragma omp parallel for schedule(static) if ((int64_t)p->in * p->out >= PARALLEL_MIN)
        for (int t = 0; t < tiles; t++) tile_q8(p, q, xs, zp, t * TILE, TILE, y + t * TILE);
        if (tiles * TILE < p->out) tile_q8(p, q, xs, zp, tiles * TILE, p->out - tiles * TILE, y + tiles * TILE);
        return;
    }
#pragma omp parallel for schedule(static) if ((int64_t)p->in * p->out >= PARALLEL_MIN)
    for (int t = 0; t < tiles; t++) {
        if (p->int8)
            tile_i8(p, x, t * TILE, y + t * TILE);
        else
            tile_f32(p, x, t * TILE, y + t * TILE);
    }
    if (tiles * TILE < p->out) tail(p, x, tiles * TILE, y + tiles * TILE);
    for (int j = 0; j < p->out; j++) {
        float v = p->scale ? y[j] * p->scale[j] : y[j];
        if (p->bias) v += p->bias[j];
        y[j] = v * p->factor;
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

/* out (d) = the heads of softmax(q kᵀ) v for one (already scaled) query q (d) over t positions of keys and values
   (h, stride, d_k); scores: t floats of scratch. */
static void attend(const float *q, const float *k, const float *v, int h, int d_k, int stride, int t, float *scores,
                   float *out) {
    for (int hh = 0; hh < h; hh++) {
        const float *qh = q + hh * d_k, *kh = k + (int64_t)hh * stride * d_k, *vh = v + (int64_t)hh * stride * d_k;
        float top = -INFINITY;
        for (int j = 0; j < t; j++) {
            float s = 0.0f;
            for (int c = 0; c < d_k; c++) s += qh[c] * kh[(int64_t)j * d_k + c];
            scores[j] = s;
            top = s > top ? s : top;
        }
        float total = 0.0f;
        for (int j = 0; j < t; j++) total += (scores[j] = expf(scores[j] - top));
        float *oh = out + hh * d_k;
        for (int c = 0; c < d_k; c++) oh[c] = 0.0f;
        for (int j = 0; j < t; j++) {
            float p = scores[j] / total;
            for (int c = 0; c < d_k; c++) oh[c] += p * vh[(int64_t)j * d_k + c];
        }
    }
}

/* x += sub, then post-norm's LayerNorm; pre-norm: y = LayerNorm(x) for the next sub-layer (norm: the next one's). */
static void residual(const Step *s, float *x, const float *sub, const float *w, const float *b) {
    for (int i = 0; i < s->d; i++) x[i] += sub[i];
    if (!s->pre) layer_norm(x, s->d, w, b, s->eps);
}

static void sublayer_input(const Step *s, const float *x, float *y, const float *w, const float *b) {
    memcpy(y, x, (size_t)s->d * sizeof(float));
    if (s->pre) layer_norm(y, s->d, w, b, s->eps);
}

int64_t tt_scratch_floats(int32_t d, int32_t d_ff, int32_t capacity, int32_t src_len) {
    int64_t t = capacity > src_len ? capacity : src_len;
    return 7 * (int64_t)d + d_ff + t + 4 * TILE + (d_ff + d + 8) / 4 + 2; /* the last: a row quantized */
}

/* One step: the piece `token` at position `offset` -> logits (vocab); every layer's cache gains position `offset`.
   Returns 0, or -1 when offset is outside the caches. */
int32_t tt_step(const Step *s, int32_t token, int32_t offset, float *logits) {
    if (offset < 0 || offset >= s->capacity) return -1;
    const int d = s->d, h = s->h, d_k = s->d_k;
    float *x = s->scratch, *y = x + d, *qkv = y + d, *heads = qkv + 3 * d, *sub = heads + d, *ff = sub + d;
    float *scores = ff + s->d_ff;
    uint8_t *q = (uint8_t *)(scores + (s->capacity > s->src_len ? s->capacity : s->src_len) + 4 * TILE);
    const float *emb = s->table + (int64_t)token * d, *pos = s->positions + (int64_t)offset * d;
    for (int i = 0; i < d; i++) x[i] = pos[i] + emb[i] * s->emb_scale;
    for (int l = 0; l < s->n_layers; l++) {
        const Layer *L = &s->layers[l];
        /* self-attention: Q (scaled), K, V in one product; K and V into the cache at `offset` */
        sublayer_input(s, x, y, L->norm_w[0], L->norm_b[0]);
        product(&L->qkv, y, qkv, q);
        for (int hh = 0; hh < h; hh++) {
            int64_t at = ((int64_t)hh * s->capacity + offset) * d_k;
            memcpy(L->self_k + at, qkv + d + hh * d_k, (size_t)d_k * sizeof(float));
            memcpy(L->self_v + at, qkv + 2 * d + hh * d_k, (size_t)d_k * sizeof(float));
        }
        attend(qkv, L->self_k, L->self_v, h, d_k, s->capacity, offset + 1, scores, heads);
        product(&L->self_out, heads, sub, q);
        residual(s, x, sub, L->norm_w[0], L->norm_b[0]);
        /* cross-attention over the memory */
        sublayer_input(s, x, y, L->norm_w[1], L->norm_b[1]);
        product(&L->cross_q, y, qkv, q);
        attend(qkv, L->cross_k, L->cross_v, h, d_k, s->src_len, s->src_len, scores, heads);
        product(&L->cross_out, heads, sub, q);
        residual(s, x, sub, L->norm_w[1], L->norm_b[1]);
        /* FFN */
        sublayer_input(s, x, y, L->norm_w[2], L->norm_b[2]);
        product(&L->w_1, y, ff, q);
        for (int i = 0; i < s->d_ff; i++) ff[i] = ff[i] > 0.0f ? ff[i] : 0.0f;
        product(&L->w_2, ff, sub, q);
        residual(s, x, sub, L->norm_w[2], L->norm_b[2]);
    }
    if (s->final_w) layer_norm(x, d, s->final_w, s->final_b, s->eps);
    product(&s->generator, x, logits, q);
    return 0;
}
