"""tt alone in a process, for bench_ct2.py: imports torch and tt, never ctranslate2 (checked before anything
is timed). Started with the OpenMP setting every tt command makes (bench_ct2.py passes it in the environment).

    python bench/tt_worker.py MODEL_DIR MODE THREADS
    # MODE: fp32, fp32 unpacked, fp32-packed, int8, int8-fbgemm, bf16

`fp32` is the model as `tt translate` loads it: packed for oneDNN where that pays (core/model/fast.py
`packing_pays`: not on an Intel CPU), plain elsewhere; `fp32 unpacked` always plain, `fp32-packed` always
packed (the two side by side in one run). `int8` is the int8 model as `tt translate --precision int8` runs it (on an
Intel CPU few rows of its small weights multiplied in fp32: core/model/fast.py `SMALL_ROWS`); `int8-fbgemm` every
product on fbgemm's int8 kernels whatever the CPU (the two side by side). A mode ending in `-torch-step`
(`fp32-torch-step`, `int8-torch-step`) is that mode with one sentence's decoder steps issued op by op through torch
(TT_NATIVE=0) instead of core/model/native's C step: the two side by side in one run.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from engine_proc import refuse_if_loaded, serve  # noqa: E402

TORCH_STEP = "-torch-step"


def main() -> None:
    model_dir, mode, threads = sys.argv[1:4]
    if mode.endswith(TORCH_STEP):
        os.environ["TT_NATIVE"] = "0"  # read by core/model/step.py as each search starts
        mode = mode.removesuffix(TORCH_STEP)
    import torch

    from core.checkpoint import load_model
    from core.decode import beam, search
    from core.model import fast
    from core.model.fast import fast_model, packed_model

    torch.set_num_threads(int(threads))
    loaded = load_model(Path(model_dir), packed=mode == "fp32")  # "fp32": as `tt translate` loads it
    if mode in ("fp32", "fp32 unpacked"):
        model = loaded.model
    elif mode == "fp32-packed":
        model = packed_model(loaded.model, inplace=True)
    elif mode == "int8-fbgemm":
        fast.SMALL_IN_FP32 = False  # read as the int8 layers and their fused step are built
        model = fast_model(loaded.model, "int8")
    else:
        model = fast_model(loaded.model, mode)

    def run(method: str, batch: list[list[int]], limit: int) -> list[list[int]]:
        src = search.pad_batch(batch, model.cfg.pad_id)  # (B, S)
        if method == "greedy":
            return [h.tokens for h in search.greedy(model, src)]
        return [hyps[0].tokens for hyps in beam.beam_search(model, src, beam_size=4, alpha=0.6)]

    refuse_if_loaded("tt_worker", "ctranslate2")
    from core.model import native

    # what torch decodes on, as set above; one sentence's step: core/model/native's C step, or torch's op by op
    serve(run, torch.get_num_threads(), step="C" if native.library() is not None else "torch")


if __name__ == "__main__":
    main()
