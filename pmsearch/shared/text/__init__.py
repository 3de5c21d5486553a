"""One reader of text for every stage: words, stop words and stems, the calendar's names,
figures read to comparable keys, sentences, quotes and citation markers. Pure functions
and tables, no I/O; the answerer writes with the same reader the verifier judges with.
A module outside this package that keeps its own month table, stop-word list or
stemmer fails ``tests/shared/text/test_one_reader.py``."""
