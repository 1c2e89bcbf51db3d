"""Kernel IR of a run: the TTGIR of every variant it launched, an index of every variant it
compiled, ahead-of-time recompiles and normalized diffs.

```
<run>/ttgir/<case>/<kernel>/<variant>.ttgir   launched variants only
<run>/ttgir/index.tsv                           every compiled variant (sweep losers flagged)
<run>/ttgir/naming.md                           the legend of the abbreviations in file names
```
"""
