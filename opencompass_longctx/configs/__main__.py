"""Print the directory of the installed configs, for OpenCompass's command-line form in any directory:

    opencompass --config-dir "$(python -m opencompass_longctx.configs)" \
        --datasets babilong_4k_gen longbio_8k_gen --models longctx_tiny_chat --summarizer longctx
"""
import os

print(os.path.dirname(os.path.abspath(__file__)))
