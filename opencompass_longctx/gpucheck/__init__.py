"""``longctx-gpu-check`` (``make gpu-check``): the leaderboard's LMDeploy path served for real on one GPU.

On a machine with one GPU and the GPU install (``make gpu-install``), in this order, each stage under a time limit:

1. ``python``: the Python version, before anything is imported (``make gpu-install`` installs on CPython 3.10-3.12:
   ``numpy<2`` has no cp313 wheel, ``pyarrow==20.0.0`` none for cp314; ``--python 3.12`` requires one version, as the
   carried cp312 wheelhouse does).
2. ``stack``: LMDeploy (0.18.0), torch and its CUDA build, one CUDA stack, a visible GPU with its free memory,
   whether TurboMind's library loads (and why not): both engines are checked where it does, else the PyTorch one;
   and the C compiler and ``Python.h`` the PyTorch engine's Triton kernels are built with (without them its stages
   fail at once, with the Debian packages to install).
3. ``model``: a Qwen2.5-7B-Instruct directory (real tokenizer and chat template, random bf16 weights at its
   geometry, written on the GPU), or ``--model-dir`` a downloaded one.
4. ``data``: BABILong stand-in files, generated LongBioBench (the example's ``reserve_tokens``), NoLiMa stand-in
   needles and books (all built offline by the package) at 0k/4k/32k and one 128k tier; every row measured as the
   inferencer measures it and checked against its band's engine and the window (:mod:`.sendable`).
5. ``opencompass-<engine>``: the real ``opencompass`` command through ``LongCtxPartitioner`` and
   ``LongCtxInferTask`` with the leaderboard's qwen2.5-7b-instruct row on that engine; then the plan against what
   LMDeploy logged (backend, session_len, max_batch_size, KV blocks, each prompt's token count) and the
   predictions (a prompt held back fails it); every failed task with the tail of its log (OpenCompass itself exits
   0 when a task fails).
6. ``bench-<engine>``: prefill tokens/s and MFU at 4k/32k/128k (what fits the GPU), each prompt its own pass with no
   token served by the prefix cache, and decode tokens/s at batch 1 and the short band's batch, timed from the
   streamed tokens; the constants as lines for ``tables/cost_model.py`` (:mod:`.throughput`).
7. ``prefix-<engine>``: on the same engine, a NoLiMa batch with the prefix cache: the measured hit rate beside the
   plan's predicted share and the time saved (:mod:`.prefix`).
8. ``tp-<engine>``: with more than one GPU visible, the bench at tp > 1 (else not run, and said).

The report (``--out``, default ``$OUT`` or ``outputs/gpu_check``): ``gpu_check.json``, ``gpu_check.md`` (rewritten
after every measurement) and ``gpu_check.jsonl`` (one line appended per record); it ends with one line, the verdict,
which says what works and what fails, with the first reason. Exit status: 0 everything worked, 1 a stage failed,
2 the Python or the stack is not fit to run the check (the verdict says what to do).
"""
