"""LongBioBench (arXiv 2506.02921): fictional biographies as needle and haystack, 15 task cells in three
categories, generated on the fly at any tier. Importing this package is cheap (no OpenCompass import)."""
