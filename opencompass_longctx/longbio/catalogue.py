# LongBioBench cell catalogue. Pure data (no imports, no calls): the package imports it and configs can
# `read_base()` it, so the 15 cells, their categories and the tokens each cell needs are defined once.
#
# A cell is a task with a needle count n (needles per question). Default shots are the authors' scripts
# (2-shot everywhere except multihop and idk, which ran 0-shot). Decoding limit: 50 * n new tokens.
LONGBIO_CELLS = [
    dict(cell='standard', task='standard', n=1, category='understanding'),
    dict(cell='multi_standard_2', task='multi_standard', n=2, category='understanding'),
    dict(cell='multi_standard_5', task='multi_standard', n=5, category='understanding'),
    dict(cell='multi_standard_10', task='multi_standard', n=10, category='understanding'),
    dict(cell='paraphrase', task='paraphrase', n=1, category='understanding'),
    dict(cell='pronoun', task='pronoun', n=1, category='understanding'),
    dict(cell='calculation', task='calculation', n=2, category='reasoning'),
    dict(cell='rank_2', task='rank', n=2, category='reasoning'),
    dict(cell='rank_5', task='rank', n=5, category='reasoning'),
    dict(cell='multihop_2', task='multihop', n=2, category='reasoning'),
    dict(cell='multihop_5', task='multihop', n=5, category='reasoning'),
    dict(cell='twodiff', task='twodiff', n=2, category='reasoning'),
    dict(cell='citation_1', task='citation', n=1, category='trustworthiness'),
    dict(cell='citation_2', task='citation', n=2, category='trustworthiness'),
    dict(cell='idk', task='idk', n=1, category='trustworthiness'),
]
LONGBIO_CATEGORIES = ['understanding', 'reasoning', 'trustworthiness']
LONGBIO_MODES = ['compat', 'strict']
LONGBIO_DEFAULT_SHOTS = dict(standard=2, multi_standard=2, paraphrase=2, pronoun=2, calculation=2, rank=2,
                             multihop=0, twodiff=2, citation=2, idk=0)

# Which cells a tier holds is computed from the tier, never listed per tier. Every sample holds 3n needle bios
# (the test group and two demo groups, the authors' layout) plus the prompt; a tier holds a cell when that need
# fits the tier's budget (LongBioBench: 1k = 1024 tokens; 0k = the needles only, so every cell).
# LONGBIO_NEED_TOKENS: per cell, the most tokens that need takes over the authors' 800 samples (seed 2024, default
# shots, compat and strict modes), counted with LONGBIO_NEED_TOKENIZER, the LongBioBench default tokenizer.
# So 1k holds the n <= 2 cells, 2k also multihop_5, 4k all but multi_standard_10, 8k and up
# all 15. tests/test_longbio_configs.py::test_cell_needs_are_the_generators checks these numbers against the
# generator and prints the new table when a change of the tokenizer, pools, templates or prompts moves them.
# Tier configs keep the cells whose need fits (longbio.cells.tier_cells); summary groups average the cells a tier holds. With another data
# tokenizer, seed, more samples or reserve_tokens a borderline cell may not fit: its loader then raises a clear
# error naming the tokens it needs.
LONGBIO_NEED_TOKENIZER = 'tiktoken:qwen2'
LONGBIO_NEED_TOKENS = {
    'standard': 519, 'multi_standard_2': 914, 'multi_standard_5': 2148, 'multi_standard_10': 4143,
    'paraphrase': 527, 'pronoun': 447, 'calculation': 834, 'rank_2': 953, 'rank_5': 2129, 'multihop_2': 749,
    'multihop_5': 1773, 'twodiff': 883, 'citation_1': 525, 'citation_2': 895, 'idk': 519,
}
