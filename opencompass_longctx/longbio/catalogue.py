# LongBioBench cell catalogue. Pure data (no imports, no calls): the package imports it and configs can
# `read_base()` it, so the 15 cells, their categories and the cells each small tier can hold are defined once.
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

# Cells left out of small tiers. Every sample holds 3n needle bios (the test group and two demo groups, the
# authors' layout) plus the prompt: with the default tokenizer the needles alone take up to about 0.5k tokens
# for n = 1, 0.95k for n = 2, 2.1k for n = 5 and 4k for n = 10 (measured over 800 samples per cell in both
# modes), and a sample must be filled to within 1% of the tier with whole bios of about 100 tokens. As in the
# authors' scripts, 1k and 2k hold the n <= 2 cells only, and multi_standard_10 starts at 8k. The loader
# itself raises a clear error naming the smallest tier that fits when the needles do not fit.
# Tier configs leave these cells out, and the summary groups of these tiers average the cells that remain.
LONGBIO_TOO_SMALL = {
    '1k': ['multi_standard_5', 'multi_standard_10', 'rank_5', 'multihop_5'],
    '2k': ['multi_standard_5', 'multi_standard_10', 'rank_5', 'multihop_5'],
    '4k': ['multi_standard_10'],
}
