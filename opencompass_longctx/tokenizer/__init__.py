"""Counting, encoding and decoding tokens: the named tokenizers, their exact tiktoken equivalents, Qwen's HF directory."""
