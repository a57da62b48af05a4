"""One sentence's decoder step in C (step.c), and a batch's int8 products, compiled on first use on the machine that
runs it.

At batch 1 (`tt translate "…"`, the REPL, a server at low load) torch issues a step as ~100 operations at ~1 µs of
dispatch each around products that read each weight once: CTranslate2 runs the whole step in C++ (bench/README.md,
*Where the time goes at batch 1*). step.c computes FusedStep's function for one sentence — one row, or its beams in
their slots (up to MAX_ROWS) — in one call. In batches, each int8 product (`Rows`) is step.c's too: the rows
quantized as torch hands them to fbgemm, the quantization vectorized and the sums in register blocks of rows.
It is compiled with the system's C compiler (`$CC`, else `cc`) for this CPU (`-march=native`; without AVX-512
where ATEN_CPU_CAPABILITY asks torch for AVX2 or less) into tt's cache directory, once: ~1 s on the first command,
then a cached library. Where no compiler works, or TT_NATIVE=0, `library()` is None and decoding takes torch's
path: the same function up to rounding.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import torch

from core.errors import OutputError
from core.files import atomic_path, cache_home

SOURCE = Path(__file__).with_name("step.c")
# -fassociative-math lets the compiler vectorize the attention's dot products (sums in another order, as any
# product kernel's); no -ffast-math: the softmax starts from -inf and must see it.
FLAGS = ["-O3", "-march=native", "-fPIC", "-shared", "-fno-math-errno", "-fno-trapping-math", "-fno-signed-zeros"]
FLAGS += ["-fassociative-math", "-fopenmp"]
MAX_ROWS = 8  # step.c's MAX_ROWS: the most rows (a sentence's beams) one call takes
_WHY_NOT: list[str] = []  # why library() is None, once it has been asked


def cache_dir() -> Path:
    """$TT_CACHE/native, else $XDG_CACHE_HOME/tt/native, else ~/.cache/tt/native."""
    if os.environ.get("TT_CACHE"):
        return Path(os.environ["TT_CACHE"]) / "native"
    return cache_home() / "native"


def _isa_flags() -> list[str]:
    """Flags that keep the library within the instruction sets torch is told to use (ATEN_CPU_CAPABILITY)."""
    capability = os.environ.get("ATEN_CPU_CAPABILITY", "").lower()
    if capability == "avx2":
        return ["-mno-avx512f"]
    if capability == "default":
        return ["-mno-avx512f", "-mno-avx2", "-mno-fma"]
    return []


def enabled() -> bool:
    """TT_NATIVE=0 sends every step through torch (benches compare the two; tests hold them equal)."""
    return os.environ.get("TT_NATIVE", "1") != "0"


@functools.cache
def _library(compiler: str, flags: tuple[str, ...]) -> ctypes.CDLL | None:
    source = SOURCE.read_bytes()
    found = shutil.which(compiler)
    if found is None:
        _WHY_NOT.append(f"no C compiler ({compiler} not found)")
        return None
    # The compiler named by its file, not by asking it (`cc --version` would cost every command a process).
    facts = os.stat(os.path.realpath(found))
    version = f"{os.path.realpath(found)} {facts.st_size} {facts.st_mtime_ns}".encode()
    from core.device import cpu_flags

    key = hashlib.sha256(b"\0".join([source, version, " ".join(flags).encode(), cpu_flags().encode()])).hexdigest()
    key = key[:20]
    directory = cache_dir()
    path = directory / f"step-{key}.so"
    if not path.is_file():
        try:
            directory.mkdir(parents=True, exist_ok=True)
            # Compiled under a temporary name beside it, then renamed: a second process compiling at the same time
            # replaces it with the same library.
            with atomic_path(path) as tmp:
                subprocess.run(
                    [compiler, *flags, str(SOURCE), "-o", str(tmp)], capture_output=True, timeout=120, check=True
                )
        except (OSError, OutputError, subprocess.SubprocessError) as e:
            detail = getattr(e, "stderr", b"") or b""
            _WHY_NOT.append(f"{compiler} failed on {SOURCE.name}: {e} {detail.decode(errors='replace')[:300]}".strip())
            return None
    try:
        lib = ctypes.CDLL(str(path))
    except OSError as e:
        _WHY_NOT.append(f"cannot load {path}: {e}")
        return None
    lib.tt_step.argtypes = [ctypes.POINTER(_Step), ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32]
    lib.tt_step.argtypes += [ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p]
    lib.tt_step.restype = ctypes.c_int32
    lib.tt_max_rows.restype = ctypes.c_int32
    lib.tt_tile.restype = ctypes.c_int32
    lib.tt_many_rows.restype = ctypes.c_int32
    lib.tt_best.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32, ctypes.c_int64, ctypes.c_void_p]
    lib.tt_best.argtypes += [ctypes.c_void_p]
    lib.tt_row_top.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32, ctypes.c_int64, ctypes.c_int32]
    lib.tt_row_top.argtypes += [ctypes.c_void_p, ctypes.c_void_p]
    lib.tt_row_top.restype = ctypes.c_int32
    lib.tt_attend_rows.argtypes = (
        [ctypes.c_void_p] * 4 + [ctypes.c_int32] * 3 + [ctypes.c_int64] * 3 + [ctypes.c_void_p]
    )
    lib.tt_attend_rows.restype = ctypes.c_int32
    lib.tt_pack_int8.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, ctypes.c_void_p]
    lib.tt_pack_int8.argtypes += [ctypes.c_void_p]
    lib.tt_product.argtypes = [ctypes.POINTER(_Product), ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p]
    lib.tt_product.argtypes += [ctypes.c_void_p, ctypes.c_int32]
    lib.tt_product_floats.argtypes = [ctypes.c_int32] * 3
    lib.tt_product_floats.restype = ctypes.c_int64
    if lib.tt_max_rows() != MAX_ROWS:
        _WHY_NOT.append(f"{path} takes {lib.tt_max_rows()} rows, not {MAX_ROWS}: a library of another version")
        return None
    lib.tt_scratch_floats.argtypes = [ctypes.c_int32] * 4
    lib.tt_scratch_floats.restype = ctypes.c_int64
    return lib


def library() -> ctypes.CDLL | None:
    """The compiled step.c (compiled now if this machine's cache lacks it), or None: disabled (TT_NATIVE=0) or no
    compiler (`why_not()` says why)."""
    if not enabled():
        return None
    return _library(os.environ.get("CC", "cc"), tuple(FLAGS + _isa_flags()))


def why_not() -> str | None:
    """Why `library()` is None, or None when it is not."""
    if not enabled():
        return "TT_NATIVE=0"
    return _WHY_NOT[-1] if library() is None and _WHY_NOT else None


class _Product(ctypes.Structure):
    _fields_ = [
        ("wt", ctypes.c_void_p),
        ("scale", ctypes.c_void_p),
        ("bias", ctypes.c_void_p),
        ("ld", ctypes.c_int64),
        ("in_", ctypes.c_int32),
        ("out", ctypes.c_int32),
        ("factor", ctypes.c_float),
        ("int8", ctypes.c_int32),
        ("colsum", ctypes.c_void_p),
        ("in4", ctypes.c_int32),
        ("blocked", ctypes.c_int32),
    ]


class _Layer(ctypes.Structure):
    _fields_ = [
        *((name, _Product) for name in ("qkv", "self_out", "cross_q", "cross_out", "w_1", "w_2")),
        ("norm_w", ctypes.c_void_p * 3),
        ("norm_b", ctypes.c_void_p * 3),
        ("self_k", ctypes.c_void_p),
        ("self_v", ctypes.c_void_p),
        ("cross_k", ctypes.c_void_p),
        ("cross_v", ctypes.c_void_p),
    ]


class _Step(ctypes.Structure):
    _fields_ = [
        *(
            (name, ctypes.c_int32)
            for name in ("d", "h", "d_k", "d_ff", "n_layers", "vocab", "pre", "capacity", "src_len")
        ),
        ("eps", ctypes.c_float),
        ("emb_scale", ctypes.c_float),
        ("table", ctypes.c_void_p),
        ("positions", ctypes.c_void_p),
        ("final_w", ctypes.c_void_p),
        ("final_b", ctypes.c_void_p),
        ("generator", _Product),
        ("layers", ctypes.POINTER(_Layer)),
        ("scratch", ctypes.c_void_p),
    ]


class Weights:
    """The tensors step.c reads for one model, as ctypes structures: each product's Wᵀ (in × out, fp32 tile by tile, or
    int8 with its scales per output), made once per FusedStep; `bind` adds one sentence's caches."""

    def __init__(self, products: dict[str, list], generator, norms: list, final: tuple | None, tables: tuple) -> None:
        self.lib = library()  # runs the step; packs the int8 weights
        self.keep: list = []  # every tensor (or Rows) a pointer below points into
        self.layers = []
        for i in range(len(norms)):
            layer = _Layer(**{name: self._product(specs[i]) for name, specs in products.items()})
            for j, (weight, bias) in enumerate(norms[i]):
                layer.norm_w[j], layer.norm_b[j] = self._keep(weight), self._keep(bias)
            self.layers.append(layer)
        self.generator = self._product(generator)
        self.final = (None, None) if final is None else (self._keep(final[0]), self._keep(final[1]))
        self.table, self.positions = self._keep(tables[0]), self._keep(tables[1])  # (vocab, d), (max_len, d)

    def _keep(self, t: torch.Tensor | None) -> int | None:
        if t is None:
            return None
        t = t.detach().float().contiguous()
        self.keep.append(t)
        return t.data_ptr()

    def _product(self, spec: tuple) -> _Product:
        """spec: ("fp32", Wᵀ (in, out), bias); ("int8", W's int8 values (out, in), scales (out,), bias): the int8
        values times fp32 inputs; ("int8-rows", the same): times the inputs quantized as fbgemm quantizes one row;
        ("rows", a `Rows`): that product, its packed weights shared."""
        if spec[0] == "rows":
            self.keep.append(spec[1])  # its tensors outlive the pointers
            return spec[1].product
        p = _Product()
        if spec[0] == "fp32":
            _, weight_t, bias = spec
            blocked = _tile_by_tile(weight_t.detach().float(), self.lib.tt_tile())
            self.keep.append(blocked)
            p.wt, p.scale, p.int8, p.blocked = blocked.data_ptr(), None, 0, 1
            p.ld, p.in_, p.out = weight_t.size(1), weight_t.size(0), weight_t.size(1)
        elif spec[0] == "int8":
            _, int_repr, scales, bias = spec
            weight_t = int_repr.t().contiguous()  # (in, out) int8
            self.keep.append(weight_t)
            p.wt, p.scale, p.int8 = weight_t.data_ptr(), self._keep(scales), 1
            p.ld, p.in_, p.out = weight_t.size(1), weight_t.size(0), weight_t.size(1)
        else:
            _, int_repr, scales, bias = spec
            out, n_in = int_repr.shape
            in4 = -(-n_in // 4) * 4
            int_repr = int_repr.contiguous()
            fours = torch.empty(in4 // 4, out, 4, dtype=torch.int8)
            colsum = torch.empty(out, dtype=torch.int32)  # Σ_i W[j][i]
            self.lib.tt_pack_int8(int_repr.data_ptr(), out, n_in, in4, fours.data_ptr(), colsum.data_ptr())
            self.keep += [fours, colsum]
            p.wt, p.scale, p.int8, p.colsum, p.in4 = fours.data_ptr(), self._keep(scales), 2, colsum.data_ptr(), in4
            p.ld, p.in_, p.out = out, n_in, out
        p.bias, p.factor = self._keep(bias), 1.0
        return p


def _tile_by_tile(weight_t: torch.Tensor, tile: int) -> torch.Tensor:
    """Wᵀ (in, out) as step.c reads an fp32 product's weights (`Product.blocked`): the whole tiles of `tile` outputs one
    after another, each (in, tile) contiguous, then the last out % tile outputs (in, rest) — one stream of memory per
    tile where rows of Wᵀ gave a tile's weights in pieces `out` floats apart (2–2.8× slower to read)."""
    n_in, out = weight_t.shape
    whole = out // tile * tile
    tiles = weight_t[:, :whole].reshape(n_in, whole // tile, tile).permute(1, 0, 2).reshape(-1)
    return torch.cat([tiles, weight_t[:, whole:].reshape(-1)])


class Bound:
    """step.c's view of one sentence's decoding: a model's `Weights` and one state's caches (the self-attention's
    (h, capacity, d_k) buffers it writes into, the memory's keys and values), with its own scratch memory, so two
    sentences decode in two threads at once."""

    def __init__(self, weights: Weights, dims: dict, self_caches: list, cross_caches: list) -> None:
        lib = self.lib = weights.lib
        self.weights = weights  # the weights outlive every pointer to them
        self.self_k = [cache._k for cache in self_caches]  # what the binding holds; a step checks it still stands
        self.cross_k = [cache._k for cache in cross_caches]
        capacity, src_len = self_caches[0]._k.size(2), cross_caches[0]._k.size(2)
        self.capacity = capacity
        layers = (_Layer * len(weights.layers))()
        for i, (layer, own, cross) in enumerate(zip(weights.layers, self_caches, cross_caches)):
            layers[i] = layer  # a copy of the layer's products and norms
            layers[i].self_k, layers[i].self_v = own._k.data_ptr(), own._v.data_ptr()
            layers[i].cross_k, layers[i].cross_v = cross._k.data_ptr(), cross._v.data_ptr()
        floats = lib.tt_scratch_floats(dims["d"], dims["d_ff"], capacity, src_len)
        self.scratch = torch.empty(floats)
        step = _Step(**dims, capacity=capacity, src_len=src_len, n_layers=len(weights.layers))
        step.table, step.positions = weights.table, weights.positions
        step.final_w, step.final_b = weights.final
        step.generator, step.layers, step.scratch = weights.generator, layers, self.scratch.data_ptr()
        self.layers, self.step = layers, step
        self.pointer = ctypes.byref(step)

    @staticmethod
    def fits(self_caches: list, cross_caches: list, beams=None) -> bool:
        """Whether step.c can read these caches (one sentence, each buffer contiguous (h, T, d_k) fp32) and write
        `beams`' ancestry rows (BeamSlots: fp32, each row contiguous)."""
        ancestry = None if beams is None else beams.ancestry
        if ancestry is not None and not (
            ancestry.dtype == torch.float32 and ancestry.device.type == "cpu" and ancestry.stride(1) == 1
        ):
            return False
        return all(
            c._k.dim() == 4
            and c._k.size(0) == 1
            and c._k.is_contiguous()
            and c._v.is_contiguous()
            and c._k.dtype == torch.float32
            and c._k.device.type == "cpu"
            for c in (*self_caches, *cross_caches)
        )

    def stands(self, self_caches: list, cross_caches: list) -> bool:
        """The caches are still the ones bound (a cache that grew past its buffer, or was trimmed, has a new one)."""
        return all(c._k is k for c, k in zip(self_caches, self.self_k)) and all(
            c._k is k for c, k in zip(cross_caches, self.cross_k)
        )

    def __call__(self, tokens: torch.Tensor, offset: int, logits: torch.Tensor, beams=None) -> bool:
        """One step of `tokens` (rows, 1) int64 into `logits` (rows, vocab); `beams` (BeamSlots): the rows are a
        sentence's beams in its slots. False (nothing done) where the step is past the caches' buffer."""
        if beams is None:
            slots, ancestry, stride = 0, None, 0
        else:
            slots, ancestry, stride = beams.k, beams.ancestry.data_ptr(), beams.ancestry.stride(0)
        rows = tokens.size(0)
        return (
            self.lib.tt_step(self.pointer, tokens.data_ptr(), rows, offset, slots, ancestry, stride, logits.data_ptr())
            == 0
        )


def best(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
    """Greedy's choice in each row of x (N, V) fp32: (first index of the largest value (N,) int64, that value (N,)) —
    torch.max(x, -1)'s answer in reverse order, ~10× faster at 64 rows of 8,010 (bench/README.md); None where step.c
    cannot read x (no library, TT_NATIVE=0, not fp32 rows of contiguous values on the CPU)."""
    lib = library()
    if lib is None or x.dim() != 2 or x.dtype != torch.float32 or x.device.type != "cpu" or x.stride(1) != 1:
        return None
    rows = x.size(0)
    index, value = torch.empty(rows, dtype=torch.long), torch.empty(rows)
    lib.tt_best(x.data_ptr(), rows, x.size(1), x.stride(0), index.data_ptr(), value.data_ptr())
    return index, value


def attend_rows(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor | None:
    """softmax(q kᵀ + bias) v for one (already scaled) query per row: q (R, 1, d_k), k, v (R, T, d_k) with each row's
    positions contiguous (a cache's `flat_heads`), bias (R, 1, T) of 0 and -inf, or None -> (R, 1, d_k) — what
    core/model/step.py's `_attend` computes with two batched products, in one pass per row (a batch's greedy steps:
    bench/README.md); None where step.c cannot take it (no library, TT_NATIVE=0, not fp32 on the CPU, another layout,
    more than 1,024 positions)."""
    lib = library()
    if lib is None or q.dim() != 3 or q.size(1) != 1 or k.size(1) == 0:
        return None
    r, t, d_k = k.shape
    tensors = (q, k, v) if bias is None else (q, k, v, bias)
    if any(x.dtype != torch.float32 or x.device.type != "cpu" for x in tensors):
        return None
    if k.stride(2) != 1 or v.stride(2) != 1 or k.stride(1) != d_k or v.stride(1) != d_k or v.shape != k.shape:
        return None
    if bias is not None and (bias.shape != (r, 1, t) or bias.stride(2) != 1):
        return None
    q = q.contiguous()
    out = torch.empty(r, 1, d_k)
    at = None if bias is None else bias.data_ptr()
    ld = 0 if bias is None else bias.stride(0)
    done = lib.tt_attend_rows(
        q.data_ptr(), k.data_ptr(), v.data_ptr(), at, r, d_k, t, k.stride(0), v.stride(0), ld, out.data_ptr()
    )
    return out if done == 0 else None


def row_top(x: torch.Tensor, w: int) -> tuple[torch.Tensor, torch.Tensor] | None:
    """The w largest values of each row of x (N, V) fp32, best first, and their columns (among equal values the lower
    column first): torch.topk(x, w)'s answer for beam search's beams (~25 µs a row of 8,010 there, ~3 µs here); None
    where step.c cannot give it (no library, TT_NATIVE=0, not contiguous fp32 rows on the CPU, a NaN)."""
    lib = library()
    if lib is None or x.dim() != 2 or x.dtype != torch.float32 or x.device.type != "cpu" or x.stride(1) != 1:
        return None
    rows = x.size(0)
    values, index = torch.empty(rows, w), torch.empty(rows, w, dtype=torch.long)
    if lib.tt_row_top(x.data_ptr(), rows, x.size(1), x.stride(0), w, values.data_ptr(), index.data_ptr()) != 0:
        return None
    return values, index


class Rows:
    """One of step.c's products alone, for any number of rows: x (N, in) fp32 through `spec` (as `Weights` takes it)
    -> (N, out). A batch's int8 products ("int8-rows"), which torch gives to fbgemm (core/model/fast.py `int8_rows`):
    the rows are quantized as int8_rows quantizes them (one row over its own range; several each divided by its
    largest |value|, then one range), so the numbers are fbgemm's (within 1e-6); int8_rows's five torch operations
    around fbgemm's call are one pass here, and the quantization is vectorized (bench/README.md, *A batch's int8
    products in C*). More rows than MAX_ROWS only where `takes(rows)` (measured faster than fbgemm: AVX-512 VNNI).
    `own`: each row over its own range instead (tests)."""

    def __init__(self, spec: tuple) -> None:
        self.weights = Weights({}, spec, [], None, (torch.zeros(1, 1),) * 2)
        self.lib, self.product = self.weights.lib, self.weights.generator
        self.pointer = ctypes.byref(self.product)
        self.many = bool(self.lib.tt_many_rows())

    def takes(self, rows: int) -> bool:
        """Whether `rows` rows are this product's to compute (else fbgemm's)."""
        return rows <= MAX_ROWS or self.many

    def __call__(self, x: torch.Tensor, own: bool = False) -> torch.Tensor:
        x = x.float().contiguous()
        rows, p = x.size(0), self.product
        y = torch.empty(rows, p.out)
        scratch = torch.empty(self.lib.tt_product_floats(p.in_, p.in4, rows))
        self.lib.tt_product(self.pointer, x.data_ptr(), rows, y.data_ptr(), scratch.data_ptr(), own)
        return y


def product(spec: tuple, x: torch.Tensor, own: bool = False) -> torch.Tensor:
    """`Rows(spec)(x, own)`: what tests hold to torch's own products; None-free: raises where there is no library."""
    if library() is None:
        raise RuntimeError(f"no C step here: {why_not()}")
    return Rows(spec)(x, own)
